package master

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/master/allocator"
	"mezzo/resources"
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
			Interval:       cfg.AllocationInterval,
			Clock:          cfg.Clock,
			MinAllocatable: cfg.MinAllocatable,
			Weights:        cfg.Weights,
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

// post schedules ev on the loop; it never blocks. Events posted after Stop
// are dropped.
func (m *Master) post(ev event) { m.mbox.push(ev) }

// postFor is the post function of state s: its events run only while s
// is the master's state. Work a deposed state left behind (registrar
// completions, stream closes) belongs to a leadership that ended and is
// dropped.
func (m *Master) postFor(s *state) func(event) {
	return func(ev event) {
		m.mbox.push(func(cur *state, now time.Time) {
			if cur == s {
				ev(cur, now)
			}
		})
	}
}

// leaderCall is call for operations only the leading master performs: a
// follower answers with notLeader (307 to the leader, or 503).
func (m *Master) leaderCall(ctx context.Context, fn func(s *state, now time.Time) error) error {
	return m.call(ctx, func(s *state, now time.Time) error {
		if !s.leading {
			s.count("master/dropped_messages")
			return s.notLeader()
		}
		return fn(s, now)
	})
}

// call runs fn on the loop and returns its result at the end of the loop
// iteration, when a Snapshot() would show its change.
func (m *Master) call(ctx context.Context, fn func(s *state, now time.Time) error) error {
	reply := make(chan error, 1)
	m.pendingCalls.Add(1)
	ok := m.mbox.push(func(s *state, now time.Time) {
		m.pendingCalls.Add(-1)
		err := fn(s, now)
		s.afterBatch(func() { reply <- err })
	})
	if !ok {
		m.pendingCalls.Add(-1)
		return ErrStopped
	}
	return m.await(ctx, reply)
}

// await waits for a loop event's reply, the caller giving up, or the
// master stopping (a reply already sent still wins).
func (m *Master) await(ctx context.Context, reply <-chan error) error {
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-m.done:
		select {
		case err := <-reply:
			return err
		default:
			return ErrStopped
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

// AllocatorOffer is the allocator's Offer callback: it turns the
// allocation into offers on the loop. It never blocks.
func (m *Master) AllocatorOffer(frameworkID string, offers allocator.Offers) {
	m.post(func(s *state, now time.Time) { s.allocated(frameworkID, offers, now) })
}

// AllocatorRescind is the allocator's Rescind callback.
func (m *Master) AllocatorRescind(frameworkID, agentID string, r resources.Resources) {
	m.post(func(s *state, now time.Time) { s.rescindOn(frameworkID, agentID, now) })
}

// Subscribe handles a validated scheduler SUBSCRIBE call and returns the
// new subscription's event stream. The first queued event is SUBSCRIBED
// (then HEARTBEAT), or ERROR followed by the end of the stream.
func (m *Master) Subscribe(ctx context.Context, call *schedulerpb.Call) (*FrameworkStream, error) {
	return openStream(ctx, m, func(s *state, now time.Time) (*FrameworkStream, error) {
		return s.subscribe(call.GetSubscribe(), now)
	})
}

// openStream runs open on the loop as a leader call and returns the stream
// it made. If the stream was made but the caller gave up waiting, nobody
// will drain it: it is closed (on the loop, which made it).
func openStream[S interface{ Close() }](ctx context.Context, m *Master, open func(*state, time.Time) (S, error)) (S, error) {
	var st S
	made := false
	err := m.leaderCall(ctx, func(s *state, now time.Time) error {
		var err error
		st, err = open(s, now)
		made = err == nil
		return err
	})
	if err != nil {
		m.post(func(*state, time.Time) {
			if made {
				st.Close()
			}
		})
		var zero S
		return zero, err
	}
	return st, nil
}

// SchedulerCall applies a validated non-SUBSCRIBE scheduler call made on
// the subscription identified by streamID (the Mesos-Stream-Id header, ""
// if absent). It returns an *APIError for calls the master refuses.
func (m *Master) SchedulerCall(ctx context.Context, call *schedulerpb.Call, streamID string) error {
	return m.leaderCall(ctx, func(s *state, now time.Time) error {
		return s.schedulerCall(call, streamID, now)
	})
}

// Teardown removes a framework as the operator TEARDOWN call and
// /master/teardown do. Unknown IDs give an *APIError (400).
func (m *Master) Teardown(frameworkID string) error {
	return m.leaderCall(context.Background(), func(s *state, now time.Time) error {
		fw := s.frameworks[frameworkID]
		if fw == nil {
			return badRequest("No framework found with specified ID")
		}
		s.removeFramework(fw, now)
		return nil
	})
}

// SubscribeAgent handles an agent-protocol SUBSCRIBE. The returned stream
// carries SUBSCRIBED once the registrar has admitted the agent, or
// SHUTDOWN / ERROR followed by the end of the stream.
func (m *Master) SubscribeAgent(ctx context.Context, call *protocol.AgentCall) (*AgentStream, error) {
	return openStream(ctx, m, func(s *state, now time.Time) (*AgentStream, error) {
		return s.agentSubscribe(call.GetSubscribe(), now)
	})
}

// AgentCall applies a non-SUBSCRIBE agent-protocol call.
func (m *Master) AgentCall(ctx context.Context, call *protocol.AgentCall) error {
	return m.leaderCall(ctx, func(s *state, now time.Time) error { return s.agentCallNotingPreemption(call, now) })
}

// Watch subscribes to operator events: it returns the snapshot at the time
// of subscription and a channel of every later TASK_ADDED, TASK_UPDATED,
// AGENT_ADDED, AGENT_REMOVED and FRAMEWORK_* event. The channel is closed
// when ctx ends, the master stops, or the subscriber falls too far behind.
func (m *Master) Watch(ctx context.Context) (*Snapshot, <-chan *masterpb.Event, error) {
	w := newWatcher()
	var snap *Snapshot
	err := m.leaderCall(ctx, func(s *state, now time.Time) error {
		// The snapshot at this instant, before any later event of this
		// batch reaches the watcher: the subscriber sees every change
		// exactly once, either in the snapshot or as an event.
		snap = s.snapshot(now)
		s.watchers[w] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			m.post(func(s *state, now time.Time) { s.dropWatcher(w) })
		case <-w.gone():
		}
	}()
	return snap, w.ch, nil
}
