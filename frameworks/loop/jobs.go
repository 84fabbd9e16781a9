package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"mezzo/scheduler"
)

// CheckJobs checks what every shipped framework's jobs share: at least
// one, valid and unique names, no negative submit time. name and submit
// read job i's; check, if set, checks the rest of job i. Errors name the
// field ("jobs[3].name").
func CheckJobs(n int, name func(int) string, submit func(int) Duration, check func(int) error) error {
	if n == 0 {
		return errors.New("no jobs given")
	}
	seen := map[string]bool{}
	for i := range n {
		if err := CheckName(fmt.Sprintf("jobs[%d].name", i), name(i), seen); err != nil {
			return err
		}
		if submit(i) < 0 {
			return fmt.Errorf("jobs[%d].submit must not be negative", i)
		}
		if check != nil {
			if err := check(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// Arrivals hands out a framework's jobs at their submit times, counted
// from its first subscription. Loop-owned.
type Arrivals[J any] struct {
	start   time.Time
	waiting []J // not yet due, by submit time
	submit  func(J) Duration
}

// NewArrivals queues jobs (in submit order, ties in the given order).
func NewArrivals[J any](jobs []J, submit func(J) Duration) *Arrivals[J] {
	w := slices.Clone(jobs)
	slices.SortStableFunc(w, func(a, b J) int { return int(submit(a) - submit(b)) })
	return &Arrivals[J]{waiting: w, submit: submit}
}

// Start fixes the time submit times count from; later calls do nothing.
func (a *Arrivals[J]) Start(now time.Time) {
	if a.start.IsZero() {
		a.start = now
	}
}

// Started is the time submit times count from (zero before Start).
func (a *Arrivals[J]) Started() time.Time { return a.start }

// Due returns the jobs whose time has come, in order, and forgets them.
func (a *Arrivals[J]) Due(now time.Time) []J {
	n := 0
	for n < len(a.waiting) && !a.start.IsZero() && !now.Before(a.start.Add(time.Duration(a.submit(a.waiting[n])))) {
		n++
	}
	due := a.waiting[:n:n]
	a.waiting = a.waiting[n:]
	return due
}

// Next is when the next job is due (zero: none left, or not started).
func (a *Arrivals[J]) Next() time.Time {
	if len(a.waiting) == 0 || a.start.IsZero() {
		return time.Time{}
	}
	return a.start.Add(time.Duration(a.submit(a.waiting[0])))
}

// Waiting counts the jobs not yet due.
func (a *Arrivals[J]) Waiting() int { return len(a.waiting) }

// Interest keeps a framework's offers suppressed while it wants none and
// revived when it wants some, calling the master only on a change.
// Loop-owned; the zero value is an unsuppressed framework.
type Interest struct{ suppressed bool }

// Reset records that a new subscription starts unsuppressed.
func (i *Interest) Reset() { i.suppressed = false }

// Want makes the framework's offer interest match want.
func (i *Interest) Want(ctx context.Context, c *scheduler.Client, want bool, logf func(string, ...any)) {
	switch {
	case want && i.suppressed:
		if err := c.Revive(ctx); err != nil {
			logf("revive: %v", err)
			return
		}
		i.suppressed = false
	case !want && !i.suppressed:
		if err := c.Suppress(ctx); err != nil {
			logf("suppress: %v", err)
			return
		}
		i.suppressed = true
	}
}
