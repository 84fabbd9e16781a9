package master

import (
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
)

// Task outcomes across a master failover (issue 11 §1): the agent
// re-registers with every task it holds, terminal ones whose updates await
// acknowledgement included; the new master rebuilds them and the pending
// updates reach the framework once it re-subscribes.

// failoverSub is the SUBSCRIBE of an agent re-registering with a new
// master: it runs framework fwi's task "t" (cpus:1;mem:32), whose latest
// state is latest and whose next update to forward is head (uuid id).
func failoverSub(fwi *mesos.FrameworkInfo, latest, head mesos.TaskState, id []byte) *protocol.AgentCall_Subscribe {
	sub := agentSub("a", "cpus:4;mem:512")
	sub.AgentInfo.Id = agentID("OLD-S3")
	sub.Frameworks = []*mesos.FrameworkInfo{fwi}
	sub.Tasks = []*mesos.Task{{Name: proto.String("t"), TaskId: &mesos.TaskID{Value: proto.String("t")}, FrameworkId: fwi.Id,
		AgentId: agentID("OLD-S3"), State: latest.Enum(), StatusUpdateState: head.Enum(), StatusUpdateUuid: id,
		Resources: resources.MustParse("cpus:1;mem:32").Proto()}}
	return sub
}

func newUUID() []byte {
	u := uuid.New()
	return u[:]
}

// updateWith sends a status update with a given uuid (a retry of an
// update the agent holds) and latest state.
func (a *fakeAgent) updateWith(fwID, taskID string, st, latest mesos.TaskState, id []byte) {
	a.h.t.Helper()
	err := a.call(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(),
		StatusUpdate: &protocol.AgentCall_StatusUpdate{
			FrameworkId: frameworkID(fwID),
			Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(taskID)}, State: st.Enum(),
				Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum(), Uuid: id},
			LatestState: latest.Enum(),
		}})
	if err != nil {
		a.h.t.Fatalf("status update: %v", err)
	}
}

func ack(agent, task string, id []byte) *schedulerpb.Call {
	return &schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
		AgentId: agentID(agent), TaskId: &mesos.TaskID{Value: proto.String(task)}, Uuid: id}}
}

func agentEventsOf(evs []*protocol.AgentEvent, typ protocol.AgentEvent_Type) []*protocol.AgentEvent {
	var out []*protocol.AgentEvent
	for _, ev := range evs {
		if ev.GetType() == typ {
			out = append(out, ev)
		}
	}
	return out
}

// The reproduction of §1: the task finished while the master was down.
// The new master rebuilds it in TASK_FINISHED with its resources free;
// the agent's TASK_FINISHED, retried before the framework re-subscribed,
// is kept (not acknowledged, not dropped); the framework's re-subscription
// makes the master tell the agent (UPDATE_FRAMEWORK), the retry is
// forwarded with its uuid, and the framework's acknowledgement completes
// the task and reaches the agent.
func TestFailoverTerminalUnacknowledgedTaskIsForwarded(t *testing.T) {
	h := newHarness(t)
	fwi := fwInfo("fw")
	fwi.Id = frameworkID("OLD-0000")
	id := newUUID()
	a := h.agentSubscribe(failoverSub(fwi, mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_FINISHED, id))
	if a.id != "OLD-S3" {
		t.Fatalf("readmitted as %q", a.id)
	}
	tp := h.task("OLD-0000", "t")
	if tp == nil || tp.GetState() != mesos.TaskState_TASK_FINISHED || tp.GetStatusUpdateState() != mesos.TaskState_TASK_FINISHED {
		t.Fatalf("task not rebuilt in its latest state: %v", tp)
	}
	if !h.alloc.has("AddAgent OLD-S3 cpus:4; mem:512 used=[]") && !h.alloc.has("AddAgent OLD-S3 cpus:4;mem:512 used=[]") {
		t.Fatalf("a finished task's resources counted as used: %v", h.alloc.calls)
	}

	// Retried before the framework is back: kept, not acknowledged.
	a.updateWith("OLD-0000", "t", mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_FINISHED, id)
	if acks := agentEventsOf(a.drain(), protocol.AgentEvent_ACKNOWLEDGE); len(acks) != 0 {
		t.Fatal("the master acknowledged an update no framework received")
	}
	if h.task("OLD-0000", "t") == nil {
		t.Fatal("task dropped while its framework was away")
	}
	if got := h.s.counters["master/invalid_status_updates"]; got != 0 {
		t.Fatalf("invalid_status_updates = %v: the update hit an unknown task", got)
	}

	f := h.subscribe(fwi)
	if ups := agentEventsOf(a.drain(), protocol.AgentEvent_UPDATE_FRAMEWORK); len(ups) != 1 {
		t.Fatal("agent not told the framework re-subscribed")
	}
	a.updateWith("OLD-0000", "t", mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_FINISHED, id)
	ups := f.updates()
	if len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_FINISHED || string(ups[0].GetUuid()) != string(id) {
		t.Fatalf("framework got %v, want TASK_FINISHED with the agent's uuid", ups)
	}
	f.mustCall(ack(a.id, "t", id))
	if acks := agentEventsOf(a.drain(), protocol.AgentEvent_ACKNOWLEDGE); len(acks) != 1 || string(acks[0].GetAcknowledge().GetUuid()) != string(id) {
		t.Fatal("acknowledgement not forwarded to the agent")
	}
	if h.task("OLD-0000", "t") != nil {
		t.Fatal("task not completed after its terminal update was acknowledged")
	}
}

