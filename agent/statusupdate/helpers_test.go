package statusupdate

import (
	"sync"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func mkUpdate(fw, task string, state mesos.TaskState) *protocol.AgentCall_StatusUpdate {
	id := uuid.New()
	return &protocol.AgentCall_StatusUpdate{
		FrameworkId: &mesos.FrameworkID{Value: proto.String(fw)},
		ExecutorId:  &mesos.ExecutorID{Value: proto.String("e-" + task)},
		Status: &mesos.TaskStatus{
			TaskId: &mesos.TaskID{Value: proto.String(task)},
			State:  state.Enum(),
			Uuid:   id[:],
		},
	}
}

// recorder is a Forward that remembers what it was given.
type recorder struct {
	mu   sync.Mutex
	got  []*protocol.AgentCall_StatusUpdate
	fail bool // report "not sent"
	ch   chan *protocol.AgentCall_StatusUpdate
}

func (r *recorder) forward(u *protocol.AgentCall_StatusUpdate) bool {
	r.mu.Lock()
	r.got = append(r.got, u)
	fail := r.fail
	r.mu.Unlock()
	if r.ch != nil {
		r.ch <- u
	}
	return !fail
}

func (r *recorder) take() []*protocol.AgentCall_StatusUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

func uuidOf(u *protocol.AgentCall_StatusUpdate) uuid.UUID { return uuid.UUID(u.GetStatus().GetUuid()) }

func mustUpdate(t testing.TB, m *Manager, u *protocol.AgentCall_StatusUpdate, checkpoint bool) {
	t.Helper()
	if err := m.Update(u, checkpoint); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func mustAck(t testing.TB, m *Manager, u *protocol.AgentCall_StatusUpdate) bool {
	t.Helper()
	term, err := m.Acknowledge(u.GetFrameworkId().GetValue(), u.GetStatus().GetTaskId().GetValue(), u.GetStatus().GetUuid())
	if err != nil {
		t.Fatalf("Acknowledge: %v", err)
	}
	return term
}

func expectForwarded(t testing.TB, got []*protocol.AgentCall_StatusUpdate, want ...*protocol.AgentCall_StatusUpdate) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("forwarded %d updates, want %d", len(got), len(want))
	}
	for i := range want {
		if uuidOf(got[i]) != uuidOf(want[i]) {
			t.Fatalf("forward %d: uuid %s (%s), want %s (%s)", i, uuidOf(got[i]), got[i].GetStatus().GetState(),
				uuidOf(want[i]), want[i].GetStatus().GetState())
		}
	}
}
