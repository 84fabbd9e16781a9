package statusupdate

import (
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/clock"
)

func waitForward(t *testing.T, ch <-chan *protocol.AgentCall_StatusUpdate) *protocol.AgentCall_StatusUpdate {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("no update forwarded within 30s")
		return nil
	}
}

func expectNoForward(t *testing.T, ch <-chan *protocol.AgentCall_StatusUpdate) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected forward of %s", u.GetStatus().GetState())
	case <-time.After(50 * time.Millisecond):
	}
}

// TestLoopWithFakeClock drives the real goroutine: forwards on Update,
// retries when the fake clock passes the backoff, moves on after an ack.
func TestLoopWithFakeClock(t *testing.T) {
	fc := clock.NewFake(t0)
	ch := make(chan *protocol.AgentCall_StatusUpdate, 16)
	rec := &recorder{ch: ch}
	m := New(Options{Forward: rec.forward, Clock: fc})
	m.Start()
	defer m.Stop()

	a := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	b := mkUpdate("f", "t", mesos.TaskState_TASK_FINISHED)
	mustUpdate(t, m, a, false)
	mustUpdate(t, m, b, false)
	if got := waitForward(t, ch); uuidOf(got) != uuidOf(a) {
		t.Fatalf("first forward is %s", got.GetStatus().GetState())
	}
	fc.Advance(RetryIntervalMin - time.Second)
	expectNoForward(t, ch)
	fc.Advance(time.Second)
	if got := waitForward(t, ch); uuidOf(got) != uuidOf(a) {
		t.Fatalf("retry forwarded %s", got.GetStatus().GetState())
	}
	mustAck(t, m, a)
	if got := waitForward(t, ch); uuidOf(got) != uuidOf(b) {
		t.Fatalf("after ack forwarded %s", got.GetStatus().GetState())
	}
	m.Pause()
	fc.Advance(time.Hour)
	expectNoForward(t, ch)
	m.Resume()
	if got := waitForward(t, ch); uuidOf(got) != uuidOf(b) {
		t.Fatalf("after resume forwarded %s", got.GetStatus().GetState())
	}
	if !mustAck(t, m, b) {
		t.Fatal("terminal ack not reported")
	}
	fc.Advance(time.Hour)
	expectNoForward(t, ch)
}

func TestStopIdempotentWithoutStart(t *testing.T) {
	m := New(Options{})
	m.Stop()
	m.Stop()
	m2 := New(Options{Clock: clock.NewFake(t0)})
	m2.Start()
	m2.Stop()
	m2.Stop()
}
