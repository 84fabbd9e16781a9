// Package command is mezzo's built-in command executor (`mezzo executor`):
// the agent launches it for a task that has a `command` and no `executor`,
// with the executor ID equal to the task ID. It behaves as Mesos's command
// executor does:
//
//   - LAUNCH: TASK_STARTING, start the command (`/bin/sh -c value` by
//     default, or value with arguments when shell=false; the task's
//     environment over the executor's; working directory MESOS_SANDBOX;
//     stdout/stderr inherited, which the agent points at the sandbox files;
//     its own session and process group), TASK_RUNNING once started, then on
//     exit TASK_FINISHED (status 0), TASK_FAILED ("Command exited with status
//     N" / "Command terminated with signal <Name>") or TASK_KILLED after a
//     kill. A second LAUNCH gets TASK_FAILED: one task per command executor.
//   - KILL: TASK_KILLING (only for frameworks with TASK_KILLING_STATE),
//     SIGTERM to the task's process group, SIGKILL after the grace period of
//     the KILL's KillPolicy, else the task's, else 3 seconds.
//   - SHUTDOWN: kill the task the same way within the executor shutdown grace
//     period (less 2 seconds, as Mesos leaves for reaping), then exit.
//   - max_completion_time: kill without grace, TASK_FAILED with
//     REASON_MAX_COMPLETION_TIME_REACHED.
//   - health_check (health.go): once RUNNING, each health change is a
//     TASK_RUNNING update with `healthy` and reason
//     REASON_TASK_HEALTH_CHECK_STATUS_UPDATED; after consecutive_failures
//     the task is killed and ends TASK_KILLED with healthy=false.
//   - The executor exits once the agent has acknowledged the terminal update
//     (or after AckTimeout, or at once if the agent is gone).
package command

import (
	"context"
	"io"
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

// DefaultAckTimeout bounds the wait for the agent to acknowledge the terminal
// update before exiting anyway (Mesos's HTTP command executor fail-safe).
const DefaultAckTimeout = 60 * time.Second

// reapAllowance is taken off the shutdown grace period for the kill so that
// the terminal update still reaches the agent before it gives up on us
// (Mesos subtracts its maximum reap interval and one second).
const reapAllowance = 2 * time.Second

// Options tune Run; the zero value is the production setting.
type Options struct {
	Executor   executor.Options
	AckTimeout time.Duration // default DefaultAckTimeout
}

// Main runs the command executor with the agent-provided environment and
// returns the process exit code. Diagnostics go to stderr.
func Main(ctx context.Context, environ []string, stderr io.Writer) int {
	return builtin.Main("mezzo executor", environ, stderr, func(cfg executor.Config, logf builtin.Logf) int {
		return Run(ctx, cfg, Options{Executor: executor.Options{Logf: logf}})
	})
}

// Run runs the command executor against the agent in cfg.
func Run(ctx context.Context, cfg executor.Config, opts Options) int {
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = DefaultAckTimeout
	}
	opts.Executor.Logf = builtin.Discard(opts.Executor.Logf)
	client := executor.NewClient(cfg, opts.Executor)
	e := &commandExecutor{cfg: cfg, opts: opts, logf: opts.Executor.Logf}
	err := client.Run(ctx, e)
	e.stopHealthCheck()
	// Whatever ended the loop, the task must not outlive its executor.
	if e.task != nil && !e.task.Exited {
		_ = e.task.Proc.Signal(syscall.SIGKILL)
	}
	return builtin.ExitCode(err, e.exitCode, e.logf, "shutdown grace period elapsed before the task ended")
}

// commandExecutor is the Handler; all its state is owned by the client loop.
type commandExecutor struct {
	cfg  executor.Config
	opts Options
	logf func(string, ...any)

	framework    *mesos.FrameworkInfo
	launched     bool
	task         *proc.Task
	shuttingDown bool
	terminalUUID []byte
	ackWait      func()
	exitCode     int

	checker             *health.Checker // nil when not health checking
	killedByHealthCheck bool
}

func (e *commandExecutor) loop(c *executor.Client) proc.Loop {
	return proc.Loop{Clock: c.Clock(), Post: c.Post, Logf: e.logf}
}

func (e *commandExecutor) Subscribed(c *executor.Client, ev *executorpb.Event_Subscribed) {
	e.framework = ev.GetFrameworkInfo()
	e.logf("subscribed on agent %s", ev.GetAgentInfo().GetHostname())
}

func (e *commandExecutor) update(c *executor.Client, taskID *mesos.TaskID, state mesos.TaskState, reason *mesos.TaskStatus_Reason, message string) []byte {
	return e.send(c, builtin.NewStatus(taskID, state, reason, message))
}

func (e *commandExecutor) send(c *executor.Client, st *mesos.TaskStatus) []byte {
	id, err := c.Update(st)
	if err != nil {
		e.logf("%v", err)
	}
	return id
}

