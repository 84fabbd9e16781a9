package agent

import (
	"context"
	"fmt"
	"time"

	"mezzo/api/mesos"
	"mezzo/executor/health"

	"google.golang.org/protobuf/proto"
)

// Health checks of Docker command tasks, run by the agent with the same
// checker (executor/health) and semantics as the built-in executors: every
// Result is a TASK_RUNNING update with `healthy` set and reason
// REASON_TASK_HEALTH_CHECK_STATUS_UPDATED, and a Result asking for it kills
// the task (the terminal TASK_KILLED then carries healthy=false).
//
// Mesos's docker executor runs the checks inside the container's network
// namespace (and COMMAND checks with `docker exec`). The agent probes from
// the host instead: HTTP and TCP checks of a HOST-networked container go to
// 127.0.0.1:port as is; with BRIDGE or USER networking the check's port is
// the container port, so the probe goes to the host port its port mapping
// publishes, and a check whose port is not published is not run. COMMAND
// checks (which would need to run in the container) and checks of NONE
// networking are not run either; the agent logs why.

// dockerHealthCheck returns the check to run from the host for a Docker
// task, or an error saying why it cannot be run.
func dockerHealthCheck(t *mesos.TaskInfo) (*mesos.HealthCheck, error) {
	hc := proto.Clone(t.GetHealthCheck()).(*mesos.HealthCheck)
	var port *uint32
	switch hc.GetType() {
	case mesos.HealthCheck_HTTP:
		port = hc.GetHttp().Port
	case mesos.HealthCheck_TCP:
		port = hc.GetTcp().Port
	default:
		return nil, fmt.Errorf("%s health checks of Docker tasks are not supported by mezzo (they would run in the container)", hc.GetType())
	}
	if port == nil {
		return nil, fmt.Errorf("the health check has no port")
	}
	di := t.GetContainer().GetDocker()
	switch di.GetNetwork() {
	case mesos.ContainerInfo_DockerInfo_HOST:
		return hc, nil
	case mesos.ContainerInfo_DockerInfo_NONE:
		return nil, fmt.Errorf("a container with NONE networking cannot be probed from the agent")
	}
	for _, pm := range di.GetPortMappings() {
		proto := pm.GetProtocol()
		if pm.GetContainerPort() == *port && (proto == "" || proto == "tcp") {
			host := pm.GetHostPort()
			if hc.Http != nil {
				hc.Http.Port = &host
			} else {
				hc.Tcp.Port = &host
			}
			return hc, nil
		}
	}
	return nil, fmt.Errorf("the health check's port %d is not published by a tcp port mapping", *port)
}

// startDirectHealth starts a Docker task's health check, if it has one.
func (a *Agent) startDirectHealth(e *executor, t *task, launched time.Time) {
	if t.info.GetHealthCheck() == nil || e.health != nil {
		return
	}
	check, err := directHealthCheck(e, t.info)
	if err == nil {
		e.health, err = health.New(check, health.Options{Clock: a.clock, LaunchTime: launched})
	}
	if err != nil {
		a.log.Warn("not health checking the Docker task", "framework", e.fw.id, "task", t.t.GetTaskId().GetValue(), "err", err)
		return
	}
	hc := e.health
	hc.Start(context.Background(), func(r health.Result) {
		a.post(func() { a.directHealthResult(e, t, hc, r) })
	})
}

// directHealthResult handles one Result of checker hc (loop).
func (a *Agent) directHealthResult(e *executor, t *task, hc *health.Checker, r health.Result) {
	if e.health != hc || e.killing || t.terminal || e.phase != phaseRunning {
		return // a late result of a checker already stopped
	}
	if e.healthRecovered {
		// The checker was restarted after an agent restart: its first
		// success is news only if the last health the agent still knows
		// of (unacknowledged updates) was a failure.
		e.healthRecovered = false
		if h := lastHealth(t); r.Healthy && (h == nil || *h) {
			return
		}
	}
	a.directUpdate(e, t, mesos.TaskState_TASK_RUNNING,
		mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED.Enum(), r.Message, proto.Bool(r.Healthy))
	if r.KillTask {
		a.log.Info("killing the Docker task after failed health checks", "framework", e.fw.id,
			"task", t.t.GetTaskId().GetValue(), "failures", r.ConsecutiveFailures)
		e.healthKilled = true
		a.killDirectTask(e, t, nil)
	}
}

// stopDirectHealth ends health checking (kill, termination).
func (a *Agent) stopDirectHealth(e *executor) {
	if e.health != nil {
		e.health.Stop()
		e.health = nil
	}
}

// lastHealth is the `healthy` of the task's latest status that has one
// (nil if none has).
func lastHealth(t *task) *bool {
	for i := len(t.t.Statuses) - 1; i >= 0; i-- {
		if h := t.t.Statuses[i].Healthy; h != nil {
			return h
		}
	}
	return nil
}
