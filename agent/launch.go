package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"mezzo/agent/containerizer"
	"mezzo/agent/fetcher"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/authorizer"
	"mezzo/internal/exectoken"
	"mezzo/internal/secrets"
	"mezzo/internal/stout"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

// Resources the agent adds to a synthesized command executor (Mesos's
// DEFAULT_EXECUTOR_CPUS and DEFAULT_EXECUTOR_MEM): a small overcommit.
const (
	commandExecutorCPUs  = 0.1
	commandExecutorMemMB = 32
)

// defaultPath is the PATH an executor gets when its command does not set
// one (Mesos's os::host_default_path()).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// runTask handles RUN_TASK: a task with a custom executor or a command
// task (for which the agent synthesizes the command executor).
func (a *Agent) runTask(m *protocol.AgentEvent_RunTask) {
	if m == nil || m.GetTask() == nil || m.GetFrameworkInfo().GetId().GetValue() == "" {
		a.log.Warn("dropping malformed RUN_TASK (needs framework_info.id and task)")
		return
	}
	t := m.GetTask()
	fw := a.ensureFramework(m.GetFrameworkInfo())
	var info *mesos.ExecutorInfo
	kind := kindCustom
	switch {
	case t.GetExecutor() != nil:
		info = proto.Clone(t.GetExecutor()).(*mesos.ExecutorInfo)
	case t.GetCommand() != nil:
		if isDocker(t.GetContainer()) && a.docker == nil {
			a.agentUpdate(fw, nil, t.GetTaskId().GetValue(), mesos.TaskState_TASK_FAILED,
				mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED,
				"Failed to launch container: no containerizer for DOCKER containers (the agent runs with --containerizers="+a.cfg.Containerizers+")")
			a.maybeRemoveFramework(fw)
			return
		}
		info = a.commandExecutorInfo(fw, t)
		kind = kindCommand
	default:
		a.agentUpdate(fw, nil, t.GetTaskId().GetValue(), mesos.TaskState_TASK_ERROR,
			mesos.TaskStatus_REASON_TASK_INVALID, "Task has neither 'command' nor 'executor'")
		a.maybeRemoveFramework(fw)
		return
	}
	if info.FrameworkId == nil {
		info.FrameworkId = fw.info.GetId()
	}
	a.launch(fw, info, kind, launchItem{task: t})
}

// runTaskGroup handles RUN_TASK_GROUP: the group runs under the default
// executor named by executor_info.
func (a *Agent) runTaskGroup(m *protocol.AgentEvent_RunTaskGroup) {
	if m == nil || m.GetFrameworkInfo().GetId().GetValue() == "" || m.GetExecutorInfo().GetExecutorId().GetValue() == "" ||
		len(m.GetTaskGroup().GetTasks()) == 0 {
		a.log.Warn("dropping malformed RUN_TASK_GROUP (needs framework_info.id, executor_info and tasks)")
		return
	}
	fw := a.ensureFramework(m.GetFrameworkInfo())
	info := proto.Clone(m.GetExecutorInfo()).(*mesos.ExecutorInfo)
	if info.FrameworkId == nil {
		info.FrameworkId = fw.info.GetId()
	}
	kind := kindDefault
	if info.GetType() == mesos.ExecutorInfo_CUSTOM && info.GetCommand() != nil {
		kind = kindCustom
	}
	a.launch(fw, info, kind, launchItem{group: m.GetTaskGroup()})
}

// ensureFramework returns the framework, creating (and checkpointing) it,
// or refreshing its info.
func (a *core) ensureFramework(info *mesos.FrameworkInfo) *framework {
	id := info.GetId().GetValue()
	fw := a.frameworks[id]
	if fw == nil {
		fw = &framework{id: id, executors: map[string]*executor{}}
		a.frameworks[id] = fw
		a.fwOrder = append(a.fwOrder, id)
	}
	if fw.info == nil || !proto.Equal(fw.info, info) {
		fw.info = proto.Clone(info).(*mesos.FrameworkInfo)
		a.checkpointFramework(fw)
	}
	return fw
}

func (a *core) checkpointFramework(fw *framework) {
	if a.sess.agentID == "" {
		return
	}
	if err := a.cp.framework(a.sess.agentID, fw); err != nil {
		a.log.Warn("checkpointing framework", "framework", fw.id, "err", err)
	}
}