func (e *commandExecutor) Launch(c *executor.Client, task *mesos.TaskInfo) {
	if e.launched || e.shuttingDown {
		msg := "Attempted to run multiple tasks using a \"command\" executor"
		if !e.launched {
			msg = "Executor is shutting down"
		}
		e.update(c, task.GetTaskId(), mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_TASK_INVALID.Enum(), msg)
		return
	}
	e.launched = true
	e.update(c, task.GetTaskId(), mesos.TaskState_TASK_STARTING, nil, "")

	var extra []string
	if role := proc.AllocationRole(task); role != "" {
		extra = append(extra, "MESOS_ALLOCATION_ROLE="+role)
	}
	p, err := proc.Start(proc.Spec{Command: task.GetCommand(), Env: e.cfg.Environ, Extra: extra, Dir: e.cfg.Sandbox})
	if err != nil {
		e.logf("failed to launch task %s: %v", task.GetTaskId().GetValue(), err)
		e.terminalUUID = e.update(c, task.GetTaskId(), mesos.TaskState_TASK_FAILED,
			mesos.TaskStatus_REASON_COMMAND_EXECUTOR_FAILED.Enum(), "Failed to launch task: "+err.Error())
		e.maybeExit(c)
		return
	}
	e.logf("started task %s as pid %d", task.GetTaskId().GetValue(), p.Pid)
	e.task = proc.Watch(e.loop(c), task, p, func(t *proc.Task) { e.exited(c, t) })
	e.update(c, task.GetTaskId(), mesos.TaskState_TASK_RUNNING, nil, "")
	e.startHealthCheck(c, task, proc.MergeEnv(e.cfg.Environ, extra, task.GetCommand().GetEnvironment()))
}

func (e *commandExecutor) exited(c *executor.Client, t *proc.Task) {
	e.stopHealthCheck()
	state, reason, msg := t.Outcome()
	e.logf("task %s: %s", t.ID(), msg)
	st := builtin.NewStatus(t.Info.GetTaskId(), state, reason, msg)
	if e.killedByHealthCheck && t.Killing {
		st.Healthy = proto.Bool(false) // killed for failing its health check
	}
	e.terminalUUID = e.send(c, st)
	e.maybeExit(c)
}

// maybeExit stops the executor once the terminal update is safe with the
// agent, or arms the bounded wait for that.
func (e *commandExecutor) maybeExit(c *executor.Client) {
	if e.terminalUUID == nil {
		return
	}
	if c.Unacknowledged() == 0 || c.AgentGone() {
		c.Stop()
		return
	}
	if e.ackWait == nil {
		e.ackWait = e.loop(c).After(e.opts.AckTimeout, func() {
			e.logf("did not receive an acknowledgement for the terminal status update from the agent")
			e.exitCode = 1
			c.Stop()
		})
	}
}

func (e *commandExecutor) LaunchGroup(c *executor.Client, _ *mesos.TaskGroupInfo) {
	// Task groups go to the default executor; getting one is an agent bug.
	e.logf("LAUNCH_GROUP is not supported by the command executor; shutting down")
	e.Shutdown(c)
}

func (e *commandExecutor) Kill(c *executor.Client, taskID *mesos.TaskID, policy *mesos.KillPolicy) {
	if e.task == nil {
		if !e.launched {
			// Mesos terminates here too: the agent reports the task.
			e.logf("kill for task %s received before any task was launched; exiting", taskID.GetValue())
			c.Stop()
		}
		return
	}
	if taskID.GetValue() != e.task.ID() {
		e.logf("ignoring kill for unknown task %s", taskID.GetValue())
		return
	}
	e.kill(c, mesos.KillGracePeriod(policy, e.task.Info))
}

func (e *commandExecutor) kill(c *executor.Client, grace time.Duration) {
	t := e.task
	if t.Exited {
		return
	}
	e.stopHealthCheck()
	if !t.Killing && !t.MaxCompletion && proc.HasCapability(e.framework, mesos.FrameworkInfo_Capability_TASK_KILLING_STATE) {
		e.update(c, t.Info.GetTaskId(), mesos.TaskState_TASK_KILLING, nil, "")
	}
	e.logf("killing task %s with a grace period of %v", t.ID(), grace)
	t.Kill(grace)
}

func (e *commandExecutor) Acknowledged(c *executor.Client, _ *mesos.TaskID, uuid []byte) {
	if e.terminalUUID != nil && string(uuid) == string(e.terminalUUID) {
		c.Stop()
	}
}

func (e *commandExecutor) Message(*executor.Client, []byte) {}

func (e *commandExecutor) Shutdown(c *executor.Client) {
	if e.shuttingDown {
		return
	}
	e.shuttingDown = true
	e.logf("shutting down")
	switch {
	case e.task != nil && !e.task.Exited:
		e.kill(c, max(e.cfg.ShutdownGracePeriod-reapAllowance, 0))
	case e.terminalUUID != nil:
		e.maybeExit(c)
	default:
		if c.AgentGone() {
			e.exitCode = 1 // never reached the agent with a task
		}
		c.Stop()
	}
}

func (e *commandExecutor) Error(_ *executor.Client, message string) {
	e.logf("error: %s", message)
}
