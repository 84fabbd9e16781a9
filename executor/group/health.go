package group

import (
	"context"
	"os"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/executor"
	"mezzo/executor/health"
	"mezzo/executor/internal/proc"
)

// Health checking, as Mesos's default executor does it: each task's
// health_check starts once the task is RUNNING; every Result becomes a
// TASK_RUNNING update with `healthy` set and reason
// REASON_TASK_HEALTH_CHECK_STATUS_UPDATED, sent only while subscribed; a
// Result asking for it kills the task (and so, by the group policy, its
// group). From then on the executor is "unhealthy": every terminal update
// it sends carries healthy=false, as Mesos's does. A task's checking stops
// when a kill of it starts.

// newHealthCheck prepares the task's health check, if it has one; env and
// dir are the task's environment and sandbox. It starts with startHealthCheck.
func (e *groupExecutor) newHealthCheck(c *executor.Client, m *member, env []string, dir string) {
	if m.info.HealthCheck == nil {
		return
	}
	hc, err := health.New(m.info.GetHealthCheck(), health.Options{
		Clock:  c.Clock(),
		Env:    env,
		Dir:    dir,
		Output: os.Stderr,
	})
	if err != nil {
		// The master validates health checks; Mesos's executor only logs.
		e.logf("not health checking task %s: %v", m.info.GetTaskId().GetValue(), err)
		return
	}
	m.checker = hc
}

func (e *groupExecutor) startHealthCheck(c *executor.Client, m *member) {
	hc := m.checker
	if hc == nil {
		return
	}
	hc.Start(context.Background(), func(r health.Result) {
		c.Post(func() { e.healthResult(c, m, hc, r) })
	})
}

// healthResult runs on the loop for each Result of m's checker hc.
func (e *groupExecutor) healthResult(c *executor.Client, m *member, hc *health.Checker, r health.Result) {
	id := m.info.GetTaskId().GetValue()
	if m.checker != hc || m.terminal || m.task == nil || m.task.Killing {
		return // checking stopped: the task is being killed or has ended
	}
	if !c.Subscribed() {
		e.logf("ignoring health result for task %s: not connected to the agent", id)
		return
	}
	if r.Healthy {
		e.logf("task %s is healthy", id)
	} else {
		e.logf("task %s is not healthy: %s (%d consecutive failures)", id, r.Message, r.ConsecutiveFailures)
	}
	e.send(c, &mesos.TaskStatus{
		TaskId:  m.info.GetTaskId(),
		State:   mesos.TaskState_TASK_RUNNING.Enum(),
		Reason:  mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED.Enum(),
		Healthy: proto.Bool(r.Healthy),
	})
	if r.KillTask {
		e.logf("killing task %s after %d consecutive failed health checks", id, r.ConsecutiveFailures)
		e.unhealthy = true
		e.kill(c, m, proc.GracePeriod(nil, m.info))
	}
}

// stopHealthCheck ends m's health checking.
func (m *member) stopHealthCheck() {
	if m.checker != nil {
		m.checker.Stop()
		m.checker = nil
	}
}