// launch delivers item to the executor described by info, creating the
// executor (sandbox, container) if it does not run yet; a regular launch
// that needs tenants of lent reservations evicted first waits for them
// (lending.go).
func (a *Agent) launch(fw *framework, info *mesos.ExecutorInfo, kind executorKind, item launchItem) {
	if a.lendingHolds(fw, info, kind, item) {
		return
	}
	a.launchNow(fw, info, kind, item)
}

// launchNow is launch without the wait for evictions.
func (a *Agent) launchNow(fw *framework, info *mesos.ExecutorInfo, kind executorKind, item launchItem) {
	ids := item.taskIDs()
	for _, id := range ids {
		if e := fw.executorFor(id); e != nil {
			a.log.Warn("dropping launch of a task the agent already has", "framework", fw.id, "task", id)
			return
		}
	}
	if fw.shuttingDown {
		for _, id := range ids {
			a.agentUpdate(fw, nil, id, a.lostState(fw), mesos.TaskStatus_REASON_FRAMEWORK_REMOVED, "Framework is terminating")
		}
		return
	}
	e := fw.executors[info.GetExecutorId().GetValue()]
	if e != nil && (e.phase == phaseTerminating || e.phase == phaseTerminated) {
		for _, id := range ids {
			a.agentUpdate(fw, nil, id, a.lostState(fw), mesos.TaskStatus_REASON_EXECUTOR_TERMINATED,
				"Executor "+strings.ToLower(e.phase.String()))
		}
		return
	}
	if err := launchEnvironments(info, e == nil, item); err != nil {
		// As Mesos's secret resolver failing the container's launch:
		// nothing starts, rather than a task running without a variable.
		for _, id := range ids {
			a.agentUpdate(fw, nil, id, mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED,
				"Failed to launch container: "+err.Error())
		}
		a.maybeRemoveFramework(fw)
		return
	}
	created := e == nil
	if created {
		e = a.newExecutor(fw, info, kind, item)
		if e == nil {
			for _, id := range ids {
				a.agentUpdate(fw, nil, id, mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED,
					"Failed to launch container: cannot create the sandbox")
			}
			a.maybeRemoveFramework(fw)
			return
		}
	}
	tasks := []*mesos.TaskInfo{item.task}
	if item.group != nil {
		tasks = item.group.GetTasks()
	}
	if !created {
		// The container exists (or is being made for earlier tasks): it
		// grows to hold the tasks before they are added, and gets their
		// persistent volumes.
		var more []*mesos.Resource
		for _, t := range tasks {
			more = append(more, t.GetResources()...)
		}
		err := a.resize(e, more)
		if err == nil {
			if err = a.volumesForRunning(e, tasks); err != nil {
				a.resizeOrWarn(e) // back to what it holds
			}
		}
		if err != nil {
			for _, id := range ids {
				a.agentUpdate(fw, nil, id, mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_UPDATE_FAILED,
					"Failed to update container: "+err.Error())
			}
			return
		}
	}
	for _, ti := range tasks {
		e.addTask(ti, fw.id, a.sess.agentID)
		if err := a.cp.task(a.sess.agentID, fw, e, ti); err != nil {
			a.log.Error("checkpointing task", "framework", fw.id, "task", ti.GetTaskId().GetValue(), "err", err)
		}
	}
	e.queue = append(e.queue, item)
	if err := e.launchErr; err != nil {
		e.launchErr = nil
		a.launchFailed(e, err)
		return
	}
	if e.phase == phaseRunning && e.conn != nil {
		a.flushQueue(e)
	}
}

