package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	runfw "mezzo/frameworks/run"
)

// TaskOutput follows a task's stdout and stderr in its sandbox, for
// `mezzo run` and `mezzo local -- CMD`: the same path as `mezzo logs
// --follow` (master → agent → /files/read), polling both files.
type TaskOutput struct {
	Masters  []string
	HTTP     *http.Client // nil: a client with DefaultTimeout
	Stdout   io.Writer
	Stderr   io.Writer
	Interval time.Duration // between polls; 0: 250 ms
}

var _ runfw.Output = (*TaskOutput)(nil)

// locateAttempts bounds the search for a sandbox after the task ended (it
// may end before the agent's /state lists its executor's directory).
const locateAttempts = 20

// Follow implements runfw.Output.
func (o *TaskOutput) Follow(ctx context.Context, t runfw.LaunchedTask, ended <-chan struct{}) error {
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	interval := o.Interval
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	addrs, err := parseMasters(strings.Join(o.Masters, ","))
	if err != nil {
		return err
	}
	inv := &invocation{master: &client{masters: addrs, http: hc}}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	// wait paces the polls: it returns at the next tick, at once when the
	// task ends (then isEnded is set and the next pass is the last), and
	// false when ctx ends.
	isEnded := false
	endedCh := ended
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-endedCh:
			isEnded, endedCh = true, nil
			return true
		case <-tick.C:
			return true
		}
	}
	var sb *sandbox
	for attempts := 0; ; {
		if sb, err = locateSandbox(inv, t.TaskID, t.FrameworkID); err == nil {
			break
		}
		if isEnded {
			if attempts++; attempts >= locateAttempts {
				return err
			}
		}
		if !wait() {
			return ctx.Err()
		}
	}
	files := []struct {
		f   *remoteFile
		w   io.Writer
		off int64
	}{
		{&remoteFile{c: inv.master, addr: sb.addr, who: sb.who, path: sb.dir + "/stdout"}, o.Stdout, 0},
		{&remoteFile{c: inv.master, addr: sb.addr, who: sb.who, path: sb.dir + "/stderr"}, o.Stderr, 0},
	}
	for {
		last := isEnded
		var errs []error
		for i := range files {
			off, err := files[i].f.copy(files[i].w, files[i].off)
			files[i].off = off
			errs = append(errs, err)
		}
		if last {
			return errors.Join(errs...)
		}
		if !wait() {
			return ctx.Err()
		}
	}
}
