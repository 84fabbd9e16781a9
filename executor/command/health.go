package command

import (
	"context"
	"os"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/executor"
	"mezzo/executor/health"
	"mezzo/executor/internal/proc"
)

// Health checking, as Mesos's command executor does it: the task's
// health_check starts once the task runs; every health Result becomes a
// TASK_RUNNING update with `healthy` set and reason
// REASON_TASK_HEALTH_CHECK_STATUS_UPDATED; a Result asking for it kills the
// task (with the task's kill policy), and the terminal update then carries
// healthy=false. Checking stops as soon as a kill starts.

// startHealthCheck runs the task's health check, if it has one. env is the
// task's environment; the check runs in the sandbox.
func (e *commandExecutor) startHealthCheck(c *executor.Client, task *mesos.TaskInfo, env []string) {
	if task.HealthCheck == nil {
		return
	}
	hc, err := health.New(task.GetHealthCheck(), health.Options{
		Clock:  c.Clock(),
		Env:    env,
		Dir:    e.cfg.Sandbox,
		Output: os.Stderr,
	})
	if err != nil {
		// The master validates health checks; Mesos's executor only logs.
		e.logf("not health checking task %s: %v", task.GetTaskId().GetValue(), err)
		return
	}
	e.checker = hc
	hc.Start(context.Background(), func(r health.Result) {
		c.Post(func() { e.healthResult(c, hc, r) })
	})
}

// healthResult runs on the loop for each Result of checker hc.
func (e *commandExecutor) healthResult(c *executor.Client, hc *health.Checker, r health.Result) {
	t := e.task
	// A result from a checker already stopped (the task is being killed or
	// has ended) must not follow the kill with a TASK_RUNNING.
	if e.checker != hc || t == nil || t.Exited || t.Killing {
		return
	}
	if r.Healthy {
		e.logf("task %s is healthy", t.ID())
	} else {
		e.logf("task %s is not healthy: %s (%d consecutive failures)", t.ID(), r.Message, r.ConsecutiveFailures)
	}
	st := &mesos.TaskStatus{
		TaskId:  t.Info.GetTaskId(),
		State:   mesos.TaskState_TASK_RUNNING.Enum(),
		Reason:  mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED.Enum(),
		Healthy: proto.Bool(r.Healthy),
	}
	if _, err := c.Update(st); err != nil {
		e.logf("%v", err)
	}
	if r.KillTask {
		e.logf("killing task %s after %d consecutive failed health checks", t.ID(), r.ConsecutiveFailures)
		e.killedByHealthCheck = true
		e.kill(c, proc.GracePeriod(nil, t.Info))
	}
}

// stopHealthCheck ends health checking (on kill and on exit).
func (e *commandExecutor) stopHealthCheck() {
	if e.checker != nil {
		e.checker.Stop()
		e.checker = nil
	}
}