// The agent holds TASK_RUNNING (unacknowledged) and TASK_FINISHED: the new
// master rebuilds the task as finished (resources free) but reconciliation
// and the forwarded updates follow the stream's order: RUNNING first,
// then FINISHED, each once.
func TestFailoverPendingUpdatesKeepTheirOrder(t *testing.T) {
	h := newHarness(t)
	fwi := fwInfo("fw")
	fwi.Id = frameworkID("OLD-0000")
	running, finished := newUUID(), newUUID()
	a := h.agentSubscribe(failoverSub(fwi, mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_RUNNING, running))
	f := h.subscribe(fwi)
	a.drain()

	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{}})
	if ups := f.updates(); len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_RUNNING || ups[0].Uuid != nil {
		t.Fatalf("reconciliation answered %v, want TASK_RUNNING (the state the framework has yet to acknowledge)", ups)
	}
	a.updateWith("OLD-0000", "t", mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_FINISHED, running)
	f.mustCall(ack(a.id, "t", running))
	if h.task("OLD-0000", "t") == nil {
		t.Fatal("task completed on the acknowledgement of a non-terminal update")
	}
	a.updateWith("OLD-0000", "t", mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_FINISHED, finished)
	f.mustCall(ack(a.id, "t", finished))
	f.drain()
	var states []string
	for _, u := range f.events {
		if u.GetType() == schedulerpb.Event_UPDATE && u.GetUpdate().GetStatus().Uuid != nil {
			states = append(states, u.GetUpdate().GetStatus().GetState().String())
		}
	}
	if len(states) != 2 || states[0] != "TASK_RUNNING" || states[1] != "TASK_FINISHED" {
		t.Fatalf("framework got %v, want [TASK_RUNNING TASK_FINISHED]", states)
	}
	if h.task("OLD-0000", "t") != nil {
		t.Fatal("task not completed")
	}
}

// An update for a task the master does not know (the TASK_LOST an agent
// sends for a RUN_TASK of a framework it did not know, which it holds
// without a task) still reaches the framework, as in Mesos, and its
// acknowledgement ends the agent's stream.
func TestUpdateForUnknownTaskIsForwarded(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:1;mem:64")
	f := h.subscribe(fwInfo("fw"))
	id := newUUID()
	a.updateWith(f.id, "ghost", mesos.TaskState_TASK_LOST, mesos.TaskState_TASK_LOST, id)
	ups := f.updates()
	if len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_LOST || string(ups[0].GetUuid()) != string(id) {
		t.Fatalf("framework got %v", ups)
	}
	f.mustCall(ack(a.id, "ghost", id))
	if acks := agentEventsOf(a.drain(), protocol.AgentEvent_ACKNOWLEDGE); len(acks) != 1 {
		t.Fatal("acknowledgement not forwarded")
	}
}

