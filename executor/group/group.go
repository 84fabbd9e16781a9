// Package group is mezzo's default executor for task groups (`mezzo
// default-executor`): the agent launches it for LAUNCH_GROUP operations and
// it runs every task of each group it receives, following Mesos's default
// executor:
//
//   - LAUNCH_GROUP: TASK_STARTING for every task, then each task's command is
//     started and TASK_RUNNING sent for it. Several LAUNCH_GROUP events may
//     arrive for one executor.
//   - Each task gets its own sandbox `<MESOS_SANDBOX>/tasks/<task id>` (its
//     working directory and MESOS_SANDBOX, with `stdout` and `stderr` files).
//   - A task ends TASK_FINISHED, TASK_FAILED ("Command exited with status
//     N"), or TASK_KILLED after a kill; if one task of a group fails or is
//     killed, the executor kills the group's other tasks (so a KILL of one
//     task takes the whole group down).
//   - KILL: TASK_KILLING for frameworks with TASK_KILLING_STATE, SIGTERM to
//     the task's process group, SIGKILL after the KillPolicy grace period
//     (the KILL's, else the task's, else 3 seconds).
//   - health_check (health.go): once a task runs, each health change is a
//     TASK_RUNNING update with `healthy` and reason
//     REASON_TASK_HEALTH_CHECK_STATUS_UPDATED; after consecutive_failures
//     the task is killed (and with it its group), ending with healthy=false.
//   - The executor exits when all its tasks are terminal and the agent has
//     acknowledged every update (bounded by AckTimeout).
//
// Deviation from Mesos: Mesos launches each task as a nested container
// through the agent's operator API (LAUNCH_NESTED_CONTAINER /
// WAIT_NESTED_CONTAINER, with `tasks/<id>` a symlink to the container's
// sandbox). mezzo runs each task as a child process of this executor, in its
// own session and process group, inside the executor's container (its
// cgroups), with a real `tasks/<id>` directory as the task sandbox. Tasks
// that need a container image of their own are not supported and fail.
package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/executorpb"
	mesos "mezzo/api/mesos"
	"mezzo/executor"
	"mezzo/executor/health"
	"mezzo/executor/internal/builtin"
	"mezzo/executor/internal/proc"
)

// DefaultAckTimeout bounds the wait for acknowledgements once every task has
// ended (Mesos's default executor fail-safe).
const DefaultAckTimeout = 60 * time.Second

// reapAllowance is taken off the executor shutdown grace period when killing
// tasks on SHUTDOWN, so their terminal updates reach the agent in time.
const reapAllowance = 2 * time.Second

// Options tune Run; the zero value is the production setting.
type Options struct {
	Executor   executor.Options
	AckTimeout time.Duration // default DefaultAckTimeout
}

// Main runs the default executor with the agent-provided environment and
// returns the process exit code. Diagnostics go to stderr.
func Main(ctx context.Context, environ []string, stderr io.Writer) int {
	return builtin.Main("mezzo default-executor", environ, stderr, func(cfg executor.Config, logf builtin.Logf) int {
		return Run(ctx, cfg, Options{Executor: executor.Options{Logf: logf}})
	})
}

// Run runs the default executor against the agent in cfg.
func Run(ctx context.Context, cfg executor.Config, opts Options) int {
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = DefaultAckTimeout
	}
	opts.Executor.Logf = builtin.Discard(opts.Executor.Logf)
	client := executor.NewClient(cfg, opts.Executor)
	e := &groupExecutor{cfg: cfg, opts: opts, logf: opts.Executor.Logf, tasks: map[string]*member{}}
	err := client.Run(ctx, e)
	// No task outlives its executor.
	for _, m := range e.tasks {
		m.stopHealthCheck()
		if m.task != nil && !m.task.Exited {
			_ = m.task.Proc.Signal(syscall.SIGKILL)
		}
	}
	return builtin.ExitCode(err, e.exitCode, e.logf, "shutdown grace period elapsed before all tasks ended")
}

// taskGroup is one LAUNCH_GROUP's tasks.
type taskGroup struct {
	ids     []string
	killing bool // the group is being killed because one task failed
}

// member is one task of a group.
type member struct {
	info     *mesos.TaskInfo
	group    *taskGroup
	task     *proc.Task // nil if it failed to launch
	terminal bool
	checker  *health.Checker // nil when not (or no longer) health checking
}

