// Package clock lets the event loops of the master, allocator and agent take
// time as an injected dependency, so tests advance time explicitly instead of
// sleeping.
//
// Production code uses Real. Tests use a *Fake and call Advance; timers and
// tickers created from a Fake fire synchronously inside Advance, in deadline
// order, on channels the code under test selects on.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock is the subset of package time that the event loops use.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends the current time on C after d.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that sends the time on C every d.
	NewTicker(d time.Duration) Ticker
}

// Timer is a stoppable one-shot timer.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
	// Reset changes the timer to fire after d.
	Reset(d time.Duration)
}

// Ticker delivers ticks at intervals.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the wall clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer {
	return realTimer{time.NewTimer(d)}
}
func (realClock) NewTicker(d time.Duration) Ticker {
	return realTicker{time.NewTicker(d)}
}

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time   { return t.t.C }
func (t realTimer) Stop() bool            { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) { t.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

// Fake is a manually advanced clock. The zero value is not usable; call NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeTimer
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves time forward by d, firing every timer and ticker that falls
// due, in order. Channel sends never block: like time.Timer, a channel holds
// at most one pending value.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	for {
		sort.Slice(f.waiters, func(i, j int) bool { return f.waiters[i].when.Before(f.waiters[j].when) })
		if len(f.waiters) == 0 || f.waiters[0].when.After(end) {
			break
		}
		t := f.waiters[0]
		f.waiters = f.waiters[1:]
		f.now = t.when
		select {
		case t.c <- t.when:
		default:
		}
		if t.period > 0 {
			t.when = t.when.Add(t.period)
			f.waiters = append(f.waiters, t)
		}
	}
	f.now = end
	f.mu.Unlock()
}

// Pending reports how many timers and tickers are waiting; tests use it to
// know that the code under test has armed a timer before advancing.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// NewTimer implements Clock.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, c: make(chan time.Time, 1), when: f.now.Add(d)}
	f.waiters = append(f.waiters, t)
	return t
}

// NewTicker implements Clock.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker interval")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, c: make(chan time.Time, 1), when: f.now.Add(d), period: d}
	f.waiters = append(f.waiters, t)
	return fakeTicker{t}
}

type fakeTimer struct {
	f      *Fake
	c      chan time.Time
	when   time.Time
	period time.Duration
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.removeLocked()
}

func (t *fakeTimer) removeLocked() bool {
	for i, w := range t.f.waiters {
		if w == t {
			t.f.waiters = append(t.f.waiters[:i], t.f.waiters[i+1:]...)
			return true
		}
	}
	return false
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.removeLocked()
	t.when = t.f.now.Add(d)
	t.f.waiters = append(t.f.waiters, t)
}

type fakeTicker struct{ t *fakeTimer }

func (t fakeTicker) C() <-chan time.Time { return t.t.c }
func (t fakeTicker) Stop()               { t.t.Stop() }
