package statusupdate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"google.golang.org/protobuf/proto"
)

func TestOrderKeptOnlyHeadForwarded(t *testing.T) {
	rec := &recorder{}
	m := New(Options{Forward: rec.forward})
	a := mkUpdate("f", "t", mesos.TaskState_TASK_STARTING)
	b := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	c := mkUpdate("f", "t", mesos.TaskState_TASK_FINISHED)
	for _, u := range []*protocol.AgentCall_StatusUpdate{a, b, c} {
		mustUpdate(t, m, u, false)
	}
	m.flush(t0)
	got := rec.take()
	expectForwarded(t, got, a)
	if got[0].GetLatestState() != mesos.TaskState_TASK_FINISHED {
		t.Errorf("latest_state = %s, want TASK_FINISHED", got[0].GetLatestState())
	}
	m.flush(t0) // not due again yet
	expectForwarded(t, rec.take())

	if mustAck(t, m, a) {
		t.Fatal("ack of STARTING reported terminal")
	}
	m.flush(t0.Add(time.Second))
	expectForwarded(t, rec.take(), b)
	mustAck(t, m, b)
	m.flush(t0.Add(2 * time.Second))
	expectForwarded(t, rec.take(), c)
	if !mustAck(t, m, c) {
		t.Fatal("ack of FINISHED did not report terminal")
	}
	if p := m.Pending("f", "t"); p != nil {
		t.Fatalf("stream still pending after terminal ack: %v", p)
	}
	if _, ok := m.Latest("f", "t"); ok {
		t.Fatal("Latest reports a closed stream")
	}
}

func TestRetryBackoff(t *testing.T) {
	rec := &recorder{}
	m := New(Options{Forward: rec.forward})
	a := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	mustUpdate(t, m, a, false)

	now := t0
	_, wait := m.flush(now)
	expectForwarded(t, rec.take(), a)
	// Expected waits: 10s, 20s, 40s, ... capped at 10min.
	want := RetryIntervalMin
	for i := 0; i < 12; i++ {
		if wait != want {
			t.Fatalf("retry %d: wait %s, want %s", i, wait, want)
		}
		if n, _ := m.flush(now.Add(wait - time.Millisecond)); n != 0 {
			t.Fatalf("retry %d: forwarded early", i)
		}
		now = now.Add(wait)
		_, wait = m.flush(now)
		expectForwarded(t, rec.take(), a)
		want = min(2*want, RetryIntervalMax)
	}
	if wait != RetryIntervalMax {
		t.Fatalf("backoff not capped: %s", wait)
	}
	// An ack forwards the next update at once with the backoff reset.
	b := mkUpdate("f", "t", mesos.TaskState_TASK_FINISHED)
	mustUpdate(t, m, b, false)
	mustAck(t, m, a)
	_, wait = m.flush(now)
	expectForwarded(t, rec.take(), b)
	if wait != RetryIntervalMin {
		t.Fatalf("backoff not reset after ack: %s", wait)
	}
}

func TestDuplicateIgnored(t *testing.T) {
	rec := &recorder{}
	m := New(Options{Forward: rec.forward})
	a := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	mustUpdate(t, m, a, false)
	mustUpdate(t, m, proto.Clone(a).(*protocol.AgentCall_StatusUpdate), false)
	if n := len(m.Pending("f", "t")); n != 1 {
		t.Fatalf("pending %d, want 1", n)
	}
	m.flush(t0)
	mustAck(t, m, a)
	// Re-sent after acknowledgement (an executor replaying on re-subscribe).
	mustUpdate(t, m, a, false)
	if n := len(m.Pending("f", "t")); n != 0 {
		t.Fatalf("acknowledged update re-queued: pending %d", n)
	}
}

func TestAcknowledgeErrors(t *testing.T) {
	m := New(Options{})
	a := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	b := mkUpdate("f", "t", mesos.TaskState_TASK_FAILED)
	mustUpdate(t, m, a, false)
	mustUpdate(t, m, b, false)

	tests := []struct {
		name      string
		fw, task  string
		uuid      []byte
		wantIs    error
		wantError bool
	}{
		{"non-head", "f", "t", b.Status.Uuid, ErrUnexpectedAck, true},
		{"unknown task", "f", "other", a.Status.Uuid, ErrUnknownStream, true},
		{"unknown framework", "g", "t", a.Status.Uuid, ErrUnknownStream, true},
		{"short uuid", "f", "t", []byte{1, 2, 3}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term, err := m.Acknowledge(tc.fw, tc.task, tc.uuid)
			if err == nil || term {
				t.Fatalf("got (%v, %v), want an error", term, err)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v is not %v", err, tc.wantIs)
			}
		})
	}
	// Nothing changed: a is still the head.
	if p := m.Pending("f", "t"); len(p) != 2 || uuidOf(p[0]) != uuidOf(a) {
		t.Fatalf("pending changed by rejected acks")
	}
	mustAck(t, m, a)
	if _, err := m.Acknowledge("f", "t", a.Status.Uuid); !errors.Is(err, ErrDuplicateAck) {
		t.Fatalf("second ack of a: %v, want ErrDuplicateAck", err)
	}
}

