package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// recordReader reads RecordIO ("<decimal length>\n<bytes>"), the framing
// of the master's event stream. It is api/recordio's reader with a small
// buffer: that one buffers 64 KiB per stream, 3 GiB for 50,000 agents,
// while an agent's events are a few hundred bytes and arrive seldom.
type recordReader struct {
	r   *bufio.Reader
	max int
}

// recordBuffer is the read buffer per stream.
const recordBuffer = 512

func newRecordReader(r io.Reader, max int) *recordReader {
	return &recordReader{r: bufio.NewReaderSize(r, recordBuffer), max: max}
}

// Next returns the next record: io.EOF at a clean end of stream,
// io.ErrUnexpectedEOF inside a record, an error for a malformed or
// oversized length. Zero-length records are skipped.
func (r *recordReader) Next() ([]byte, error) {
	for {
		n, err := r.length()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		if n > r.max {
			return nil, fmt.Errorf("record of %d bytes exceeds the limit of %d", n, r.max)
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

func (r *recordReader) length() (int, error) {
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
