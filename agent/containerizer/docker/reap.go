package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
)

// reap waits for the container to stop, for its output to be copied,
// then publishes the termination and schedules the container's removal.
func (d *Docker) reap(c *ctr) {
	code, err := d.waitStopped(c)
	if err != nil {
		if d.bg.Err() != nil {
			return // Close: the container is left for a later Recover
		}
		d.finish(c, containerizer.Termination{ExitCode: -1, Recovered: c.recovered,
			Message: fmt.Sprintf("Container %s: %v", c.name, err)})
		return
	}
	// The engine ends the log stream once the container stopped; bound the
	// wait in case the stream is stuck.
	t := d.clock.NewTimer(10 * time.Second)
	select {
	case <-c.logsDone:
	case <-t.C():
		d.log.Warn("container output still being copied after it stopped", "container", c.id)
	case <-d.bg.Done():
		t.Stop()
		return
	}
	t.Stop()
	term := containerizer.Termination{
		Status:    (code & 0xff) << 8,
		ExitCode:  code,
		Message:   fmt.Sprintf("Container exited with status %d", code),
		Recovered: c.recovered,
	}
	if info, err := d.engine.inspect(d.bg, c.dockerID); err == nil && info.State.OOMKilled {
		d.mu.Lock()
		if c.limitation == nil {
			c.limitation = &containerizer.Limitation{
				Reason:  mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY,
				Message: fmt.Sprintf("Memory limit exceeded: the container was killed by the OOM killer (limit %d bytes)", info.HostConfig.Memory),
			}
		}
		d.mu.Unlock()
	}
	d.finish(c, term)
	d.scheduleRemoval(c)
}

// waitStopped returns the exit code once the container is not running;
// a broken connection to the engine is retried.
func (d *Docker) waitStopped(c *ctr) (int, error) {
	for attempt := 0; ; attempt++ {
		code, err := d.engine.wait(d.bg, c.dockerID)
		if err == nil {
			return code, nil
		}
		if d.bg.Err() != nil {
			return 0, err
		}
		if isNotFound(err) {
			return 0, errors.New("the container disappeared (removed outside the agent)")
		}
		d.log.Warn("waiting for container", "container", c.id, "err", err)
		if !d.pause(d.bg, backoff(attempt)) {
			return 0, d.bg.Err()
		}
	}
}

// pause sleeps on the injected clock; false if ctx ended first.
func (d *Docker) pause(ctx context.Context, dur time.Duration) bool {
	t := d.clock.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

func (d *Docker) finish(c *ctr, term containerizer.Termination) {
	d.forgetCursor(c.id)
	d.mu.Lock()
	term.Destroyed = c.destroyed
	term.Limitation = c.limitation
	c.term = term
	delete(d.live, c.id)
	d.terminated.Add(c.id, c)
	d.mu.Unlock()
	d.log.Info("container terminated", "container", c.id, "exit_code", term.ExitCode, "destroyed", term.Destroyed)
	close(c.done)
}

// scheduleRemoval removes the stopped container after the remove delay.
func (d *Docker) scheduleRemoval(c *ctr) {
	if d.removeDelay < 0 {
		d.removeNow(c)
		return
	}
	d.goBG(func() {
		if d.pause(d.bg, d.removeDelay) {
			d.removeNow(c)
		}
	})
}

func (d *Docker) removeNow(c *ctr) {
	if err := d.engine.remove(d.bg, c.dockerID); err != nil && d.bg.Err() == nil {
		d.log.Warn("removing container", "container", c.id, "err", err)
	}
}
