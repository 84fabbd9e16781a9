package agent

import (
	"errors"
	"testing"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// sizedTask is a custom executor's task with resources, on an executor
// holding cpus:0.1;mem:32 itself.
func sizedTask(id, res string) *mesos.TaskInfo {
	t := pureCustomTask(id, "E1")
	t.Resources = resources.MustParse(res).AllocatedTo("*").Proto()
	t.Executor.Resources = resources.MustParse("cpus:0.1;mem:32").AllocatedTo("*").Proto()
	return t
}

// runningE1 is an agent whose executor E1 runs task T1 (cpus:1;mem:128).
func runningE1(t *testing.T) (*pureAgent, *executor) {
	p := newPureAgent(t)
	p.runTask(runTaskEv(fwInfo("F1"), sizedTask("T1", "cpus:1;mem:128")))
	e := p.executor("F1", "E1")
	p.launched(e, containerizer.Container{ID: e.containerID, Pid: 42})
	p.subscribe("F1", "E1")
	p.take()
	return p, e
}

// A running executor's container follows its tasks, as Mesos's agent
// updates its containerizer: it grows before a task that joins is
// delivered, and shrinks when one of several tasks ends (the last one
// ending takes the executor with it; nothing to resize).
func TestPureContainerFollowsTasks(t *testing.T) {
	p, _ := runningE1(t)
	p.runTask(runTaskEv(fwInfo("F1"), sizedTask("T2", "cpus:2;mem:256")))
	p.want(
		"resize E1 cpus:3.1; mem:416",
		"checkpoint task T2",
		"to E1 LAUNCH T2",
	)
	p.executorSays("F1", "E1", "T1", mesos.TaskState_TASK_FINISHED)
	p.want(
		"resize E1 cpus:2.1; mem:288",
		"update T1 TASK_FINISHED SOURCE_EXECUTOR",
		"to E1 ACKNOWLEDGED T1",
	)
	p.executorSays("F1", "E1", "T2", mesos.TaskState_TASK_FINISHED)
	p.want(
		"update T2 TASK_FINISHED SOURCE_EXECUTOR",
		"to E1 ACKNOWLEDGED T2",
	)
}

// A container that cannot grow refuses the task that would not fit:
// TASK_FAILED with REASON_CONTAINER_UPDATE_FAILED, never delivered, and
// the executor's other task goes on.
func TestPureContainerUpdateFails(t *testing.T) {
	p, e := runningE1(t)

	p.updateErr = errors.New("cgroup gone")
	p.runTask(runTaskEv(fwInfo("F1"), sizedTask("T2", "cpus:2;mem:256")))
	p.want(
		"resize E1 cpus:3.1; mem:416",
		"update T2 TASK_FAILED SOURCE_AGENT REASON_CONTAINER_UPDATE_FAILED",
	)
	if e.tasks["T2"] != nil || len(e.liveTasks()) != 1 {
		t.Fatalf("executor holds %v", e.taskOrder)
	}
}

// Tasks that join while the container is launching are sized for once it
// has launched; if it cannot grow they fail before delivery, and the task
// it was launched for is delivered alone.
func TestPureContainerSizedAfterLaunch(t *testing.T) {
	for _, fail := range []bool{false, true} {
		p := newPureAgent(t)
		p.runTask(runTaskEv(fwInfo("F1"), sizedTask("T1", "cpus:1;mem:128")))
		p.runTask(runTaskEv(fwInfo("F1"), sizedTask("T2", "cpus:2;mem:256")))
		p.take()
		if fail {
			p.updateErr = errors.New("cgroup gone")
		}
		e := p.executor("F1", "E1")
		p.launched(e, containerizer.Container{ID: e.containerID, Pid: 42})
		if !fail {
			p.want("resize E1 cpus:3.1; mem:416")
			p.subscribe("F1", "E1")
			p.want("to E1 SUBSCRIBED", "to E1 LAUNCH T1", "to E1 LAUNCH T2")
			continue
		}
		p.want(
			"resize E1 cpus:3.1; mem:416",
			"update T2 TASK_FAILED SOURCE_AGENT REASON_CONTAINER_UPDATE_FAILED",
		)
		p.subscribe("F1", "E1")
		p.want("to E1 SUBSCRIBED", "to E1 LAUNCH T1")
	}
}