// An update for a framework this master has not seen (it failed over and
// no agent reported the framework) is neither acknowledged nor forgotten:
// when the framework subscribes, the agent holding it is told to retry.
func TestUndeliveredUpdateIsRetriedWhenFrameworkSubscribes(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:1;mem:64")
	id := newUUID()
	a.updateWith("OLD-0000", "t", mesos.TaskState_TASK_LOST, mesos.TaskState_TASK_LOST, id)
	if evs := a.drain(); len(evs) != 0 {
		t.Fatalf("agent got %v for an update of an unknown framework", eventTypes(evs))
	}
	fwi := fwInfo("fw")
	fwi.Id = frameworkID("OLD-0000")
	f := h.subscribe(fwi)
	if ups := agentEventsOf(a.drain(), protocol.AgentEvent_UPDATE_FRAMEWORK); len(ups) != 1 {
		t.Fatal("agent holding the framework's update not told it subscribed")
	}
	a.updateWith("OLD-0000", "t", mesos.TaskState_TASK_LOST, mesos.TaskState_TASK_LOST, id)
	if ups := f.updates(); len(ups) != 1 || string(ups[0].GetUuid()) != string(id) {
		t.Fatalf("framework got %v", ups)
	}
}

// §3 "Retried updates": a retry (same state) replaces the last entry of
// the task's statuses, as Mesos; a new state appends.
func TestRetriedUpdateReplacesLastStatus(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:1;mem:64")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:1;mem:64")
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t", a.id, "cpus:1;mem:64"))))
	running := newUUID()
	for range 3 {
		a.updateWith(f.id, "t", mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_RUNNING, running)
	}
	states := func() []string {
		var out []string
		for _, st := range h.task(f.id, "t").GetStatuses() {
			out = append(out, st.GetState().String())
		}
		return out
	}
	if got := states(); len(got) != 1 || got[0] != "TASK_RUNNING" {
		t.Fatalf("statuses after 3 retries = %v, want [TASK_RUNNING]", got)
	}
	f.mustCall(ack(a.id, "t", running))
	a.updateWith(f.id, "t", mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_FINISHED, newUUID())
	if got := states(); len(got) != 2 || got[1] != "TASK_FINISHED" {
		t.Fatalf("statuses = %v, want [TASK_RUNNING TASK_FINISHED]", got)
	}
	snap := h.s.snapshot(h.now)
	for _, fv := range snap.Frameworks {
		for _, tk := range fv.Tasks {
			if len(tk.GetStatuses()) != 2 {
				t.Fatalf("/master/state lists %d statuses, want 2", len(tk.GetStatuses()))
			}
		}
	}
}

