package agent

import (
	"testing"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"google.golang.org/protobuf/proto"
)

// Pure tests of the agent's loop-owned state: the handlers the loop calls,
// driven directly with recording sinks (core_harness_test.go). Each reads
// as a transcript of what the agent asked of the containerizer, the status
// update manager, the checkpoint, the master and the executor.

// RUN_TASK of a command task: the framework, executor and task are
// checkpointed before anything runs (a restarted agent must know every
// container it may find), the command executor's container starts, and
// the task is delivered when the executor subscribes.
func TestPureRunTaskLaunches(t *testing.T) {
	p := newPureAgent(t)
	p.runTask(runTaskEv(fwInfo("F1", mesos.FrameworkInfo_Capability_PARTITION_AWARE), pureCommandTask("T1")))
	p.want(
		"checkpoint framework F1",
		"checkpoint executor T1",
		"start T1 path=/usr/bin/mezzo args=[executor] direct=false uris=0",
		"checkpoint task T1",
	)
	if st := p.executor("F1", "T1").tasks["T1"].t.GetState(); st != mesos.TaskState_TASK_STAGING {
		t.Fatalf("task state %v, want STAGING", st)
	}
	p.subscribe("F1", "T1")
	p.want("to T1 SUBSCRIBED", "to T1 LAUNCH T1")
	p.executorSays("F1", "T1", "T1", mesos.TaskState_TASK_RUNNING)
	p.want("update T1 TASK_RUNNING SOURCE_EXECUTOR", "to T1 ACKNOWLEDGED T1")

	// A second RUN_TASK of the same task is dropped: nothing happens.
	p.runTask(runTaskEv(fwInfo("F1", mesos.FrameworkInfo_Capability_PARTITION_AWARE), pureCommandTask("T1")))
	p.want()
}

// Bad RUN_TASKs end in one terminal update with a reason and leave
// nothing behind (the framework's record goes too).
func TestPureRunTaskRefused(t *testing.T) {
	p := newPureAgent(t)
	bad := pureCommandTask("T1")
	bad.Command = nil
	p.runTask(runTaskEv(fwInfo("F1"), bad))
	p.want(
		"checkpoint framework F1",
		"update T1 TASK_ERROR SOURCE_AGENT REASON_TASK_INVALID",
		"forget framework F1",
	)
	if len(p.frameworks) != 0 {
		t.Fatalf("frameworks left: %v", p.fwOrder)
	}
	// Malformed (no framework id): dropped with a log line, no effects.
	p.runTask(&protocol.AgentEvent_RunTask{Task: pureCommandTask("T2")})
	p.want()
}

// An executor that never subscribes is killed after
// --executor_registration_timeout and its task fails with that reason.
func TestPureExecutorRegistrationTimeout(t *testing.T) {
	p := newPureAgent(t)
	p.runTask(runTaskEv(fwInfo("F1"), pureCustomTask("T1", "E1")))
	p.take()
	e := p.executor("F1", "E1")
	p.launched(e, containerizer.Container{ID: e.containerID, Pid: 42})
	p.advance(59 * time.Second)
	p.want()
	p.advance(time.Second)
	p.want("destroy E1 grace=0s")
	p.exited("F1", "E1", &containerizer.Termination{Status: 9, Destroyed: true})
	p.want(
		"update T1 TASK_FAILED SOURCE_AGENT REASON_EXECUTOR_REGISTRATION_TIMEOUT",
		"master EXECUTOR_EXITED E1 status=9",
	)
}

