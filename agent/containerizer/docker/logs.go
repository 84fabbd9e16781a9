package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
)

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

// copyFrom writes the entries of one multiplexed log stream (a non-TTY
// container's stdout and stderr frames, demultiplexed by stdcopy),
// skipping those not newer than skip (the cursor when the stream was
// opened: they were written already, and the engine's since is
// inclusive); it returns nil when the stream ends cleanly.
func (s *logSink) copyFrom(r io.Reader, skip time.Time) error {
	_, err := stdcopy.StdCopy(&entryWriter{s, s.stdout, skip}, &entryWriter{s, s.stderr, skip}, r)
	return err
}

// entryWriter receives the log entries of one stream. stdcopy.StdCopy
// writes each frame's payload, one timestamped entry, in one Write.
type entryWriter struct {
	sink *logSink
	out  *os.File
	skip time.Time
}

func (w *entryWriter) Write(p []byte) (int, error) {
	ts, entry, err := splitTimestamp(p)
	if err != nil {
		return 0, err
	}
	if !w.skip.IsZero() && !ts.After(w.skip) {
		return len(p), nil
	}
	if _, err := w.out.Write(entry); err != nil {
		return 0, fmt.Errorf("writing the container's output: %w", err)
	}
	s := w.sink
	s.last = ts
	if now := s.now(); now.Sub(s.savedAt) >= cursorEvery {
		s.savedAt = now
		s.saveCursor()
	}
	return len(p), nil
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
// A stream that breaks, or ends while the container still runs (an engine
// restarted with live-restore, a truncated stream), is re-opened from the
// cursor after a pause.
func (d *Docker) follow(ctx context.Context, c *ctr) {
	defer close(c.logsDone)
	sink, err := openSink(c.sandbox, d.cursorPath(c.id), d.clock.Now)
	if err != nil {
		d.log.Warn("cannot follow container output", "container", c.id, "err", err)
		return
	}
	defer sink.close()
	endedRunning := 0 // clean ends in a row while the container ran
	for attempt := 0; ; attempt++ {
		from := sink.last
		rc, err := d.engine.logs(ctx, c.dockerID, from)
		if err == nil {
			err = sink.copyFrom(rc, from)
			rc.Close()
			if err == nil {
				info, ierr := d.engine.inspect(ctx, c.dockerID)
				if ierr != nil || !info.State.Running {
					return
				}
				// The engine may end the stream an instant before it
				// marks the container stopped: the first re-open is at
				// once (a stopped container's stream ends at once).
				if endedRunning++; endedRunning == 1 {
					continue
				}
				err = errors.New("the output stream ended while the container runs")
			} else {
				endedRunning = 0
			}
		}
		if ctx.Err() != nil || isNotFound(err) {
			return
		}
		if cerrdefs.IsInvalidArgument(err) || attempt >= 20 {
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
