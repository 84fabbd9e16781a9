package master

import (
	"context"
	"time"
)

// How callers reach the loop: post (fire and forget), call and leaderCall
// (run a function on the loop and wait for its result), callAsync (the
// result comes from a later event, e.g. a registrar completion) and
// openStream (a call that returns a stream).

// callAsync runs fn on the loop; fn hands its result to finish (on the
// loop, possibly in a later event, e.g. a registrar completion). callAsync
// returns it once the snapshot reflecting the change is published.
func (m *Master) callAsync(ctx context.Context, fn func(s *state, now time.Time, finish func(error))) error {
	reply := make(chan error, 1)
	ok := m.mbox.push(func(s *state, now time.Time) {
		if !s.leading {
			reply <- s.notLeader()
			return
		}
		answered := false
		// If this leadership ends before fn finishes, the completion
		// will never run (see postFor): answer the caller then.
		s.onDepose = append(s.onDepose, func() {
			if !answered {
				answered = true
				reply <- ErrNotLeading
			}
		})
		fn(s, now, func(err error) {
			if answered {
				return
			}
			answered = true
			s.afterBatch(func() { reply <- err })
		})
	})
	if !ok {
		return ErrStopped
	}
	return m.await(ctx, reply)
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
