package agent

import (
	"testing"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"google.golang.org/protobuf/proto"
)

// Checkpoint effects: an agent that has no ID yet (no master accepted it)
// has nowhere to file framework records; UPDATE_FRAMEWORK re-checkpoints
// the new info and resumes the framework's pending updates.
func TestPureCheckpointEffects(t *testing.T) {
	p := newPureAgent(t)
	p.sess.agentID = ""
	p.ensureFramework(fwInfo("F1"))
	p.want()
	p.sess.agentID = "S1"
	p.ensureFramework(fwInfo("F1")) // unchanged: no write
	p.want()
	info := fwInfo("F1")
	info.Name = proto.String("renamed")
	p.updateFramework(info)
	p.want("retry-updates F1", "checkpoint framework F1")
	if p.frameworks["F1"].info.GetName() != "renamed" {
		t.Fatal("framework info not refreshed")
	}
	// A framework the agent does not run: its updates are still retried.
	p.updateFramework(fwInfo("F2"))
	p.want("retry-updates F2")
}

// RECONCILE after re-registration: tasks the master believes are here but
// the agent does not know are reported lost (dropped for partition-aware
// frameworks, whose capability may come from the master's record), once.
func TestPureReconcile(t *testing.T) {
	p := newPureAgent(t)
	p.runTask(runTaskEv(fwInfo("F1"), pureCustomTask("T1", "E1")))
	p.take()
	task := func(fid, tid string) *mesos.Task {
		return &mesos.Task{FrameworkId: &mesos.FrameworkID{Value: proto.String(fid)}, TaskId: &mesos.TaskID{Value: proto.String(tid)}}
	}
	p.reconcile(&protocol.AgentEvent_Reconcile{
		Tasks:      []*mesos.Task{task("F1", "T1"), task("F1", "T9"), task("F2", "T2"), task("", "bad")},
		Frameworks: []*mesos.FrameworkInfo{fwInfo("F2", mesos.FrameworkInfo_Capability_PARTITION_AWARE)},
	})
	p.want(
		"update T9 TASK_LOST SOURCE_AGENT REASON_RECONCILIATION",
		"update T2 TASK_DROPPED SOURCE_AGENT REASON_RECONCILIATION",
	)
	// Asked again, the agent has already reported them.
	p.reconcile(&protocol.AgentEvent_Reconcile{Tasks: []*mesos.Task{task("F1", "T9"), task("F2", "T2")}})
	p.want()
}
