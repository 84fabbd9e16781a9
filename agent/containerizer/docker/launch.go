package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
)

// Accepts reports whether cfg is for this containerizer: its executor has
// a ContainerInfo of type DOCKER. A composing containerizer uses it to
// route launches.
func (d *Docker) Accepts(cfg containerizer.ContainerConfig) bool {
	// GetType of an absent ContainerInfo (or unset type) is DOCKER, the
	// enum's first value: test the field itself.
	ci := cfg.ExecutorInfo.GetContainer()
	return ci != nil && ci.Type != nil && ci.GetType() == mesos.ContainerInfo_DOCKER
}

// Launch implements containerizer.Containerizer for executors: the
// executor's command (ExecutorInfo.command, by Mesos's rules for Docker,
// not cfg.Path and cfg.Args) runs in a container made from
// ExecutorInfo.container, with cfg.Env (MESOS_SANDBOX and
// MESOS_CONTAINER_NAME set for the container), the sandbox cfg.Dir
// mounted at the sandbox directory, and cfg.Resources for cpu shares,
// memory and the ports that port mappings may use.
func (d *Docker) Launch(ctx context.Context, cfg containerizer.ContainerConfig) (containerizer.Container, error) {
	if cfg.ExecutorInfo.GetContainer() == nil {
		return containerizer.Container{}, fmt.Errorf("launch %s: 'executor_info.container' is missing", cfg.ContainerID)
	}
	return d.launch(ctx, &spec{
		containerID: cfg.ContainerID,
		sandbox:     cfg.Dir,
		container:   cfg.ExecutorInfo.GetContainer(),
		command:     cfg.ExecutorInfo.GetCommand(),
		env:         cfg.Env,
		resources:   cfg.Resources,
		volumes:     cfg.Volumes,
	})
}

// TaskLaunch is a command task to run directly in a Docker container (no
// executor process: the agent reports the task's status from the
// container's termination, as Mesos's docker executor would).
type TaskLaunch struct {
	// ContainerID names the container (the task's executor's container).
	ContainerID string
	// Sandbox is the host directory mounted at the sandbox directory and
	// receiving the stdout and stderr files. It must exist.
	Sandbox string
	// Task carries the DOCKER ContainerInfo (task.container), the command
	// (task.command: shell, value, arguments, environment) and the
	// resources (task.resources, task.limits).
	Task *mesos.TaskInfo
	// Env is the base environment ("K=V"); as in Mesos it wins over the
	// command's environment for duplicate names. MESOS_SANDBOX and
	// MESOS_CONTAINER_NAME are always set by the containerizer.
	Env []string
	// Volumes are the task's persistent volumes, bind-mounted at their
	// container paths (relative ones under the sandbox directory).
	Volumes []containerizer.Volume
}

// LaunchTask starts a command task's container. Wait reports its end;
// ExitCode 0 means TASK_FINISHED, Destroyed TASK_KILLED, anything else
// TASK_FAILED.
func (d *Docker) LaunchTask(ctx context.Context, tl TaskLaunch) (containerizer.Container, error) {
	t := tl.Task
	if t == nil {
		return containerizer.Container{}, fmt.Errorf("launch %s: no task", tl.ContainerID)
	}
	if t.GetContainer() == nil {
		return containerizer.Container{}, fmt.Errorf("launch %s: task %s has no 'container'", tl.ContainerID, t.GetTaskId().GetValue())
	}
	return d.launch(ctx, &spec{
		containerID: tl.ContainerID,
		sandbox:     tl.Sandbox,
		container:   t.GetContainer(),
		command:     t.GetCommand(),
		env:         tl.Env,
		resources:   t.GetResources(),
		limits:      t.GetLimits(),
		volumes:     tl.Volumes,
	})
}