// groupExecutor is the Handler; its state is owned by the client loop.
type groupExecutor struct {
	cfg  executor.Config
	opts Options
	logf func(string, ...any)

	framework    *mesos.FrameworkInfo
	tasks        map[string]*member
	active       int
	launchedAny  bool
	shuttingDown bool
	ackWait      func()
	exitCode     int
	// unhealthy is set once a task was killed for failing its health
	// check; every later terminal update then says healthy=false.
	unhealthy bool
}

func (e *groupExecutor) loop(c *executor.Client) proc.Loop {
	return proc.Loop{Clock: c.Clock(), Post: c.Post, Logf: e.logf}
}

func (e *groupExecutor) update(c *executor.Client, taskID *mesos.TaskID, state mesos.TaskState, reason *mesos.TaskStatus_Reason, message string) {
	e.send(c, builtin.NewStatus(taskID, state, reason, message))
}

func (e *groupExecutor) send(c *executor.Client, st *mesos.TaskStatus) {
	if _, err := c.Update(st); err != nil {
		e.logf("%v", err)
	}
}

func (e *groupExecutor) Subscribed(c *executor.Client, ev *executorpb.Event_Subscribed) {
	e.framework = ev.GetFrameworkInfo()
	e.logf("subscribed on agent %s", ev.GetAgentInfo().GetHostname())
}

func (e *groupExecutor) Launch(c *executor.Client, task *mesos.TaskInfo) {
	// Single tasks go to command or custom executors; Mesos's default
	// executor shuts down on this too.
	e.logf("LAUNCH is not supported by the default executor (task %s); shutting down", task.GetTaskId().GetValue())
	e.Shutdown(c)
}

func (e *groupExecutor) LaunchGroup(c *executor.Client, tg *mesos.TaskGroupInfo) {
	if e.shuttingDown {
		e.logf("ignoring LAUNCH_GROUP: the executor is shutting down")
		return
	}
	g := &taskGroup{}
	var fresh []*member
	for _, info := range tg.GetTasks() {
		id := info.GetTaskId().GetValue()
		if id == "" || e.tasks[id] != nil {
			e.logf("ignoring task %q of LAUNCH_GROUP: missing or duplicate task ID", id)
			continue
		}
		m := &member{info: info, group: g}
		e.tasks[id] = m
		g.ids = append(g.ids, id)
		fresh = append(fresh, m)
		e.active++
		e.update(c, info.GetTaskId(), mesos.TaskState_TASK_STARTING, nil, "")
	}
	if len(fresh) == 0 {
		return
	}
	e.launchedAny = true
	var failed []*member
	var failures []string
	for _, m := range fresh {
		if err := e.start(c, m); err != nil {
			e.logf("failed to launch task %s: %v", m.info.GetTaskId().GetValue(), err)
			failed = append(failed, m)
			failures = append(failures, err.Error())
		}
	}
	for _, m := range fresh {
		if m.task != nil {
			e.update(c, m.info.GetTaskId(), mesos.TaskState_TASK_RUNNING, nil, "")
			e.startHealthCheck(c, m)
		}
	}
	for i, m := range failed {
		e.terminate(c, m, mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED.Enum(), "Failed to launch task: "+failures[i])
	}
}

