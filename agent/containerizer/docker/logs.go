package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The Engine multiplexes a non-TTY container's stdout and stderr into one
// stream of frames: an 8-byte header (stream 1 or 2, three zero bytes, a
// big-endian uint32 payload size) followed by the payload.
const (
	streamStdout  = 1
	streamStderr  = 2
	maxFrameBytes = 16 << 20 // the engine splits log lines at 16 KiB
)

// frameReader reads frames from a multiplexed stream.
type frameReader struct {
	r   io.Reader
	hdr [8]byte
	buf []byte
}

// next returns the next frame; its payload is valid until the next call.
// io.EOF means the stream ended cleanly between frames.
func (f *frameReader) next() (stream byte, payload []byte, err error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return 0, nil, fmt.Errorf("log stream: truncated frame header")
		}
		return 0, nil, err
	}
	stream = f.hdr[0]
	if stream > streamStderr {
		return 0, nil, fmt.Errorf("log stream: unknown stream %d in frame header", stream)
	}
	n := binary.BigEndian.Uint32(f.hdr[4:])
	if n > maxFrameBytes {
		return 0, nil, fmt.Errorf("log stream: frame of %d bytes exceeds %d", n, maxFrameBytes)
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n)
	}
	f.buf = f.buf[:n]
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		return 0, nil, fmt.Errorf("log stream: truncated frame: %w", err)
	}
	return stream, f.buf, nil
}

// splitTimestamp separates the timestamp the engine puts before each log
// entry (timestamps=1) from the entry.
func splitTimestamp(p []byte) (time.Time, []byte, error) {
	i := bytes.IndexByte(p, ' ')
	if i < 0 {
		return time.Time{}, nil, fmt.Errorf("log stream: entry without a timestamp")
	}
	t, err := time.Parse(time.RFC3339Nano, string(p[:i]))
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("log stream: bad timestamp %q", p[:i])
	}
	return t, p[i+1:], nil
}

// logSink appends a container's output to the sandbox's stdout and stderr
// files and remembers the timestamp of the last entry written (the
// cursor), checkpointing it at most once per cursorEvery so a restarted
// agent resumes following where this one stopped.
type logSink struct {
	stdout, stderr *os.File
	cursorPath     string // "" disables the checkpoint
	last           time.Time
	savedAt        time.Time // clock time of the last checkpoint
	now            func() time.Time
}

const cursorEvery = time.Second

func openSink(sandbox, cursorPath string, now func() time.Time) (*logSink, error) {
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(sandbox, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	out, err := open("stdout")
	if err != nil {
		return nil, err
	}
	errf, err := open("stderr")
	if err != nil {
		out.Close()
		return nil, err
	}
	s := &logSink{stdout: out, stderr: errf, cursorPath: cursorPath, now: now}
	s.last = readCursor(cursorPath)
	return s, nil
}

func (s *logSink) close() {
	s.saveCursor()
	s.stdout.Close()
	s.stderr.Close()
}

// copyFrom writes the entries of one log stream, skipping those not newer
// than skip (the cursor when the stream was opened: they were written
// already, and the engine's since is inclusive); it returns nil when the
// stream ends cleanly.
func (s *logSink) copyFrom(r io.Reader, skip time.Time) error {
	fr := &frameReader{r: r}
	for {
		stream, p, err := fr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		ts, entry, err := splitTimestamp(p)
		if err != nil {
			return err
		}
		if !skip.IsZero() && !ts.After(skip) {
			continue
		}
		w := s.stdout
		if stream == streamStderr {
			w = s.stderr
		}
		if _, err := w.Write(entry); err != nil {
			return fmt.Errorf("writing the container's output: %w", err)
		}
		s.last = ts
		if now := s.now(); now.Sub(s.savedAt) >= cursorEvery {
			s.savedAt = now
			s.saveCursor()
		}
	}
}

func readCursor(path string) time.Time {
	if path == "" {
		return time.Time{}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	return t
}

// saveCursor replaces the cursor file (temp file and rename; no fsync: a
// lost cursor only means some output is written twice after a crash).
func (s *logSink) saveCursor() {
	if s.cursorPath == "" || s.last.IsZero() {
		return
	}
	dir := filepath.Dir(s.cursorPath)
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	tmp := s.cursorPath + ".tmp"
	if os.WriteFile(tmp, []byte(s.last.Format(time.RFC3339Nano)+"\n"), 0o644) == nil {
		_ = os.Rename(tmp, s.cursorPath)
	}
}

// follow copies the container's output into the sandbox until the
// container has stopped (the engine then ends the stream) or ctx is done.
// A broken stream is re-opened from the cursor after a pause.
func (d *Docker) follow(ctx context.Context, c *ctr) {
	defer close(c.logsDone)
	sink, err := openSink(c.sandbox, d.cursorPath(c.id), d.clock.Now)
	if err != nil {
		d.log.Warn("cannot follow container output", "container", c.id, "err", err)
		return
	}
	defer sink.close()
	for attempt := 0; ; attempt++ {
		from := sink.last
		rc, err := d.client.logs(ctx, c.dockerID, from)
		if err == nil {
			err = sink.copyFrom(rc, from)
			rc.Close()
			if err == nil {
				return
			}
		}
		if ctx.Err() != nil || isStatus(err, 404) {
			return
		}
		var ae *apiError
		if errors.As(err, &ae) || attempt >= 20 {
			d.log.Warn("stopped following container output", "container", c.id, "err", err)
			return
		}
		d.log.Info("re-opening container output", "container", c.id, "err", err)
		if !d.pause(ctx, backoff(attempt)) {
			return
		}
	}
}

func backoff(attempt int) time.Duration {
	return min(100*time.Millisecond<<min(attempt, 6), 5*time.Second)
}
