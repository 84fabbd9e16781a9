package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
	"mezzo/executor/health"
)

// Direct tasks. The agent can play a command task's executor itself, with
// no executor process: the task's own command is the container's process,
// and the agent sends what the executor would (TASK_STARTING once the
// launch begins, TASK_RUNNING once the process runs, health check results,
// TASK_KILLING, and the terminal update from the container's termination:
// TASK_FINISHED for exit status 0, TASK_FAILED "Command exited with status
// N" or "Command terminated with signal <Name>", TASK_KILLED after a kill),
// with SOURCE_EXECUTOR as the executor's updates. A kill goes through the
// containerizer's Destroy with the kill policy's grace period (SIGTERM to
// the process group, SIGKILL after it), as the executors do. The executor
// record (kind command) keeps the agent's bookkeeping, sandbox layout,
// checkpointing and recovery unchanged.
//
// Two kinds of task run so:
//   - Docker command tasks (dockertask.go), as Mesos's docker executor.
//   - With Config.DirectCommandTasks, mesos-containerizer command tasks of
//     frameworks that do not checkpoint and that need nothing only a
//     process inside the container can do (a COMMAND health check, a
//     `check`, max_completion_time, a ContainerInfo). A command executor
//     process cost more CPU than the task it ran for short tasks (a Go
//     runtime start, an HTTP connection, three updates and their acks), and
//     what it adds over the agent is surviving an agent restart, which
//     tasks of frameworks that do not checkpoint never do: recovery kills
//     them either way.

// directStarting sends TASK_STARTING for the tasks being launched (loop).
func (a *core) directStarting(e *executor) {
	if e.phase != phaseRegistering {
		return
	}
	for _, t := range e.liveTasks() {
		a.directUpdate(e, t, mesos.TaskState_TASK_STARTING, nil, "", nil)
	}
}

// directLaunched: the container runs (loop). Its task is RUNNING; a kill
// that arrived meanwhile is carried out now.
func (a *Agent) directLaunched(e *executor) {
	if e.phase == phaseTerminating || e.phase == phaseTerminated {
		if e.phase == phaseTerminating {
			a.destroyContainer(e, a.shutdownGrace(e))
		}
		return
	}
	e.phase = phaseRunning
	e.queue = nil
	for _, t := range e.liveTasks() {
		t.queued = false
		a.directUpdate(e, t, mesos.TaskState_TASK_RUNNING, nil, "", nil)
		a.startDirectHealth(e, t, a.clock.Now())
	}
}

// directUpdate sends a status of a direct task as its executor would.
func (a *core) directUpdate(e *executor, t *task, state mesos.TaskState, reason *mesos.TaskStatus_Reason, msg string, healthy *bool) {
	id := uuid.New()
	st := &mesos.TaskStatus{
		TaskId:     t.t.GetTaskId(),
		State:      state.Enum(),
		Source:     mesos.TaskStatus_SOURCE_EXECUTOR.Enum(),
		Reason:     reason,
		AgentId:    agentIDProto(a.sess.agentID),
		ExecutorId: e.info.GetExecutorId(),
		Timestamp:  proto.Float64(float64(a.clock.Now().UnixNano()) / 1e9),
		Uuid:       id[:],
		Healthy:    healthy,
		ContainerStatus: &mesos.ContainerStatus{
			ContainerId: &mesos.ContainerID{Value: proto.String(e.containerID)},
		},
	}
	if msg != "" {
		st.Message = proto.String(msg)
	}
	if pid := e.pid; pid > 0 && state == mesos.TaskState_TASK_RUNNING {
		st.ContainerStatus.ExecutorPid = proto.Uint32(uint32(pid))
	}
	a.handleStatus(e.fw.id, e.fw.checkpoint(), e, st)
}

// killDirectTask kills a running direct task: its health check stops,
// TASK_KILLING goes to frameworks with that capability, and the container
// gets its stop signal, then SIGKILL after the grace period.
func (a *core) killDirectTask(e *executor, t *task, policy *mesos.KillPolicy) {
	if e.phase != phaseRunning || e.killing {
		return
	}
	e.killing = true
	a.stopDirectHealth(e)
	if e.fw.hasCapability(mesos.FrameworkInfo_Capability_TASK_KILLING_STATE) {
		a.directUpdate(e, t, mesos.TaskState_TASK_KILLING, nil, "", nil)
	}
	a.destroyContainer(e, mesos.KillGracePeriod(policy, t.info))
}