func (d *Docker) launch(ctx context.Context, s *spec) (containerizer.Container, error) {
	fail := func(err error) (containerizer.Container, error) {
		return containerizer.Container{}, fmt.Errorf("launch %s: %w", s.containerID, err)
	}
	if s.containerID == "" {
		return containerizer.Container{}, errors.New("launch: 'container_id' is empty")
	}
	if st, err := os.Stat(s.sandbox); err != nil || !st.IsDir() || !filepath.IsAbs(s.sandbox) {
		return fail(fmt.Errorf("sandbox %q is not an absolute path to a directory", s.sandbox))
	}
	body, err := build(s, buildOptions{owner: d.owner, sandboxDir: d.sandboxDir, enableCFS: d.enableCFS, lowPriority: d.lowPriority})
	if err != nil {
		return fail(err)
	}
	d.mu.Lock()
	if d.live[s.containerID] != nil || d.terminated.Has(s.containerID) {
		d.mu.Unlock()
		return fail(containerizer.ErrDuplicate)
	}
	c := &ctr{id: s.containerID, name: containerName(s.containerID), sandbox: s.sandbox,
		done: make(chan struct{}), logsDone: make(chan struct{}), stopSignal: body.config.StopSignal}
	c.cpus, _ = scalar(s.resources, "cpus")
	c.memLimit = body.host.Memory
	c.cpuCapped = cpuCapped(body.host.Resources)
	d.live[s.containerID] = c // reserve the ID while launching
	d.mu.Unlock()

	if err := d.start(ctx, c, s, body); err != nil {
		d.mu.Lock()
		delete(d.live, s.containerID)
		d.mu.Unlock()
		return fail(err)
	}
	d.goBG(func() { d.follow(d.bg, c) })
	d.goBG(func() { d.reap(c) })
	return containerizer.Container{ID: c.id, Pid: c.pid, Started: c.started}, nil
}

// start makes sure the image is there, creates and starts the container.
// On error nothing is left behind.
func (d *Docker) start(ctx context.Context, c *ctr, s *spec, body *createSpec) error {
	if err := d.engine.negotiate(ctx); err != nil {
		return err
	}
	image := body.config.Image
	present, err := d.engine.imagePresent(ctx, image)
	if err != nil {
		return fmt.Errorf("inspecting image %q: %w", image, err)
	}
	if !present || s.container.GetDocker().GetForcePullImage() {
		if err := d.pull(ctx, c, image); err != nil {
			return fmt.Errorf("failed to pull image %q: %w", image, err)
		}
	}
	id, err := d.engine.create(ctx, c.name, body)
	if isConflict(err) {
		return fmt.Errorf("a Docker container named %q exists already: %w", c.name, err)
	}
	if err != nil {
		return fmt.Errorf("creating the Docker container: %w", err)
	}
	cleanup := func() {
		if err := d.engine.remove(context.WithoutCancel(ctx), id); err != nil {
			d.log.Warn("removing a container that failed to start", "container", c.id, "err", err)
		}
	}
	if err := d.engine.start(ctx, id); err != nil {
		cleanup()
		return fmt.Errorf("starting the Docker container: %w", err)
	}
	info, err := d.engine.inspect(ctx, id)
	if err != nil {
		_ = d.engine.kill(context.WithoutCancel(ctx), id, "SIGKILL")
		cleanup()
		return fmt.Errorf("inspecting the started container: %w", err)
	}
	d.mu.Lock()
	c.dockerID = id
	c.pid = info.State.Pid
	c.started = parseTime(info.State.StartedAt)
	if c.stopSignal == "" {
		c.stopSignal = info.Config.StopSignal
	}
	d.mu.Unlock()
	d.log.Info("launched Docker container", "container", c.id, "name", c.name, "image", image, "docker_id", id)
	return nil
}

// pull fetches the image with the credentials of its registry: those of a
// docker config file fetched into the sandbox, else --docker_config's. A
// failure says whose credentials were used.
func (d *Docker) pull(ctx context.Context, c *ctr, image string) error {
	auth := d.auth
	source := "--docker_config"
	sb, err := sandboxAuth(c.sandbox)
	if err != nil {
		return err
	}
	if sb != nil {
		auth, source = sb, "the sandbox's docker config"
	}
	header, host, err := auth.header(image)
	if err != nil {
		return err
	}
	if header == "" {
		d.log.Info("pulling image", "container", c.id, "image", image)
		return d.engine.pull(ctx, image, "")
	}
	d.log.Info("pulling image", "container", c.id, "image", image, "credentials", source, "registry", host)
	if err := d.engine.pull(ctx, image, header); err != nil {
		return fmt.Errorf("with the credentials for %s from %s: %w", host, source, err)
	}
	return nil
}