// start creates the task sandbox and starts the task's process in it.
func (e *groupExecutor) start(c *executor.Client, m *member) error {
	if m.info.GetCommand() == nil {
		return errors.New("task has no command (tasks with only a container image are not supported)")
	}
	if m.info.GetContainer().GetDocker() != nil {
		return errors.New("tasks with their own container image are not supported by mezzo's default executor")
	}
	id := m.info.GetTaskId().GetValue()
	if !validPathComponent(id) {
		return fmt.Errorf("task ID %q cannot name a sandbox directory", id)
	}
	dir := filepath.Join(e.cfg.Sandbox, "tasks", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stdout, err := os.OpenFile(filepath.Join(dir, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(filepath.Join(dir, "stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer stderr.Close()
	extra := []string{"MESOS_SANDBOX=" + dir}
	if role := proc.AllocationRole(m.info); role != "" {
		extra = append(extra, "MESOS_ALLOCATION_ROLE="+role)
	}
	e.newHealthCheck(c, m, proc.MergeEnv(e.cfg.Environ, extra, m.info.GetCommand().GetEnvironment()), dir)
	p, err := proc.Start(proc.Spec{
		Command: m.info.GetCommand(),
		Env:     e.cfg.Environ,
		Extra:   extra,
		Dir:     dir,
		Stdout:  stdout,
		Stderr:  stderr,
	})
	if err != nil {
		m.stopHealthCheck()
		return err
	}
	e.logf("started task %s as pid %d", id, p.Pid)
	m.task = proc.Watch(e.loop(c), m.info, p, func(t *proc.Task) {
		state, reason, msg := t.Outcome()
		e.logf("task %s: %s", id, msg)
		e.terminate(c, m, state, reason, msg)
	})
	return nil
}

func validPathComponent(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}

// terminate records a task's end, sends its terminal update and applies the
// group policy: a failed or killed task takes its group down.
func (e *groupExecutor) terminate(c *executor.Client, m *member, state mesos.TaskState, reason *mesos.TaskStatus_Reason, msg string) {
	if m.terminal {
		return
	}
	m.terminal = true
	m.stopHealthCheck()
	e.active--
	st := builtin.NewStatus(m.info.GetTaskId(), state, reason, msg)
	if e.unhealthy {
		st.Healthy = proto.Bool(false) // a health check failure ended the executor's tasks
	}
	e.send(c, st)
	if !e.shuttingDown && !m.group.killing &&
		(state == mesos.TaskState_TASK_FAILED || state == mesos.TaskState_TASK_KILLED) {
		m.group.killing = true
		e.logf("task %s ended %s; killing the rest of its task group", m.info.GetTaskId().GetValue(), state)
		for _, id := range m.group.ids {
			other := e.tasks[id]
			if other == m || other.terminal || other.task == nil || other.task.Killing {
				continue
			}
			e.kill(c, other, mesos.KillGracePeriod(nil, other.info))
		}
	}
	e.maybeExit(c)
}

func (e *groupExecutor) kill(c *executor.Client, m *member, grace time.Duration) {
	t := m.task
	if t == nil || t.Exited || t.Killing {
		return
	}
	m.stopHealthCheck()
	if proc.HasCapability(e.framework, mesos.FrameworkInfo_Capability_TASK_KILLING_STATE) {
		e.update(c, m.info.GetTaskId(), mesos.TaskState_TASK_KILLING, nil, "")
	}
	e.logf("killing task %s with a grace period of %v", t.ID(), grace)
	t.Kill(grace)
}

// maybeExit stops the executor once no task is active and the agent has
// every update, or arms the bounded wait for the acknowledgements.
func (e *groupExecutor) maybeExit(c *executor.Client) {
	if e.active > 0 || (!e.launchedAny && !e.shuttingDown) {
		return
	}
	if c.Unacknowledged() == 0 || c.AgentGone() {
		c.Stop()
		return
	}
	if e.ackWait == nil {
		e.ackWait = e.loop(c).After(e.opts.AckTimeout, func() {
			e.logf("did not receive acknowledgements for all status updates from the agent")
			e.exitCode = 1
			c.Stop()
		})
	}
}

func (e *groupExecutor) Kill(c *executor.Client, taskID *mesos.TaskID, policy *mesos.KillPolicy) {
	if e.shuttingDown {
		e.logf("ignoring kill for task %s: the executor is shutting down", taskID.GetValue())
		return
	}
	m := e.tasks[taskID.GetValue()]
	if m == nil || m.terminal {
		e.logf("ignoring kill for task %s: it is not active", taskID.GetValue())
		return
	}
	e.kill(c, m, mesos.KillGracePeriod(policy, m.info))
}

func (e *groupExecutor) Acknowledged(c *executor.Client, _ *mesos.TaskID, _ []byte) {
	e.maybeExit(c)
}

func (e *groupExecutor) Message(*executor.Client, []byte) {}

func (e *groupExecutor) Shutdown(c *executor.Client) {
	if e.shuttingDown {
		return
	}
	e.shuttingDown = true
	e.logf("shutting down")
	if c.AgentGone() && !e.launchedAny {
		e.exitCode = 1 // never reached the agent with a task
	}
	grace := max(e.cfg.ShutdownGracePeriod-reapAllowance, 0)
	for _, m := range e.tasks {
		if !m.terminal {
			e.kill(c, m, grace)
		}
	}
	e.maybeExit(c)
}

func (e *groupExecutor) Error(_ *executor.Client, message string) {
	e.logf("error: %s", message)
}