// directTerminal reports the end of a direct task from its container's
// termination, as Mesos's command and docker executors do: TASK_KILLED
// when it was killed (healthy=false when for failing its health check),
// TASK_FINISHED for exit code 0, TASK_FAILED otherwise. It reports false when the agent's
// generic rules apply instead (a limitation, or the agent ended it).
func (a *core) directTerminal(e *executor, t *task, term *containerizer.Termination) bool {
	if !e.direct || term == nil || term.Limitation != nil || e.pending != nil {
		return false
	}
	var healthy *bool
	state := mesos.TaskState_TASK_FAILED
	switch {
	case e.killing || e.killsSent[t.t.GetTaskId().GetValue()]:
		state = mesos.TaskState_TASK_KILLED
		if e.healthKilled {
			healthy = proto.Bool(false)
		}
	case term.ExitCode == 0 && !term.Destroyed:
		state = mesos.TaskState_TASK_FINISHED
	}
	a.directUpdate(e, t, state, nil, term.Message, healthy)
	return true
}

// runsDirect decides whether a new executor is a direct mesos-containerizer
// task (see the comment at the top of this file).
func (a *Agent) runsDirect(fw *framework, kind executorKind, first launchItem) bool {
	if !a.cfg.DirectCommandTasks || kind != kindCommand || first.group != nil || fw.checkpoint() {
		return false
	}
	t := first.task
	if t.GetContainer() != nil || t.GetCheck() != nil || t.GetMaxCompletionTime() != nil {
		return false
	}
	hc := t.GetHealthCheck()
	if hc == nil {
		return true
	}
	// The agent probes HTTP and TCP checks itself; COMMAND checks run in
	// the container.
	return hc.Type != nil && (hc.GetType() == mesos.HealthCheck_HTTP || hc.GetType() == mesos.HealthCheck_TCP)
}

// directCommand makes cfg run task t's command in place of the command
// executor, as the executor would start it: `/bin/sh -c value` (shell, the
// default) or value with arguments, in the executor's environment (which
// holds the command's own) plus MESOS_ALLOCATION_ROLE.
func directCommand(cfg *containerizer.ContainerConfig, t *mesos.TaskInfo) {
	cmd := t.GetCommand()
	if cmd.Shell == nil || cmd.GetShell() {
		cfg.Path, cfg.Args = "/bin/sh", []string{"sh", "-c", cmd.GetValue()}
	} else {
		cfg.Path = resolveProgram(cmd.GetValue(), cfg.Env, cfg.Dir)
		cfg.Args = append([]string(nil), cmd.GetArguments()...)
		if len(cfg.Args) == 0 {
			cfg.Args = []string{cmd.GetValue()}
		}
	}
	for _, r := range t.GetResources() {
		if role := r.GetAllocationInfo().GetRole(); role != "" {
			cfg.Env = append(cfg.Env, "MESOS_ALLOCATION_ROLE="+role)
			break
		}
	}
}

// directHealthCheck returns the check the agent runs for a direct task:
// HTTP and TCP checks probe 127.0.0.1:port (the task shares the host's
// network), a Docker task's go to its published port (dockerHealthCheck).
func directHealthCheck(e *executor, t *mesos.TaskInfo) (*mesos.HealthCheck, error) {
	if e.docker {
		return dockerHealthCheck(t)
	}
	switch hc := t.GetHealthCheck(); hc.GetType() {
	case mesos.HealthCheck_HTTP, mesos.HealthCheck_TCP:
		return hc, nil
	default:
		return nil, fmt.Errorf("%s health checks need the command executor", hc.GetType())
	}
}

// Health checks of direct tasks are run by the agent with the same checker
// (executor/health) and semantics as the built-in executors: every Result
// is a TASK_RUNNING update with `healthy` set and reason
// REASON_TASK_HEALTH_CHECK_STATUS_UPDATED, and a Result asking for it kills
// the task (the terminal TASK_KILLED then carries healthy=false).

// startDirectHealth starts a direct task's health check, if it has one.
func (a *Agent) startDirectHealth(e *executor, t *task, launched time.Time) {
	if t.info.GetHealthCheck() == nil || e.health != nil {
		return
	}
	check, err := directHealthCheck(e, t.info)
	if err == nil {
		e.health, err = health.New(check, health.Options{Clock: a.clock, LaunchTime: launched})
	}
	if err != nil {
		a.log.Warn("not health checking the task", "framework", e.fw.id, "task", t.t.GetTaskId().GetValue(), "err", err)
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
		a.log.Info("killing the task after failed health checks", "framework", e.fw.id,
			"task", t.t.GetTaskId().GetValue(), "failures", r.ConsecutiveFailures)
		e.healthKilled = true
		a.killDirectTask(e, t, nil)
	}
}

// stopDirectHealth ends health checking (kill, termination).
func (a *core) stopDirectHealth(e *executor) {
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
