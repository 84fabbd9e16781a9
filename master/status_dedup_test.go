package master

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
)

// An update the agent sends again after its scheduler acknowledged it (a
// retry that crossed the acknowledgement) is acknowledged to the agent at
// once and not forwarded; one not yet acknowledged is forwarded again.
func TestRetriedUpdateAfterAcknowledgement(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:2;mem:256")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:2;mem:256")
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t", a.id, "cpus:1"))))
	a.drain()
	resend := func(uuid []byte) {
		t.Helper()
		if err := a.call(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(),
			StatusUpdate: &protocol.AgentCall_StatusUpdate{FrameworkId: frameworkID(f.id),
				Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t")}, State: mesos.TaskState_TASK_RUNNING.Enum(),
					Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum(), Uuid: uuid}}}); err != nil {
			t.Fatal(err)
		}
	}
	u := a.update(f.id, "t", mesos.TaskState_TASK_RUNNING, true)
	resend(u) // not acknowledged yet: forwarded again
	if ups := f.updates(); len(ups) != 2 {
		t.Fatalf("framework got %d updates, want the update and its retry", len(ups))
	}
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
		AgentId: agentID(a.id), TaskId: &mesos.TaskID{Value: proto.String("t")}, Uuid: u}})
	a.drain()
	resend(u)
	if ups := f.updates(); len(ups) != 0 {
		t.Fatalf("an acknowledged update was forwarded again: %v", ups)
	}
	evs := a.drain()
	if len(evs) != 1 || evs[0].GetType() != protocol.AgentEvent_ACKNOWLEDGE || string(evs[0].GetAcknowledge().GetUuid()) != string(u) {
		t.Fatalf("agent got %v, want ACKNOWLEDGE of the retried update", eventTypes(evs))
	}
	if h.s.counters["master/valid_status_updates"] != 3 {
		t.Fatalf("valid_status_updates = %v, want 3", h.s.counters["master/valid_status_updates"])
	}
}
