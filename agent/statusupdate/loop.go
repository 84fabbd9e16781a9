package statusupdate

import (
	"path/filepath"
	"time"

	"mezzo/api/protocol"
)

func dirOf(path string) string { return filepath.Dir(path) }

// sending is one head handed to Forward in a flush.
type sending struct {
	s        *stream
	msg      *protocol.AgentCall_StatusUpdate
	interval time.Duration // the stream's interval before forwarded() doubled it
}

// run is the forwarding goroutine: it forwards due heads, then sleeps until
// the earliest retry or until Update, Acknowledge or Resume wake it.
func (m *Manager) run() {
	defer close(m.done)
	timer := m.clock.NewTimer(RetryIntervalMax)
	timer.Stop()
	defer timer.Stop()
	for {
		now := m.clock.Now()
		batch, wait := m.collect(now)
		// Arm the timer before calling Forward, so that whoever observes a
		// forward (a test advancing a fake clock) finds the retry armed.
		if wait > 0 {
			timer.Reset(wait)
		} else {
			timer.Stop()
		}
		if m.send(batch, now) {
			continue // something was not sent: reschedule it and re-arm
		}
		select {
		case <-m.stop:
			return
		case <-m.kick:
		case <-timer.C():
		}
	}
}

// collect picks the due heads at now, marks them forwarded, and returns
// them with the time until the next head falls due (0: nothing scheduled).
func (m *Manager) collect(now time.Time) ([]sending, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.paused {
		return nil, 0
	}
	var batch []sending
	var next time.Time
	for _, s := range m.streams {
		if len(s.pending) == 0 {
			continue
		}
		if s.due(now) {
			batch = append(batch, sending{s: s, msg: s.headMessage(), interval: s.interval})
			s.forwarded(now)
		}
		if next.IsZero() || s.next.Before(next) {
			next = s.next
		}
	}
	if next.IsZero() {
		return batch, 0
	}
	return batch, max(next.Sub(now), time.Nanosecond)
}

// send calls Forward for each head; it reports whether any was not sent,
// after rescheduling those NotSentRetryInterval from now with their backoff
// unchanged.
func (m *Manager) send(batch []sending, now time.Time) bool {
	var failed []sending
	for _, b := range batch {
		if m.opts.Forward == nil || !m.opts.Forward(b.msg) {
			failed = append(failed, b)
		}
	}
	if len(failed) == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range failed {
		// Only if the stream still has the same head: an ack may have
		// raced with Forward.
		if cur := m.streams[b.s.key]; cur == b.s && len(b.s.pending) > 0 && b.s.pending[0].Status == b.msg.Status {
			b.s.next = now.Add(NotSentRetryInterval)
			b.s.interval = b.interval
		}
	}
	return true
}

// flush is one synchronous pass of the loop, for tests of the state logic.
func (m *Manager) flush(now time.Time) (sent int, wait time.Duration) {
	batch, wait := m.collect(now)
	m.send(batch, now)
	return len(batch), wait
}
