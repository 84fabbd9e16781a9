package master

import (
	"sync/atomic"
	"time"
)

// Snapshot publication is throttled by its own cost. Building a Snapshot
// is a pass over every framework, agent, task and role, so with thousands
// of tasks or agents one build costs milliseconds; rebuilding after every
// batch made the loop spend most of its time building views nobody reads
// between two events (~15 ms per status update at 1,000 live tasks). The
// loop therefore publishes at once only when the last build ended long
// enough ago (publishCostFactor times its duration while events are
// waiting, idleCostFactor times it when the loop has caught up);
// otherwise it keeps applying events and publishes when that time comes,
// so under a steady stream of events building takes at most about
// 1/(1+publishCostFactor) of the loop's time whatever the state's size.
// Replies wait for the publish (afterPublish), so a caller still sees its
// change in Snapshot() once its call returns; a burst of calls shares one
// build. Changes to Elected or Leader are published at once (307/503
// answers and AwaitLeader depend on them). Cheap builds (a small state,
// tests with a fake clock) defer by microseconds at most.
//
// Durations here are real, monotonic time (time.Now), not the injected
// clock: they measure CPU work, which a fake clock cannot advance.
const (
	// publishCostFactor is how many build durations must pass after a
	// build before the next one (3: building takes at most ~25%).
	publishCostFactor = 3
	// idleCostFactor replaces publishCostFactor when no event is waiting:
	// building then delays no event, and callers waiting for the publish
	// are often the only source of the next events (agents re-registering
	// a bounded number at a time), so idling the loop would only slow
	// them down. Not 0: the build still takes CPU from the rest of the
	// process (agent, HTTP, executors in `mezzo bench launch`).
	idleCostFactor = 1
	// maxPublishDelay bounds how long a change (and the replies waiting
	// for it) can wait for its snapshot, even when builds are very slow.
	maxPublishDelay = 250 * time.Millisecond
)

// publisher is the loop's bookkeeping for throttled publication. Only the
// loop goroutine touches it, except builds (read by tests).
type publisher struct {
	lastEnd  time.Time     // real time the last build finished (zero: none yet)
	lastCost time.Duration // how long the last build took
	// costFloor, if set, is used in place of a shorter measured cost
	// (tests simulate an expensive build with it).
	costFloor time.Duration
	// maxDelay, if set, replaces maxPublishDelay (tests).
	maxDelay time.Duration
	timer    *time.Timer
	armed    bool
	builds   atomic.Int64 // snapshots built for publication
}

// delay is how long publication must still wait at real time t; idle
// says no event is waiting for the loop.
func (p *publisher) delay(t time.Time, idle bool) time.Duration {
	if p.lastEnd.IsZero() {
		return 0
	}
	cost := max(p.lastCost, p.costFloor)
	limit := maxPublishDelay
	if p.maxDelay > 0 {
		limit = p.maxDelay
	}
	factor := time.Duration(publishCostFactor)
	if idle {
		factor = idleCostFactor
	}
	wait := min(factor*cost, limit)
	return wait - t.Sub(p.lastEnd)
}

// timerC is the channel of the deferred-publish timer, nil (never ready)
// when no publish is pending.
func (p *publisher) timerC() <-chan time.Time {
	if !p.armed {
		return nil
	}
	return p.timer.C
}

// arm schedules a deferred publish in d, unless one is already scheduled
// (its time was computed from the same last build).
func (p *publisher) arm(d time.Duration) {
	if p.armed {
		return
	}
	p.armed = true
	if p.timer == nil {
		p.timer = time.NewTimer(d)
		return
	}
	p.timer.Reset(d)
}

func (p *publisher) disarm() {
	if p.armed {
		p.armed = false
		p.timer.Stop()
	}
}

// publishDue runs at the end of every loop iteration: it publishes the
// state if it changed and either the leadership fields changed (they
// decide 307/503 answers and AwaitLeader, so they never wait) or enough
// time has passed since the last build; else it arms the deferred publish.
// Replies (afterPublish) are released only when no change is unpublished.
func (m *Master) publishDue(now time.Time) {
	s, p := m.s, &m.pub
	if s.dirty {
		prev := m.snap.Load()
		leaderMoved := s.leading != prev.Elected || s.leader != prev.Leader
		if d := p.delay(time.Now(), !m.mbox.pending()); !leaderMoved && d > 0 {
			p.arm(d)
			return
		}
		m.publish(now)
	}
	s.runAfterPublish()
}

// publish builds and stores the snapshot of the current state.
func (m *Master) publish(now time.Time) {
	p := &m.pub
	p.disarm()
	prev := m.snap.Load()
	start := time.Now()
	snap := m.s.snapshot(now)
	end := time.Now()
	p.lastEnd, p.lastCost = end, end.Sub(start)
	p.builds.Add(1)
	m.snap.Store(snap)
	m.s.dirty = false
	if snap.Elected != prev.Elected || snap.Leader != prev.Leader {
		ch := make(chan struct{})
		close(*m.leaderChanged.Swap(&ch))
	}
}

// stopPublisher releases the deferred-publish timer when the loop ends.
func (p *publisher) stop() { p.disarm() }