// commandExecutorInfo synthesizes the executor of a command task, as
// Mesos's agent does: executor_id = task_id, a descriptive name, source =
// task_id, the task's URIs, environment and user, and a small resource
// allowance carrying the task's allocation role.
func (a *Agent) commandExecutorInfo(fw *framework, t *mesos.TaskInfo) *mesos.ExecutorInfo {
	cmd := t.GetCommand()
	var what string
	if cmd.GetShell() {
		v := cmd.GetValue()
		if len(v) > 15 {
			v = v[:12] + "..."
		}
		what = "(Command: sh -c '" + v + "')"
	} else {
		what = "(Command: [" + strings.Join(append([]string{cmd.GetValue()}, cmd.GetArguments()...), ", ") + "])"
	}
	info := &mesos.ExecutorInfo{
		ExecutorId:  &mesos.ExecutorID{Value: proto.String(t.GetTaskId().GetValue())},
		FrameworkId: fw.info.GetId(),
		Name:        proto.String("Command Executor (Task: " + t.GetTaskId().GetValue() + ") " + what),
		Source:      proto.String(t.GetTaskId().GetValue()),
		Command: &mesos.CommandInfo{
			Uris:        cmd.GetUris(),
			Environment: cmd.GetEnvironment(),
			User:        cmd.User,
			Shell:       proto.Bool(false),
			Value:       proto.String(a.cfg.LauncherPath),
			Arguments:   []string{a.cfg.LauncherPath, "executor"},
		},
		Container: t.GetContainer(),
		Labels:    t.GetLabels(),
	}
	var alloc *mesos.Resource_AllocationInfo
	for _, r := range t.GetResources() {
		if r.AllocationInfo != nil {
			alloc = r.GetAllocationInfo()
			break
		}
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"cpus", commandExecutorCPUs}, {"mem", commandExecutorMemMB}} {
		info.Resources = append(info.Resources, &mesos.Resource{
			Name:           proto.String(r.name),
			Type:           mesos.Value_SCALAR.Enum(),
			Scalar:         &mesos.Value_Scalar{Value: proto.Float64(r.v)},
			AllocationInfo: alloc,
		})
	}
	return info
}

// sandboxDir is Mesos's executor run directory.
func (a *Agent) sandboxDir(fwID, execID, containerID string) string {
	return filepath.Join(a.executorDir(fwID, execID), "runs", containerID)
}

func (a *Agent) executorDir(fwID, execID string) string {
	return filepath.Join(a.cfg.WorkDir, "slaves", safeName(a.sess.agentID), "frameworks", safeName(fwID),
		"executors", safeName(execID))
}

// newExecutor creates the sandbox, attaches it to /files, arms the
// registration timeout and starts fetching and launching the container.
//
// The container is sized for the executor and the tasks it is launched
// for, as Mesos sizes a container for its executor plus tasks (cpu shares,
// memory limit); resize follows the tasks it gets or loses later.
func (a *Agent) newExecutor(fw *framework, info *mesos.ExecutorInfo, kind executorKind, first launchItem) *executor {
	cid := uuid.NewString()
	e := &executor{
		fw: fw, id: info.GetExecutorId().GetValue(), info: info, kind: kind, containerID: cid,
		tasks: map[string]*task{}, killsSent: map[string]bool{}, launching: true, started: a.clock.Now(),
		docker: kind == kindCommand && isDocker(info.GetContainer()) && a.docker != nil,
	}
	e.direct = e.docker || a.runsDirect(fw, kind, first)
	e.directory = a.sandboxDir(fw.id, e.id, cid)
	if err := os.MkdirAll(e.directory, 0o755); err != nil {
		a.log.Error("creating sandbox", "dir", e.directory, "err", err)
		return nil
	}
	runs := filepath.Dir(e.directory)
	// The sandbox's runs/latest is a convenience for people browsing the
	// work directory; nothing recovers from it, so it is not fsynced.
	if err := symlinkAtomic(cid, filepath.Join(runs, "latest"), false); err != nil {
		a.log.Warn("linking runs/latest", "dir", runs, "err", err)
	}
	// Checkpointed before the container starts, so that a restarted agent
	// knows every container it may find running.
	if err := a.cp.executor(a.sess.agentID, fw, e); err != nil {
		a.log.Error("checkpointing executor", "framework", fw.id, "executor", e.id, "err", err)
	}
	a.attachSandbox(e)
	fw.executors[e.id] = e
	fw.order = append(fw.order, e.id)
	if !e.direct { // a direct task has no executor to subscribe
		e.regTimer = a.after(a.cfg.ExecutorRegistrationTimeout, func() { a.registrationTimeout(e) })
	}

	cfg, err := a.containerConfig(fw, e)
	tasks := []*mesos.TaskInfo{first.task}
	if first.group != nil {
		tasks = first.group.GetTasks()
	}
	cfg.Resources = append([]*mesos.Resource(nil), cfg.Resources...)
	for _, t := range tasks {
		cfg.Resources = append(cfg.Resources, t.GetResources()...)
	}
	e.sized, e.launchedWith = cfg.Resources, first.taskIDs()
	if err == nil {
		// The persistent volumes of the executor and of the tasks it is
		// launched with are set up with the container (volumes.go).
		cfg.Volumes, err = a.executorVolumes(e, info.GetResources(), tasks)
	}
	if err == nil {
		cfg.User, err = a.runAs(fw, info)
	}
	if err == nil && !e.direct {
		// A direct task has no executor to authenticate: no token, which
		// would otherwise reach the task's own environment.
		var tok string
		if tok, err = a.executorToken(e); tok != "" {
			cfg.Env = append(cfg.Env, exectoken.EnvVar+"="+tok)
		}
	}
	if err != nil {
		// launch reports it once the tasks are queued.
		e.launchErr = err
		return e
	}
	uris := info.GetCommand().GetUris()
	fetch := a.fetchOptions(fw, info)
	var direct *mesos.TaskInfo
	switch {
	case e.docker:
		direct = first.task
		cfg.Env = a.dockerTaskEnv(fw, e, first.task)
	case e.direct:
		direct = first.task
		directCommand(&cfg, first.task)
	}
	a.containers.start(e, cfg, uris, fetch, direct)
	return e
}