// KILL_TASK in each state of the task (Mesos's slave.cpp killTask).
func TestPureKillTask(t *testing.T) {
	t.Run("running: the executor gets KILL with the master's grace period", func(t *testing.T) {
		p := newPureAgent(t)
		p.runTask(runTaskEv(fwInfo("F1"), pureCustomTask("T1", "E1")))
		p.subscribe("F1", "E1")
		p.executorSays("F1", "E1", "T1", mesos.TaskState_TASK_RUNNING)
		p.take()
		p.killTask(killTaskEv("F1", "T1", 3*time.Second))
		p.want("to E1 KILL T1 grace=3s")
		// The executor dies without reporting: the task was being killed,
		// so it is KILLED, not FAILED.
		p.exited("F1", "E1", &containerizer.Termination{Status: 0})
		p.want("update T1 TASK_KILLED SOURCE_AGENT REASON_EXECUTOR_TERMINATED", "master EXECUTOR_EXITED E1 status=0")
	})
	t.Run("the task's own kill policy when the master gives none", func(t *testing.T) {
		p := newPureAgent(t)
		task := pureCustomTask("T1", "E1")
		task.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(7 * time.Second))}}
		p.runTask(runTaskEv(fwInfo("F1"), task))
		p.subscribe("F1", "E1")
		p.take()
		p.killTask(killTaskEv("F1", "T1", 0))
		p.want("to E1 KILL T1 grace=7s")
	})
	t.Run("queued: killed before delivery, the idle executor shut down", func(t *testing.T) {
		p := newPureAgent(t)
		p.runTask(runTaskEv(fwInfo("F1"), pureCustomTask("T1", "E1")))
		e := p.executor("F1", "E1")
		p.launched(e, containerizer.Container{ID: e.containerID})
		p.take()
		p.killTask(killTaskEv("F1", "T1", time.Second))
		p.want("update T1 TASK_KILLED SOURCE_AGENT REASON_TASK_KILLED_DURING_LAUNCH", "destroy E1 grace=0s")
		p.exited("F1", "E1", &containerizer.Termination{Destroyed: true})
		p.want("master EXECUTOR_EXITED E1 status=0")
	})
	t.Run("unknown task: LOST, or DROPPED for partition-aware frameworks", func(t *testing.T) {
		p := newPureAgent(t)
		p.killTask(killTaskEv("F9", "T9", 0))
		p.want("update T9 TASK_LOST SOURCE_AGENT REASON_EXECUTOR_TERMINATED")
		p.runTask(runTaskEv(fwInfo("F1", mesos.FrameworkInfo_Capability_PARTITION_AWARE), pureCustomTask("T1", "E1")))
		p.take()
		p.killTask(killTaskEv("F1", "T2", 0))
		p.want("update T2 TASK_DROPPED SOURCE_AGENT REASON_EXECUTOR_TERMINATED")
	})
	t.Run("direct task: TASK_KILLING, then the container gets the grace period", func(t *testing.T) {
		p := newPureAgent(t)
		p.cfg.DirectCommandTasks = true
		p.runTask(runTaskEv(fwInfo("F1", mesos.FrameworkInfo_Capability_TASK_KILLING_STATE), pureCommandTask("T1")))
		p.want(
			"checkpoint framework F1",
			"checkpoint executor T1",
			"start T1 path=/bin/sh args=[-c sleep 1000] direct=true uris=0",
			"checkpoint task T1",
		)
		e := p.executor("F1", "T1")
		p.directStarting(e)
		p.launched(e, containerizer.Container{ID: e.containerID, Pid: 42})
		p.want("update T1 TASK_STARTING SOURCE_EXECUTOR", "update T1 TASK_RUNNING SOURCE_EXECUTOR")
		p.killTask(killTaskEv("F1", "T1", 4*time.Second))
		p.want("update T1 TASK_KILLING SOURCE_EXECUTOR", "destroy T1 grace=4s")
		p.killTask(killTaskEv("F1", "T1", 4*time.Second)) // a retried kill
		p.want()
		p.exited("F1", "T1", &containerizer.Termination{Status: 15, Destroyed: true})
		p.want("update T1 TASK_KILLED SOURCE_EXECUTOR", "master EXECUTOR_EXITED T1 status=15")
	})
}

// SHUTDOWN_EXECUTOR: the executor is told, and its container is killed
// when the shutdown grace period passes without it exiting.
func TestPureShutdownExecutorGrace(t *testing.T) {
	p := newPureAgent(t)
	task := pureCustomTask("T1", "E1")
	task.Executor.ShutdownGracePeriod = &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(2 * time.Second))}
	p.runTask(runTaskEv(fwInfo("F1"), task))
	p.subscribe("F1", "E1")
	p.take()
	p.shutdownExecutor(p.executor("F1", "E1"))
	p.want("to E1 SHUTDOWN")
	p.advance(time.Second)
	p.want()
	p.advance(time.Second)
	p.want("destroy E1 grace=0s")
	p.exited("F1", "E1", &containerizer.Termination{Status: 9, Destroyed: true})
	p.want("update T1 TASK_FAILED SOURCE_AGENT REASON_EXECUTOR_TERMINATED", "master EXECUTOR_EXITED E1 status=9")
	// The timer is gone with the executor: nothing more fires.
	p.advance(time.Hour)
	p.want()
}

