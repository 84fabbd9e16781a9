package cli

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"unicode/utf8"
)

// readChunk is how much one /files/read asks for; agents cap a read at 16
// pages (64 KiB on most machines) anyway.
const readChunk = 64 << 10

// remoteFile reads a file in an agent's sandbox through /files/read.
type remoteFile struct {
	c    *client
	addr string
	who  string
	path string
}

func (f *remoteFile) read(offset, length int64) (readResult, error) {
	q := url.Values{"path": {f.path}, "offset": {strconv.FormatInt(offset, 10)}}
	if length >= 0 {
		q.Set("length", strconv.FormatInt(length, 10))
	}
	var r readResult
	err := f.c.getAgentJSON(f.addr, f.who, "/files/read?"+q.Encode(), &r)
	return r, err
}

// size asks for the file's size (offset -1 answers it with no data).
func (f *remoteFile) size() (int64, error) {
	r, err := f.read(-1, -1)
	return r.Offset, err
}

// copy writes the file from offset to its current end and returns the
// offset after what it wrote.
func (f *remoteFile) copy(w io.Writer, offset int64) (int64, error) {
	for {
		r, err := f.read(offset, readChunk)
		if err != nil {
			return offset, err
		}
		if r.Data == "" {
			return offset, nil
		}
		text, n := consumed(r.Data)
		if _, err := io.WriteString(w, text); err != nil {
			return offset, err
		}
		offset += n
	}
}

// consumed maps a /files/read answer back to file bytes. The agent sends
// the bytes as a JSON string, so each byte that is not valid UTF-8 arrives
// as one U+FFFD. A multi-byte character cut by the end of a chunk arrives as
// up to three trailing U+FFFDs: those are left for the next read, which
// starts at them and gets the character whole (or the same invalid bytes
// again, now followed by more). Only when nothing else was read are they
// printed as they are, so reading always progresses. It returns the text to
// print and the number of file bytes it covers. (A file holding a real
// U+FFFD character, three bytes, is miscounted; agents offer no raw read.)
func consumed(data string) (string, int64) {
	var n int64
	// cut[k] is where the k-th last U+FFFD of the trailing run starts, so
	// dropping k of them keeps data[:cut[k]] (raw invalid bytes in data,
	// which a JSON decoder never leaves, count the same way).
	var cut [utf8.UTFMax]int
	trailing := 0
	for i, r := range data {
		if r == utf8.RuneError {
			n++
			copy(cut[2:], cut[1:utf8.UTFMax-1])
			cut[1] = i
			trailing++
			continue
		}
		n += int64(utf8.RuneLen(r))
		trailing = 0
	}
	drop := min(trailing, utf8.UTFMax-1)
	if drop > 0 && int64(drop) < n {
		return data[:cut[drop]], n - int64(drop)
	}
	return data, n
}

// tailStart finds the offset where the last `lines` lines of a file of
// the given size begin, reading backwards a chunk at a time.
func (f *remoteFile) tailStart(size int64, lines int) (int64, error) {
	need := lines
	end := size
	first := true
	for end > 0 {
		start := max(0, end-readChunk)
		b, err := f.readRange(start, end)
		if err != nil {
			return 0, err
		}
		if first && len(b) > 0 && b[len(b)-1] == '\n' {
			need++ // the final newline ends the last line, it does not start one
		}
		first = false
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] == '\n' {
				if need--; need == 0 {
					return start + int64(i) + 1, nil
				}
			}
		}
		if len(b) == 0 {
			return 0, fmt.Errorf("agent %s: %s: empty read at offset %d of %d bytes", f.who, f.path, start, size)
		}
		end = start
	}
	return 0, nil
}

// readRange reads [start, end) as file bytes (see fileBytes), in as many
// reads as the agent's cap on one read needs.
func (f *remoteFile) readRange(start, end int64) ([]byte, error) {
	var out []byte
	for off := start; off < end; {
		r, err := f.read(off, end-off)
		if err != nil {
			return nil, err
		}
		b := fileBytes(r.Data)
		if len(b) == 0 {
			break // the file shrank
		}
		out = append(out, b...)
		off += int64(len(b))
	}
	return out, nil
}

// fileBytes approximates the file bytes behind a /files/read string: each
// U+FFFD stands for one byte (see consumed), so offsets computed on the
// result are file offsets.
func fileBytes(data string) []byte {
	out := make([]byte, 0, len(data))
	for _, r := range data {
		if r == utf8.RuneError {
			out = append(out, 0xFF)
			continue
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}
