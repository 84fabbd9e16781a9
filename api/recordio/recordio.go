// Package recordio implements Mesos's RecordIO framing: each record is its
// length in decimal ASCII, a newline, then exactly that many bytes.
//
//	record = <decimal byte length> "\n" <bytes>
//
// It is used for every streaming response of the v1 APIs (scheduler,
// executor and operator SUBSCRIBE) and for mezzo's agent protocol. Records are
// never empty and carry no trailing newline. A Writer flushes each record it
// Writes, or a batch of Appended records at once.
package recordio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// DefaultMaxRecord bounds the size of one record a Reader accepts. mesos-go
// caps its records at 4 MiB; we accept more because a master's GET_STATE can
// be large, but stay bounded so a peer cannot make us allocate without limit.
const DefaultMaxRecord = 64 << 20

// ErrRecordTooLarge is returned by Reader.Next for a record over the limit.
var ErrRecordTooLarge = errors.New("recordio: record exceeds size limit")

// Writer frames records onto an underlying writer. It is safe for concurrent
// use: records from different goroutines never interleave.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
	f  http.Flusher
}

// NewWriter returns a Writer. If w is an http.Flusher (an http.ResponseWriter),
// every record is flushed as soon as it is written.
func NewWriter(w io.Writer) *Writer {
	f, _ := w.(http.Flusher)
	return &Writer{w: w, f: f}
}

// Write frames and writes one record, and flushes it. An empty record is
// an error: the format cannot distinguish it from a keep-alive and
// mesos-go skips it.
func (w *Writer) Write(record []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.appendLocked(record); err != nil {
		return err
	}
	w.flushLocked()
	return nil
}

// Append frames and writes one record without flushing it: records
// appended together and then flushed travel in one write (one HTTP/2 DATA
// frame or HTTP/1.1 chunk) instead of one each.
func (w *Writer) Append(record []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appendLocked(record)
}

// Flush sends what was written, if the underlying writer can flush.
func (w *Writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

func (w *Writer) appendLocked(record []byte) error {
	if len(record) == 0 {
		return errors.New("recordio: empty record")
	}
	var head [20]byte
	if _, err := w.w.Write(strconv.AppendInt(head[:0], int64(len(record)), 10)); err != nil {
		return err
	}
	if _, err := w.w.Write(newline); err != nil {
		return err
	}
	_, err := w.w.Write(record)
	return err
}

var newline = []byte{'\n'}

func (w *Writer) flushLocked() {
	if w.f != nil {
		w.f.Flush()
	}
}

// Reader reads records framed by a Writer (or by Mesos).
type Reader struct {
	r   *bufio.Reader
	max int
}

// NewReader returns a Reader accepting records of at most max bytes
// (DefaultMaxRecord if max <= 0).
func NewReader(r io.Reader, max int) *Reader {
	return NewReaderSize(r, 64<<10, max)
}

// NewReaderSize is NewReader with a bufSize-byte read buffer (bufio's
// minimum of 16 applies). Processes holding tens of thousands of streams
// (the agent emulator) use a few hundred bytes: the 64 KiB default would
// cost gigabytes.
func NewReaderSize(r io.Reader, bufSize, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxRecord
	}
	if bufSize <= 0 {
		bufSize = 64 << 10
	}
	return &Reader{r: bufio.NewReaderSize(r, bufSize), max: max}
}

// Next returns the next record. It returns io.EOF at a clean end of stream
// and io.ErrUnexpectedEOF if the stream ends inside a record. Zero-length
// records are skipped, as mesos-go does.
func (r *Reader) Next() ([]byte, error) {
	for {
		n, err := r.readLength()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		if n > r.max {
			return nil, fmt.Errorf("%w: %d > %d bytes", ErrRecordTooLarge, n, r.max)
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r.r, buf); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return buf, nil
	}
}

func (r *Reader) readLength() (int, error) {
	n, digits := 0, 0
	for {
		c, err := r.r.ReadByte()
		if err != nil {
			if err == io.EOF && digits > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		switch {
		case c == '\n':
			if digits == 0 {
				return 0, errors.New("recordio: empty length header")
			}
			return n, nil
		case c >= '0' && c <= '9':
			digits++
			if digits > 10 {
				return 0, errors.New("recordio: length header too long")
			}
			n = n*10 + int(c-'0')
		default:
			return 0, fmt.Errorf("recordio: invalid byte %q in length header", c)
		}
	}
}
