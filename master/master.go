package master

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"mezzo/api/mesos"
	"mezzo/master/allocator"
)

// Master is a running master: its event loop, allocator and published
// snapshot. All methods are safe for concurrent use.
type Master struct {
	cfg   Config
	alloc allocator.Allocator
	mbox  *queue[event]
	snap  atomic.Pointer[Snapshot]
	s     *state // owned by the loop goroutine once Start is called
	// stale says the state changed since snap was built; wantSnap asks the
	// loop for a build and published is closed (and replaced) after each
	// (publish.go).
	stale     atomic.Bool
	wantSnap  chan struct{}
	published atomic.Pointer[chan struct{}]

	stop chan struct{}
	done chan struct{}
	// regFailed is signalled when a registrar write fails for a reason
	// other than the operation (leader.go steps down and recovers).
	regFailed  chan struct{}
	followDone chan struct{}
	// leaderChanged is closed (and replaced) whenever a published
	// snapshot changes Elected or Leader (AwaitLeader).
	leaderChanged atomic.Pointer[chan struct{}]
	// pub throttles snapshot publication (publish.go); loop-owned.
	pub       publisher
	startOnce sync.Once
	stopOnce  sync.Once
	started   atomic.Bool
	// pendingCalls counts call events (HTTP requests waiting for the
	// loop) in mbox, for EventQueueMetrics.
	pendingCalls atomic.Int64
}

// New validates cfg, builds the allocator if none is given, and returns a
// master that is not yet running (Start it).
func New(cfg Config) (*Master, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Master{
		cfg:        cfg,
		mbox:       newQueue[event](0),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		regFailed:  make(chan struct{}, 1),
		followDone: make(chan struct{}),
		wantSnap:   make(chan struct{}, 1),
	}
	if cfg.Election != nil {
		cfg.Registrar = &failureWatch{Registrar: cfg.Registrar, failed: m.regFailed}
	}
	m.alloc = cfg.Allocator
	if m.alloc == nil {
		opts := allocator.Options{
			Offer:          m.AllocatorOffer,
			Rescind:        m.AllocatorRescind,
			InverseOffer:   m.AllocatorInverseOffer,
			Interval:       cfg.AllocationInterval,
			Clock:          cfg.Clock,
			MinAllocatable: cfg.MinAllocatable,
			Weights:        cfg.Weights,
			// Lent reservations (oversubscription for reservations).
			OfferIdleReservations: cfg.LendIdleReservations,
		}
		if cfg.Revocation {
			opts.Revoke = m.AllocatorRevoke
		}
		a, err := allocator.New(cfg.AllocatorName, opts)
		if err != nil {
			return nil, fmt.Errorf("master: building allocator: %w", err)
		}
		m.alloc = a
	} else if len(cfg.Weights) > 0 {
		m.alloc.UpdateWeights(cfg.Weights)
	}
	now := cfg.Clock.Now()
	m.s = newState(cfg, m.alloc, nil, now)
	m.s.post = m.postFor(m.s)
	if cfg.Election != nil {
		m.s.leading = false
		m.s.leader = nil
	}
	m.snap.Store(m.s.snapshot(now))
	m.s.dirty = false
	m.leaderChanged.Store(newSignal())
	m.published.Store(newSignal())
	return m, nil
}

// Start runs the allocator and the event loop.
func (m *Master) Start() {
	m.startOnce.Do(func() {
		m.started.Store(true)
		m.alloc.Start()
		go m.run()
		if m.cfg.Election != nil {
			go m.follow()
		} else {
			close(m.followDone)
		}
	})
}

// Stop ends the event loop, closes every subscriber stream and stops the
// allocator. Calls made afterwards fail with ErrStopped.
func (m *Master) Stop() {
	m.stopOnce.Do(func() {
		if !m.started.Load() {
			m.mbox.close()
			close(m.done)
			return
		}
		close(m.stop)
		<-m.followDone
		<-m.done
		m.alloc.Stop()
	})
}

// Config returns the validated configuration (defaults filled in).
func (m *Master) Config() Config { return m.cfg }

// Info returns this master's MasterInfo.
func (m *Master) Info() *mesos.MasterInfo { return m.LastPublished().Info }

// Snapshot returns a view of the state that includes every change made
// before the call, building one on the loop if the last published view is
// stale (publish.go). It waits for the loop, so code on the loop must not
// call it.
func (m *Master) Snapshot() *Snapshot {
	if m.stale.Load() {
		m.want()
	}
	return m.snap.Load()
}

// LastPublished returns the last snapshot built without asking for a new
// one: it never blocks. Its leadership fields (Elected, Leader) are always
// current, since a change of leadership is published at once; the rest
// may be stale.
func (m *Master) LastPublished() *Snapshot { return m.snap.Load() }

// AwaitLeader returns the last published snapshot once this master leads or knows
// a leader, or when d has passed or ctx ends (whichever is first). The
// HTTP layer uses it to hold a request that arrives during an election
// instead of answering 503 at once.
func (m *Master) AwaitLeader(ctx context.Context, d time.Duration) *Snapshot {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		ch := *m.leaderChanged.Load()
		snap := m.LastPublished()
		if snap.Elected || snap.Leader != nil {
			return snap
		}
		select {
		case <-ch:
		case <-timer.C:
			return m.LastPublished()
		case <-ctx.Done():
			return m.LastPublished()
		case <-m.done:
			return m.LastPublished()
		}
	}
}

// run is the event loop: the only goroutine that touches m.s.
func (m *Master) run() {
	defer close(m.done)
	timer := m.cfg.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	defer m.pub.stop()
	for {
		select {
		case <-m.stop:
			m.s.shutdown()
			m.mbox.close()
			// Readers after Stop get the final state.
			m.publish(m.cfg.Clock.Now())
			// Answer callers still waiting: their events will never run.
			return
		case <-m.mbox.ready:
		case <-timer.C():
		case <-m.pub.timerC():
			m.pub.armed = false
		case <-m.wantSnap:
			m.pub.wanted = true
		}
		now := m.cfg.Clock.Now()
		events, _ := m.mbox.drain()
		for _, ev := range events {
			ev(m.s, now)
		}
		m.s.advance(now)
		// Mark the snapshot stale, publish if due (publish.go), reply.
		m.publishDue(now)
		if next := m.s.nextDeadline(); next.IsZero() {
			timer.Stop()
		} else {
			timer.Reset(max(next.Sub(now), 0))
		}
	}
}
