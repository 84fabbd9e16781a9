package master

import (
	"sync/atomic"
	"time"
)

// Snapshots are built on demand. Building a Snapshot is a pass over every
// framework, agent, task and role, so with thousands of tasks or agents
// one build costs milliseconds; rebuilding after every batch made the loop
// spend most of its time building views nobody read (~15 ms per status
// update at 1,000 live tasks, half of a new leader's loop while 10,000
// agents re-register). So the loop only marks the published snapshot stale
// at the end of an iteration that changed the state, and builds a new one
// when a reader asks for it (Snapshot), when leadership changed (Elected
// and Leader decide 307/503 answers and AwaitLeader, so they are always
// current in the published snapshot: LastPublished), or when the master
// stops. The stale mark is set before the iteration's replies are
// released, so a caller whose call returned and then reads Snapshot()
// always sees its change.
//
// Builds requested by readers are still throttled by their own cost: the
// loop builds at once only when the last build ended long enough ago
// (publishCostFactor times its duration while events are waiting,
// idleCostFactor times it when the loop has caught up), so a crowd of
// readers (web UIs polling /master/state) costs at most about
// 1/(1+publishCostFactor) of the loop's time whatever the state's size; a
// burst of readers shares one build.
//
// Durations here are real, monotonic time (time.Now), not the injected
// clock: they measure CPU work, which a fake clock cannot advance.
const (
	// publishCostFactor is how many build durations must pass after a
	// build before the next one (3: building takes at most ~25%).
	publishCostFactor = 3
	// idleCostFactor replaces publishCostFactor when no event is waiting:
	// building then delays no event. Not 0: the build still takes CPU from
	// the rest of the process.
	idleCostFactor = 1
	// maxPublishDelay bounds how long a reader can wait for a throttled
	// build, even when builds are very slow.
	maxPublishDelay = 250 * time.Millisecond
	// maxSnapshotWait bounds how long Snapshot waits for the loop to
	// build; past it (a wedged loop) the reader gets the last published
	// snapshot rather than hanging.
	maxSnapshotWait = 5 * time.Second
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
	// wanted says a reader asked for a fresh snapshot (Master.want).
	wanted bool
	builds atomic.Int64 // snapshots built for publication
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

// publishDue runs at the end of every loop iteration: if the state
// changed it marks the published snapshot stale, and publishes at once if
// the leadership fields changed or, throttled, if a reader asked for it.
// Then it releases the iteration's replies (afterBatch): after the stale
// mark, so their callers' next Snapshot() builds one showing their change.
func (m *Master) publishDue(now time.Time) {
	s, p := m.s, &m.pub
	if s.dirty {
		m.stale.Store(true)
		prev := m.snap.Load()
		leaderMoved := s.leading != prev.Elected || s.leader != prev.Leader
		if leaderMoved {
			m.publish(now)
		} else if p.wanted {
			if d := p.delay(time.Now(), !m.mbox.pending()); d > 0 {
				p.arm(d)
			} else {
				m.publish(now)
			}
		}
	}
	if !s.dirty {
		p.wanted = false
	}
	s.runAfterBatch()
}

// publish builds and stores the snapshot of the current state.
func (m *Master) publish(now time.Time) {
	p := &m.pub
	p.disarm()
	p.wanted = false
	prev := m.snap.Load()
	start := time.Now()
	snap := m.s.snapshot(now)
	end := time.Now()
	p.lastEnd, p.lastCost = end, end.Sub(start)
	p.builds.Add(1)
	m.snap.Store(snap)
	m.s.dirty = false
	m.stale.Store(false)
	close(*m.published.Swap(newSignal()))
	if snap.Elected != prev.Elected || snap.Leader != prev.Leader {
		close(*m.leaderChanged.Swap(newSignal()))
	}
}

// want asks the loop to publish a fresh snapshot and waits until it has,
// the loop has ended, or maxSnapshotWait passed.
func (m *Master) want() {
	timer := time.NewTimer(maxSnapshotWait)
	defer timer.Stop()
	for {
		// Load the signal before checking staleness: a publish in
		// between closes it, so the wait below cannot miss it.
		published := *m.published.Load()
		if !m.stale.Load() {
			return
		}
		select {
		case m.wantSnap <- struct{}{}:
		default: // a request is pending already
		}
		select {
		case <-published:
		case <-m.done:
			return
		case <-timer.C:
			return
		}
	}
}

func newSignal() *chan struct{} {
	ch := make(chan struct{})
	return &ch
}

// stopPublisher releases the deferred-publish timer when the loop ends.
func (p *publisher) stop() { p.disarm() }
