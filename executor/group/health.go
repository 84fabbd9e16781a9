package group

import (
	mesos "mezzo/api/mesos"
	"mezzo/executor"
	"mezzo/executor/health"
	"mezzo/executor/internal/builtin"
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
	m.checker = builtin.NewChecker(c, m.info, env, dir, e.logf)
}

func (e *groupExecutor) startHealthCheck(c *executor.Client, m *member) {
	hc := m.checker
	if hc == nil {
		return
	}
	builtin.StartChecker(c, hc, func(r health.Result) { e.healthResult(c, m, hc, r) })
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
	builtin.LogResult(e.logf, id, r)
	e.send(c, builtin.HealthStatus(m.info.GetTaskId(), r.Healthy))
	if r.KillTask {
		e.logf("killing task %s after %d consecutive failed health checks", id, r.ConsecutiveFailures)
		e.unhealthy = true
		e.kill(c, m, mesos.KillGracePeriod(nil, m.info))
	}
}

// stopHealthCheck ends m's health checking.
func (m *member) stopHealthCheck() {
	if m.checker != nil {
		m.checker.Stop()
		m.checker = nil
	}
}