// A known agent re-registers without a task the master launched there
// (its RUN_TASK was lost): the RECONCILE names the task and carries the
// framework's info, so an agent that never saw the framework answers
// TASK_DROPPED for a partition-aware one (§3 "Reasons").
func TestReregistrationReconcileCarriesFrameworks(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:2;mem:128")
	pa := h.subscribe(fwInfo("pa", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	o := h.offer(pa, a, "*", "cpus:2;mem:128")
	pa.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t", a.id, "cpus:1;mem:64"))))
	a.drain()
	a.st.Close()
	h.settle()
	sub := agentSub("a", "cpus:2;mem:128")
	sub.AgentInfo.Id = agentID(a.id)
	st, err := h.s.agentSubscribe(sub, "", h.now)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := st.Drain()
	rec := agentEventsOf(evs, protocol.AgentEvent_RECONCILE)
	if len(rec) != 1 {
		t.Fatalf("got %v, want a RECONCILE", eventTypes(evs))
	}
	r := rec[0].GetReconcile()
	if len(r.GetTasks()) != 1 || len(r.GetFrameworks()) != 1 || r.GetFrameworks()[0].GetId().GetValue() != pa.id {
		t.Fatalf("RECONCILE = %v", r)
	}
	caps := r.GetFrameworks()[0].GetCapabilities()
	if len(caps) != 1 || caps[0].GetType() != mesos.FrameworkInfo_Capability_PARTITION_AWARE {
		t.Fatalf("framework capabilities = %v", caps)
	}
}

// §3 "Accounting drift": an agent whose framework did not checkpoint
// restarts and re-registers without the framework's executor; the master
// forgets the executor and its resources go back to the allocator.
func TestReregistrationRemovesExecutorsTheAgentLost(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:2;mem:256")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:2;mem:256")
	ti := cmdTask("t", a.id, "cpus:0.5;mem:64")
	ti.Command = nil
	ti.Executor = &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("ex")},
		Command: &mesos.CommandInfo{Value: proto.String("exec")}, Resources: resources.ToPreRefinement(resources.MustParse("cpus:0.25;mem:32").Proto())}
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(ti)))
	a.drain()
	h.alloc.recoveries()
	if len(h.s.agents[a.id].executors[f.id]) != 1 {
		t.Fatal("executor not tracked at launch")
	}
	a.st.Close()
	h.settle()
	sub := agentSub("a", "cpus:2;mem:256")
	sub.AgentInfo.Id = agentID(a.id)
	if _, err := h.s.agentSubscribe(sub, "", h.now); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if n := len(h.s.agents[a.id].executors); n != 0 {
		t.Fatalf("master still lists %d executors the agent no longer runs", n)
	}
	if n := len(h.s.frameworks[f.id].executors); n != 0 {
		t.Fatalf("framework still lists %d executors", n)
	}
	rec := h.alloc.recoveries()
	if len(rec) != 1 || !rec[0].res.Equal(resources.MustParse("cpus:0.25;mem:32").AllocatedTo("*")) {
		t.Fatalf("recovered %+v, want the executor's cpus:0.25;mem:32", rec)
	}
}

// A launch the old leader accepted but whose RUN_TASK never left it: the
// new leader does not know the task. The framework's reconciliation gets
// no answer while the agent may still re-register with it, and once the
// agent re-registered without it, one terminal answer: TASK_GONE for a
// partition-aware framework, TASK_LOST otherwise (as Mesos).
func TestFailoverLaunchTheAgentNeverSawEndsOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps []mesos.FrameworkInfo_Capability_Type
		want mesos.TaskState
	}{
		{"partition-aware", []mesos.FrameworkInfo_Capability_Type{mesos.FrameworkInfo_Capability_PARTITION_AWARE}, mesos.TaskState_TASK_GONE},
		{"not partition-aware", nil, mesos.TaskState_TASK_LOST},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.s.elect(&RecoveredRegistry{Agents: []string{"OLD-S3"}}, 2, h.now)
			fwi := fwInfo("fw", tc.caps...)
			fwi.Id = frameworkID("OLD-0000")
			f := h.subscribe(fwi)
			rc := &schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{
				Tasks: []*schedulerpb.Call_Reconcile_Task{{TaskId: &mesos.TaskID{Value: proto.String("never-ran")}, AgentId: agentID("OLD-S3")}}}}
			f.mustCall(rc)
			if ups := f.updates(); len(ups) != 0 {
				t.Fatalf("answered %v while the agent may still re-register with the task", ups)
			}
			sub := agentSub("a", "cpus:4;mem:512")
			sub.AgentInfo.Id = agentID("OLD-S3")
			if a := h.agentSubscribe(sub); a.id != "OLD-S3" {
				t.Fatalf("agent readmitted as %q", a.id)
			}
			for range 2 { // asked again, the answer stays the same
				f.mustCall(rc)
				ups := f.updates()
				if len(ups) != 1 || ups[0].GetState() != tc.want || ups[0].GetReason() != mesos.TaskStatus_REASON_RECONCILIATION {
					t.Fatalf("reconciliation answered %v, want one %v", ups, tc.want)
				}
			}
		})
	}
}