// fetchOptions are the fetcher's options for an executor's URIs: the
// cache in <--fetcher_cache_dir>/slaves/<agent id> (as Mesos lays it out)
// and the user the executor runs as (its command's user, else the
// framework's), by which cache entries are kept apart.
func (a *Agent) fetchOptions(fw *framework, info *mesos.ExecutorInfo) fetcher.Options {
	opts := a.cfg.Fetcher
	if opts.Cache == nil && opts.CacheDir == "" && a.cfg.FetcherCacheSize > 0 {
		opts.CacheDir = filepath.Join(a.cfg.FetcherCacheDir, "slaves", safeName(a.sess.agentID))
		opts.CacheSize = a.cfg.FetcherCacheSize
	}
	opts.User = info.GetCommand().GetUser()
	if opts.User == "" {
		opts.User = fw.info.GetUser()
	}
	return opts
}

// attachSandbox makes the executor's sandbox browsable under /files.
func (a *Agent) attachSandbox(e *executor) {
	latest := filepath.Join(filepath.Dir(e.directory), "latest")
	e.virtualPaths = []string{
		e.directory,
		latest,
		"/frameworks/" + e.fw.id + "/executors/" + e.id + "/runs/latest",
	}
	owner := authorizer.AccessSandboxObject(e.info, e.fw.info)
	for _, v := range e.virtualPaths {
		a.files.AttachSandbox(v, e.directory, owner)
	}
}

// startContainer fetches, launches and waits for the container (own
// goroutine), reporting each step to the loop. direct is the task of a
// direct executor (cfg then runs the task itself).
func (a *Agent) startContainer(e *executor, cfg containerizer.ContainerConfig, uris []*mesos.CommandInfo_URI,
	fetch fetcher.Options, direct *mesos.TaskInfo) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-a.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if len(uris) > 0 {
		if err := fetcher.Fetch(ctx, uris, cfg.Dir, fetch); err != nil {
			err = fmt.Errorf("Failed to fetch all URIs for container '%s': %w", cfg.ContainerID, err)
			a.post(func() { a.metrics.fetchesFailed++; a.launchFailed(e, err) })
			return
		}
		a.post(func() { a.metrics.fetchesSucceeded++ })
	}
	// The sandbox, with what was fetched into it, is its user's.
	if err := giveSandbox(cfg); err != nil {
		err = fmt.Errorf("giving the sandbox to user '%s': %w", cfg.User.Name, err)
		a.post(func() { a.launchFailed(e, err) })
		return
	}
	var c containerizer.Container
	var err error
	if direct != nil {
		a.post(func() { a.directStarting(e) })
	}
	if direct != nil && e.docker {
		c, err = a.launchDockerTask(ctx, cfg, direct)
	} else {
		c, err = a.cz.Launch(ctx, cfg)
	}
	if err != nil {
		a.post(func() { a.launchFailed(e, err) })
		return
	}
	if !a.post(func() { a.launched(e, c) }) {
		// The agent stopped meanwhile; its shutdown may have missed us.
		a.cz.Destroy(context.Background(), c.ID, 0)
		return
	}
	term, err := a.cz.Wait(context.WithoutCancel(ctx), c.ID)
	if err != nil {
		term = containerizer.Termination{ExitCode: -1, Message: err.Error()}
	}
	a.post(func() { a.executorExited(e, &term) })
}

