package command

import (
	mesos "mezzo/api/mesos"
	"mezzo/executor"
	"mezzo/executor/health"
	"mezzo/executor/internal/builtin"
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
	hc := builtin.NewChecker(c, task, env, e.cfg.Sandbox, e.logf)
	if hc == nil {
		return
	}
	e.checker = hc
	builtin.StartChecker(c, hc, func(r health.Result) { e.healthResult(c, hc, r) })
}

// healthResult runs on the loop for each Result of checker hc.
func (e *commandExecutor) healthResult(c *executor.Client, hc *health.Checker, r health.Result) {
	t := e.task
	// A result from a checker already stopped (the task is being killed or
	// has ended) must not follow the kill with a TASK_RUNNING.
	if e.checker != hc || t == nil || t.Exited || t.Killing {
		return
	}
	builtin.LogResult(e.logf, t.ID(), r)
	e.send(c, builtin.HealthStatus(t.Info.GetTaskId(), r.Healthy))
	if r.KillTask {
		e.logf("killing task %s after %d consecutive failed health checks", t.ID(), r.ConsecutiveFailures)
		e.killedByHealthCheck = true
		e.kill(c, mesos.KillGracePeriod(nil, t.Info))
	}
}

// stopHealthCheck ends health checking (on kill and on exit).
func (e *commandExecutor) stopHealthCheck() {
	if e.checker != nil {
		e.checker.Stop()
		e.checker = nil
	}
}