func TestUpdateValidation(t *testing.T) {
	good := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	mod := func(f func(u *protocol.AgentCall_StatusUpdate)) *protocol.AgentCall_StatusUpdate {
		u := proto.Clone(good).(*protocol.AgentCall_StatusUpdate)
		f(u)
		return u
	}
	tests := []struct {
		name string
		u    *protocol.AgentCall_StatusUpdate
		want string
	}{
		{"nil", nil, "nil update"},
		{"no framework", mod(func(u *protocol.AgentCall_StatusUpdate) { u.FrameworkId = nil }), "framework_id"},
		{"no status", mod(func(u *protocol.AgentCall_StatusUpdate) { u.Status = nil }), "'status'"},
		{"no task id", mod(func(u *protocol.AgentCall_StatusUpdate) { u.Status.TaskId = nil }), "task_id"},
		{"no state", mod(func(u *protocol.AgentCall_StatusUpdate) { u.Status.State = nil }), "state"},
		{"no uuid", mod(func(u *protocol.AgentCall_StatusUpdate) { u.Status.Uuid = nil }), "uuid"},
		{"short uuid", mod(func(u *protocol.AgentCall_StatusUpdate) { u.Status.Uuid = []byte("abc") }), "uuid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Options{})
			err := m.Update(tc.u, false)
			if !errors.Is(err, ErrInvalidUpdate) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalidUpdate naming %q", err, tc.want)
			}
		})
	}
}

func TestUpdateAfterTerminalRefused(t *testing.T) {
	m := New(Options{})
	mustUpdate(t, m, mkUpdate("f", "t", mesos.TaskState_TASK_KILLED), false)
	err := m.Update(mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING), false)
	if !errors.Is(err, ErrTerminated) {
		t.Fatalf("got %v, want ErrTerminated", err)
	}
	// Not terminal: UNREACHABLE.
	if mesos.IsTerminal(mesos.TaskState_TASK_UNREACHABLE) || !mesos.IsTerminal(mesos.TaskState_TASK_GONE_BY_OPERATOR) {
		t.Fatal("IsTerminal wrong")
	}
}

func TestPauseResumeAndNotSent(t *testing.T) {
	rec := &recorder{}
	m := New(Options{Forward: rec.forward})
	a := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	m.Pause()
	mustUpdate(t, m, a, false)
	if n, wait := m.flush(t0); n != 0 || wait != 0 {
		t.Fatalf("paused manager forwarded %d (wait %s)", n, wait)
	}
	m.Resume()
	m.flush(t0)
	expectForwarded(t, rec.take(), a)
	// Backoff advanced twice, then Resume resets it and forwards now.
	m.flush(t0.Add(10 * time.Second))
	rec.take()
	m.Resume()
	if _, wait := m.flush(t0.Add(11 * time.Second)); wait != RetryIntervalMin {
		t.Fatalf("wait after resume %s, want %s", wait, RetryIntervalMin)
	}
	expectForwarded(t, rec.take(), a)

	// Forward failing: retried after NotSentRetryInterval, backoff not advanced.
	rec.fail = true
	now := t0.Add(time.Hour)
	m.flush(now)
	expectForwarded(t, rec.take(), a)
	if n, _ := m.flush(now.Add(NotSentRetryInterval - time.Millisecond)); n != 0 {
		t.Fatal("not-sent head retried early")
	}
	rec.fail = false
	now = now.Add(NotSentRetryInterval)
	_, wait := m.flush(now)
	expectForwarded(t, rec.take(), a)
	if wait != 2*RetryIntervalMin {
		t.Fatalf("wait %s after a failed then a good send, want %s", wait, 2*RetryIntervalMin)
	}
}

func TestStreamsIndependent(t *testing.T) {
	rec := &recorder{}
	m := New(Options{Forward: rec.forward})
	a := mkUpdate("f", "t1", mesos.TaskState_TASK_RUNNING)
	b := mkUpdate("f", "t2", mesos.TaskState_TASK_RUNNING)
	c := mkUpdate("g", "t1", mesos.TaskState_TASK_RUNNING)
	mustUpdate(t, m, a, false)
	mustUpdate(t, m, b, false)
	mustUpdate(t, m, c, false)
	if n, _ := m.flush(t0); n != 3 {
		t.Fatalf("forwarded %d heads, want 3", n)
	}
	if got := len(m.Unacknowledged()); got != 3 {
		t.Fatalf("Unacknowledged: %d, want 3", got)
	}
	m.CleanupFramework("f")
	if m.Pending("f", "t1") != nil || m.Pending("f", "t2") != nil || len(m.Pending("g", "t1")) != 1 {
		t.Fatal("CleanupFramework removed the wrong streams")
	}
	st, ok := m.Latest("g", "t1")
	if !ok || st.GetState() != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("Latest = %v, %v", st, ok)
	}
}
