package agent

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/agent/statusupdate"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
)

// TestReregistrationReportsTerminalUnacknowledgedTasks is issue 11 §1 from
// the agent's side: the task ends while the master is away; the agent holds
// its terminal update (nothing is sent before it is registered again),
// re-registers with the task in its latest state plus the state and uuid of
// the update it will forward, forwards that update once SUBSCRIBED, and
// again at once when the master says the framework re-subscribed.
func TestReregistrationReportsTerminalUnacknowledgedTasks(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), commandTask("t1", "exit3"), 1))
	running := m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	sub.send(ack("F1", running, 1))
	failed := m.waitCall(t, "TASK_FAILED", updateFor("t1", mesos.TaskState_TASK_FAILED))
	id := failed.GetStatusUpdate().GetStatus().GetUuid()

	// The master goes away before acknowledging.
	sub.close()
	eventually(t, "agent disconnected", func() bool { return ta.metric(t, "slave/registered") == 0 })
	eventually(t, "executor terminated", func() bool { return ta.metric(t, "slave/executors_terminated") == 1 })
	eventually(t, "reconnect timer", func() bool { return ta.clock.Pending() > 0 })
	ta.clock.Advance(statusupdate.RetryIntervalMax) // past any retry and the registration backoff
	sub2 := m.nextSub(t)
	m.noCall(t, "status update while unregistered", ofType(protocol.AgentCall_STATUS_UPDATE))

	s := sub2.call.GetSubscribe()
	if len(s.GetExecutors()) != 0 {
		t.Errorf("re-registration reports %d executors; the terminated command executor is not one", len(s.GetExecutors()))
	}
	if len(s.GetTasks()) != 1 {
		t.Fatalf("re-registration reports tasks %v, want t1", s.GetTasks())
	}
	rt := s.GetTasks()[0]
	if rt.GetTaskId().GetValue() != "t1" || rt.GetState() != mesos.TaskState_TASK_FAILED ||
		rt.GetStatusUpdateState() != mesos.TaskState_TASK_FAILED || string(rt.GetStatusUpdateUuid()) != string(id) {
		t.Errorf("reported task %v, want TASK_FAILED awaiting acknowledgement of uuid %x", rt, id)
	}
	if len(s.GetFrameworks()) != 1 {
		t.Errorf("re-registration reports %d frameworks, want F1", len(s.GetFrameworks()))
	}

	sub2.send(&protocol.AgentEvent{
		Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(2),
		Subscribed: &protocol.AgentEvent_Subscribed{AgentId: agentIDProto("S1")},
	})
	again := m.waitCall(t, "TASK_FAILED after re-registration", updateFor("t1", mesos.TaskState_TASK_FAILED))
	if string(again.GetStatusUpdate().GetStatus().GetUuid()) != string(id) {
		t.Error("a different update was sent")
	}
	// The framework re-subscribes: the retry comes now, not after backoff.
	sub2.send(&protocol.AgentEvent{Type: protocol.AgentEvent_UPDATE_FRAMEWORK.Enum(), Epoch: proto.Uint64(2),
		UpdateFramework: &protocol.AgentEvent_UpdateFramework{FrameworkInfo: frameworkInfo("F1")}})
	m.waitCall(t, "TASK_FAILED retried on UPDATE_FRAMEWORK", updateFor("t1", mesos.TaskState_TASK_FAILED))
	sub2.send(ack("F1", again, 2))
	eventually(t, "task completed", func() bool { return ta.metric(t, "slave/tasks_failed") == 1 && len(ta.sum.Unacknowledged()) == 0 })
}

// TestReconcileUnknownTaskOfUnknownFramework is §3 "Reasons": the master
// names a task of a framework the agent never saw (its RUN_TASK was lost);
// the agent answers TASK_DROPPED when the framework is partition-aware
// (the RECONCILE carries its info), TASK_LOST otherwise, once per task.
func TestReconcileUnknownTaskOfUnknownFramework(t *testing.T) {
	m := newFakeMaster(t)
	_ = startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	pa := frameworkInfo("PA")
	pa.Capabilities = []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_PARTITION_AWARE.Enum()}}
	task := func(fw, id string) *mesos.Task {
		return &mesos.Task{Name: proto.String(id), AgentId: agentIDProto("S1"), TaskId: &mesos.TaskID{Value: proto.String(id)}, FrameworkId: &mesos.FrameworkID{Value: proto.String(fw)},
			State: mesos.TaskState_TASK_STAGING.Enum()}
	}
	rec := &protocol.AgentEvent{Type: protocol.AgentEvent_RECONCILE.Enum(), Epoch: proto.Uint64(1),
		Reconcile: &protocol.AgentEvent_Reconcile{
			Tasks:      []*mesos.Task{task("PA", "p1"), task("OLD", "o1")},
			Frameworks: []*mesos.FrameworkInfo{pa, frameworkInfo("OLD")},
		}}
	sub.send(rec)
	dropped := m.waitCall(t, "TASK_DROPPED for p1", updateFor("p1", mesos.TaskState_TASK_DROPPED))
	if st := dropped.GetStatusUpdate().GetStatus(); st.GetReason() != mesos.TaskStatus_REASON_RECONCILIATION {
		t.Errorf("reason %v", st.GetReason())
	}
	m.waitCall(t, "TASK_LOST for o1", updateFor("o1", mesos.TaskState_TASK_LOST))
	// A second RECONCILE while those updates await acknowledgement adds
	// no second terminal update.
	sub.send(rec)
	register := &protocol.AgentEvent{Type: protocol.AgentEvent_PING.Enum(), Epoch: proto.Uint64(1), Ping: &protocol.AgentEvent_Ping{Sequence: proto.Uint64(9)}}
	sub.send(register)
	m.waitCall(t, "PONG", func(c *protocol.AgentCall) bool { return c.GetPong().GetSequence() == 9 })
	m.noCall(t, "a second terminal update", ofType(protocol.AgentCall_STATUS_UPDATE))
}