// containerConfig is the program, environment and sandbox of an executor.
func (a *Agent) containerConfig(fw *framework, e *executor) (containerizer.ContainerConfig, error) {
	env := a.executorEnv(fw, e)
	cfg := containerizer.ContainerConfig{
		ContainerID:  e.containerID,
		Dir:          e.directory,
		Env:          env,
		Resources:    e.info.GetResources(),
		ExecutorInfo: e.info,
	}
	switch e.kind {
	case kindCommand:
		cfg.Path, cfg.Args = a.cfg.LauncherPath, []string{a.cfg.LauncherPath, "executor"}
	case kindDefault:
		cfg.Path, cfg.Args = a.cfg.LauncherPath, []string{a.cfg.LauncherPath, "default-executor"}
	default:
		cmd := e.info.GetCommand()
		if cmd.GetValue() == "" {
			return cfg, fmt.Errorf("executor %s has no 'command.value' to run", e.id)
		}
		if cmd.GetShell() {
			cfg.Path, cfg.Args = "/bin/sh", []string{"sh", "-c", cmd.GetValue()}
		} else {
			cfg.Path = resolveProgram(cmd.GetValue(), env, e.directory)
			cfg.Args = cmd.GetArguments()
			if len(cfg.Args) == 0 {
				cfg.Args = []string{cmd.GetValue()}
			}
		}
	}
	return cfg, nil
}

// resolveProgram finds a non-shell command's program like execvp: a name
// with a slash is a path (relative to the sandbox), a bare name is looked
// up in the executor's PATH.
func resolveProgram(name string, env []string, dir string) string {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			return filepath.Join(dir, name)
		}
		return name
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = dir
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

// executorEnv is the executor's environment: Mesos's variables (see the
// executor environment table in shared/reference), then the command's own
// environment, which may override them, then MESOS_SANDBOX (set by the
// containerizer in Mesos, so it wins). The agent's environment is not
// inherited.
func (a *Agent) executorEnv(fw *framework, e *executor) []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	if ip, ok := os.LookupEnv("LIBPROCESS_IP"); ok {
		set("LIBPROCESS_IP", ip)
	}
	set("LIBPROCESS_PORT", "0")
	set("PATH", defaultPath)
	set("MESOS_FRAMEWORK_ID", fw.id)
	set("MESOS_EXECUTOR_ID", e.id)
	set("MESOS_DIRECTORY", e.directory)
	set("MESOS_AGENT_ENDPOINT", a.endpoint)
	set("MESOS_SLAVE_ID", a.sess.agentID)
	set("MESOS_SLAVE_PID", a.pid())
	set("MESOS_CHECKPOINT", boolFlag(fw.checkpoint()))
	set("MESOS_HTTP_COMMAND_EXECUTOR", "0")
	set("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", stout.FormatDuration(a.shutdownGrace(e)))
	if a.cfg.ServesTLS {
		set("LIBPROCESS_SSL_ENABLED", "true")
		if a.cfg.TLSCAFile != "" {
			set("LIBPROCESS_SSL_CA_FILE", a.cfg.TLSCAFile)
		}
	}
	if fw.checkpoint() {
		set("MESOS_RECOVERY_TIMEOUT", stout.FormatDuration(a.cfg.RecoveryTimeout))
		set("MESOS_SUBSCRIPTION_BACKOFF_MAX", stout.FormatDuration(a.cfg.ExecutorReregistrationTimeout))
	}
	for _, v := range e.info.GetCommand().GetEnvironment().GetVariables() {
		// A SECRET's data goes into the environment and nowhere else (no
		// log line carries it). launch checked that each one resolves.
		val, ok := secrets.EnvValue(v)
		if !ok {
			a.log.Error("environment variable left out: it does not resolve", "executor", e.id, "name", v.GetName())
			continue
		}
		set(v.GetName(), val)
	}
	set("MESOS_SANDBOX", e.directory)
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

func boolFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// launchEnvironments checks that every environment a launch would build
// resolves: the executor's (when it is to be started) and each task's
// command's (the built-in executors put those into the tasks' processes).
// A malformed variable is the master's to refuse, but the agent checks
// again rather than start a process without it.
func launchEnvironments(info *mesos.ExecutorInfo, newExecutor bool, item launchItem) error {
	tasks := []*mesos.TaskInfo{item.task}
	if item.group != nil {
		tasks = item.group.GetTasks()
	}
	for _, t := range tasks {
		if err := secrets.CheckEnvironment(t.GetCommand().GetEnvironment()); err != nil {
			return fmt.Errorf("task %s: %w", t.GetTaskId().GetValue(), err)
		}
	}
	if newExecutor {
		if err := secrets.CheckEnvironment(info.GetCommand().GetEnvironment()); err != nil {
			return fmt.Errorf("executor %s: %w", info.GetExecutorId().GetValue(), err)
		}
	}
	return nil
}
