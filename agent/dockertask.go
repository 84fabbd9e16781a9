package agent

import (
	"context"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/docker"
	"mezzo/api/mesos"
)

// Docker command tasks. A command task whose ContainerInfo has type DOCKER
// runs directly in a Docker container (docker.LaunchTask) when the agent
// has the docker containerizer: a direct task (directtask.go), the agent
// playing Mesos's docker executor. Its health check (HTTP and TCP checks)
// probes the host port a BRIDGE port mapping publishes (dockerhealth.go).

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
		"MESOS_SLAVE_ID=" + a.sess.agentID,
		"MESOS_AGENT_ENDPOINT=" + a.endpoint,
	}
}

// launchDockerTask starts a Docker task's container (startContainer's
// goroutine); cfg.Env is its dockerTaskEnv.
func (a *Agent) launchDockerTask(ctx context.Context, cfg containerizer.ContainerConfig, t *mesos.TaskInfo) (containerizer.Container, error) {
	return a.docker.LaunchTask(ctx, docker.TaskLaunch{
		ContainerID: cfg.ContainerID,
		Sandbox:     cfg.Dir,
		Task:        t,
		Env:         cfg.Env,
		Volumes:     cfg.Volumes,
	})
}
