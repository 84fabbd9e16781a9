package agent

import (
	"context"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/docker"
	"mezzo/api/mesos"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

// Docker command tasks. A command task whose ContainerInfo has type DOCKER
// runs directly in a Docker container (docker.LaunchTask) when the agent
// has the docker containerizer: there is no executor process, and the agent
// plays Mesos's docker executor: TASK_STARTING once the launch begins,
// TASK_RUNNING once the container runs, the task's health check (HTTP and
// TCP checks, against the host port a BRIDGE port mapping publishes), a
// kill through Destroy with the kill policy's grace period (TASK_KILLING
// first for frameworks that asked for it), and the terminal update from
// the container's termination. Those updates carry SOURCE_EXECUTOR, as the
// docker executor's do. The executor record (kind command, docker set)
// keeps the agent's bookkeeping, checkpointing and recovery unchanged.

// defaultKillGrace is the grace period of a kill without a kill policy
// (Mesos's executors' default).
const defaultKillGrace = 3 * time.Second

// isDocker tells whether a ContainerInfo asks for a Docker container. The
// type field is tested itself: GetType of an unset type is DOCKER.
func isDocker(ci *mesos.ContainerInfo) bool {
	return ci != nil && ci.Type != nil && ci.GetType() == mesos.ContainerInfo_DOCKER
}

// dockerTaskEnv is the base environment of a Docker command task: the
// agent's identifiers for it. Unlike an executor's environment it has no
// PATH (the image's applies) and no LIBPROCESS variables; the task's own
// variables come from its CommandInfo, and the containerizer adds
// MESOS_SANDBOX and MESOS_CONTAINER_NAME.
func (a *Agent) dockerTaskEnv(fw *framework, e *executor, t *mesos.TaskInfo) []string {
	return []string{
		"MESOS_FRAMEWORK_ID=" + fw.id,
		"MESOS_EXECUTOR_ID=" + e.id,
		"MESOS_TASK_ID=" + t.GetTaskId().GetValue(),
		"MESOS_SLAVE_ID=" + a.agentID,
		"MESOS_AGENT_ENDPOINT=" + a.endpoint,
	}
}

// launchDockerTask starts the task's container (startContainer's
// goroutine), after TASK_STARTING.
func (a *Agent) launchDockerTask(ctx context.Context, e *executor, cfg containerizer.ContainerConfig, t *mesos.TaskInfo, env []string) (containerizer.Container, error) {
	a.post(func() { a.dockerStarting(e) })
	return a.docker.LaunchTask(ctx, docker.TaskLaunch{
		ContainerID: cfg.ContainerID,
		Sandbox:     cfg.Dir,
		Task:        t,
		Env:         env,
	})
}

// dockerStarting sends TASK_STARTING for the tasks being launched (loop).
func (a *Agent) dockerStarting(e *executor) {
	if e.phase != phaseRegistering {
		return
	}
	for _, t := range e.liveTasks() {
		a.dockerUpdate(e, t, mesos.TaskState_TASK_STARTING, nil, "", nil)
	}
}

// dockerLaunched: the container runs (loop). Its tasks are delivered and
// RUNNING; a kill that arrived meanwhile is carried out now.
func (a *Agent) dockerLaunched(e *executor) {
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
		a.dockerUpdate(e, t, mesos.TaskState_TASK_RUNNING, nil, "", nil)
		a.startDockerHealth(e, t, a.clock.Now())
	}
}

// dockerUpdate sends a status of a Docker task as its executor would.
func (a *Agent) dockerUpdate(e *executor, t *task, state mesos.TaskState, reason *mesos.TaskStatus_Reason, msg string, healthy *bool) {
	id := uuid.New()
	st := &mesos.TaskStatus{
		TaskId:     t.t.GetTaskId(),
		State:      state.Enum(),
		Source:     mesos.TaskStatus_SOURCE_EXECUTOR.Enum(),
		Reason:     reason,
		AgentId:    agentIDProto(a.agentID),
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

// killDockerTask kills a running Docker task: its health check stops,
// TASK_KILLING goes to frameworks with that capability, and the container
// gets its stop signal, then SIGKILL after the grace period.
func (a *Agent) killDockerTask(e *executor, t *task, policy *mesos.KillPolicy) {
	if e.phase != phaseRunning || e.killing {
		return
	}
	e.killing = true
	a.stopDockerHealth(e)
	if e.fw.hasCapability(mesos.FrameworkInfo_Capability_TASK_KILLING_STATE) {
		a.dockerUpdate(e, t, mesos.TaskState_TASK_KILLING, nil, "", nil)
	}
	a.destroyContainer(e, killGrace(policy, t.info))
}

// killGrace is the grace period of a kill: the KILL's policy, else the
// task's, else defaultKillGrace.
func killGrace(override *mesos.KillPolicy, t *mesos.TaskInfo) time.Duration {
	if gp := override.GetGracePeriod(); gp != nil {
		return time.Duration(max(gp.GetNanoseconds(), 0))
	}
	if gp := t.GetKillPolicy().GetGracePeriod(); gp != nil {
		return time.Duration(max(gp.GetNanoseconds(), 0))
	}
	return defaultKillGrace
}

// dockerTerminal reports the end of a Docker task from its container's
// termination, as Mesos's docker executor: TASK_KILLED when it was killed
// (healthy=false when for failing its health check), TASK_FINISHED for
// exit code 0, TASK_FAILED otherwise. It reports false when the agent's
// generic rules apply instead (a limitation, or the agent ended it).
func (a *Agent) dockerTerminal(e *executor, t *task, term *containerizer.Termination) bool {
	if !e.docker || term == nil || term.Limitation != nil || e.pending != nil {
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
	a.dockerUpdate(e, t, state, nil, term.Message, healthy)
	return true
}