// An executor's end gives every task without a terminal update exactly
// one, chosen by why it ended; acknowledged terminal updates retire the
// task, then the executor, then the framework, each removing its
// checkpoint.
func TestPureExecutorExitUpdates(t *testing.T) {
	p := newPureAgent(t)
	fw := fwInfo("F1")
	fw.Checkpoint = proto.Bool(true)
	p.runTask(runTaskEv(fw, pureCustomTask("T1", "E1")))
	p.runTask(runTaskEv(fw, pureCustomTask("T2", "E1")))
	p.runTask(runTaskEv(fw, pureCustomTask("T3", "E1")))
	p.subscribe("F1", "E1")
	p.executorSays("F1", "E1", "T1", mesos.TaskState_TASK_FINISHED)
	p.executorSays("F1", "E1", "T2", mesos.TaskState_TASK_RUNNING)
	p.executorSays("F1", "E1", "T3", mesos.TaskState_TASK_RUNNING)
	p.take()
	p.killTask(killTaskEv("F1", "T3", 0))
	p.take()

	p.exited("F1", "E1", &containerizer.Termination{Status: 1, Message: "exit status 1"})
	p.want(
		// T1 already finished; T2 was running; T3 was being killed.
		"update T2 TASK_FAILED SOURCE_AGENT REASON_EXECUTOR_TERMINATED checkpointed",
		"update T3 TASK_KILLED SOURCE_AGENT REASON_EXECUTOR_TERMINATED checkpointed",
		"master EXECUTOR_EXITED E1 status=1",
	)
	e := p.executor("F1", "E1")
	if got := e.tasks["T2"].t.GetStatuses(); got[len(got)-1].GetMessage() != "Abnormal executor termination: exit status 1" {
		t.Fatalf("T2's message: %q", got[len(got)-1].GetMessage())
	}
	// A second report of the same end changes nothing.
	p.exited("F1", "E1", &containerizer.Termination{Status: 1})
	p.want()

	for _, tid := range []string{"T1", "T2"} {
		p.acknowledge(ackEv("F1", tid, p.upd.lastUUID("F1", tid)))
		p.want("forget task " + tid)
	}
	p.acknowledge(ackEv("F1", "T3", p.upd.lastUUID("F1", "T3")))
	p.want("forget task T3", "forget executor E1", "forget framework F1")
	if len(p.frameworks) != 0 || len(p.completedF) != 1 {
		t.Fatalf("frameworks %d completed %d", len(p.frameworks), len(p.completedF))
	}
}

// A container that hit its memory limit fails its tasks with the
// limitation's reason, whatever else happened.
func TestPureExecutorExitLimitation(t *testing.T) {
	p := newPureAgent(t)
	p.runTask(runTaskEv(fwInfo("F1"), pureCustomTask("T1", "E1")))
	p.subscribe("F1", "E1")
	p.executorSays("F1", "E1", "T1", mesos.TaskState_TASK_RUNNING)
	p.take()
	p.exited("F1", "E1", &containerizer.Termination{Status: 9, Limitation: &containerizer.Limitation{
		Reason: mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY, Message: "Memory limit exceeded"}})
	p.want("update T1 TASK_FAILED SOURCE_AGENT REASON_CONTAINER_LIMITATION_MEMORY", "master EXECUTOR_EXITED E1 status=9")
}

// Fencing at the agent (DESIGN.md "Fencing"): work events from a master
// older than the highest epoch seen are never acted on.
func TestPureStaleMasterEventsAreNotRun(t *testing.T) {
	p := newPureAgent(t)
	rs := &recordingSession{}
	p.sess.sink = rs
	p.sess.attempt, p.sess.epoch = 3, 5
	run := func(attempt, epoch uint64, tid string) {
		p.onMasterEvent(attempt, &protocol.AgentEvent{
			Type: protocol.AgentEvent_RUN_TASK.Enum(), Epoch: proto.Uint64(epoch),
			RunTask: runTaskEv(fwInfo("F1"), pureCustomTask(tid, "E-"+tid)),
		})
	}
	run(3, 4, "T-stale-epoch")
	run(2, 5, "T-old-stream")
	p.want()
	run(3, 5, "T1")
	if len(p.take()) == 0 || p.frameworks["F1"].executors["E-T1"] == nil {
		t.Fatal("a current RUN_TASK was not run")
	}
	run(3, 6, "T2")
	if rs.take()[0] != "checkpoint-epoch 6" || p.frameworks["F1"].executors["E-T2"] == nil {
		t.Fatal("a newer master's RUN_TASK: epoch not adopted or task not run")
	}
	run(3, 5, "T3")
	if p.frameworks["F1"].executors["E-T3"] != nil {
		t.Fatal("ran a task of the superseded epoch")
	}
}

// SHUTDOWN_FRAMEWORK: every executor goes, queued tasks get no updates,
// and the framework's unacknowledged updates are dropped.
func TestPureShutdownFramework(t *testing.T) {
	p := newPureAgent(t)
	p.runTask(runTaskEv(fwInfo("F1"), pureCustomTask("T1", "E1")))
	p.subscribe("F1", "E1")
	p.runTask(runTaskEv(fwInfo("F1"), pureCustomTask("T2", "E2")))
	e2 := p.executor("F1", "E2")
	p.launched(e2, containerizer.Container{ID: e2.containerID})
	p.take()
	p.shutdownFramework("F1")
	p.want("to E1 SHUTDOWN", "destroy E2 grace=0s")
	p.exited("F1", "E1", &containerizer.Termination{})
	p.want("master EXECUTOR_EXITED E1 status=0", "forget executor E1")
	p.exited("F1", "E2", &containerizer.Termination{Destroyed: true})
	p.want("master EXECUTOR_EXITED E2 status=0", "forget executor E2", "cleanup-updates F1", "forget framework F1")
}
