// Package loglevel lets an operator raise a running process's log
// verbosity for a while, as Mesos's GET_LOGGING_LEVEL / SET_LOGGING_LEVEL
// operator calls do for glog on the master and the agent.
//
// Mesos speaks in glog verbosity: 0 is the normal level, each step above
// shows more. mezzo logs with log/slog, so verbosity v maps to the slog
// level base-4v: 0 is the level the process started with (the --logging_level
// flag), 1 is one step more verbose (Info → Debug), and so on. A change
// lasts for the duration the caller gives and then reverts to the start-up
// level; a newer change replaces an older one and its revert.
package loglevel

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"mezzo/internal/clock"
)

// step is how far apart slog's named levels are (Debug -4, Info 0, Warn 4).
const step = 4

// MaxVerbosity bounds SET_LOGGING_LEVEL's level: beyond a few steps below
// Debug nothing logs more, and an absurd value is more likely a mistake.
const MaxVerbosity = 10

// Control owns a slog.LevelVar on behalf of the operator API. It is safe
// for concurrent use.
type Control struct {
	v     *slog.LevelVar
	base  slog.Level
	clock clock.Clock

	mu     sync.Mutex
	gen    uint64        // bumped by every Set; a revert only applies to its own
	cancel chan struct{} // closed when a later Set supersedes the pending revert
}

// New returns a Control over v, whose current level becomes the start-up
// level that every change reverts to. A nil clock means clock.Real.
func New(v *slog.LevelVar, c clock.Clock) *Control {
	if c == nil {
		c = clock.Real
	}
	return &Control{v: v, base: v.Level(), clock: c}
}

// Verbosity is the current level in glog verbosity (0 at the start-up level).
func (c *Control) Verbosity() uint32 {
	d := int(c.base) - int(c.v.Level())
	if d <= 0 {
		return 0
	}
	return uint32((d + step - 1) / step)
}

// Level is the current slog level.
func (c *Control) Level() slog.Level { return c.v.Level() }

// Set makes the process log at verbosity for d, then reverts to the start-up
// level. It refuses a verbosity above MaxVerbosity and a non-positive d
// (Mesos requires a duration; "for ever" is the --logging_level flag's job).
func (c *Control) Set(verbosity uint32, d time.Duration) error {
	if verbosity > MaxVerbosity {
		return errors.New("'level' must be at most 10")
	}
	if d <= 0 {
		return errors.New("'duration' must be positive")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	gen := c.gen
	if c.cancel != nil {
		close(c.cancel)
	}
	cancel := make(chan struct{})
	c.cancel = cancel
	c.v.Set(c.base - slog.Level(step*int(verbosity)))
	t := c.clock.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			c.revert(gen)
		case <-cancel:
			t.Stop()
		}
	}()
	return nil
}

// revert restores the start-up level unless a later Set superseded the
// change that armed it (the timer may fire while Set runs).
func (c *Control) revert(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.v.Set(c.base)
	c.cancel = nil
}
