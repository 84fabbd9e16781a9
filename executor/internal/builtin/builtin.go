// Package builtin is the plumbing shared by mezzo's built-in executors
// (executor/command and executor/group): reading the agent-provided
// environment in Main, turning the end of the client loop into an exit
// code, building task status updates, and wiring a task's health check to
// the client loop. Each executor keeps its own task policy; only the parts
// that are the same for both live here.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/executor"
	"mezzo/executor/health"
)

// Logf is the executors' log function type.
type Logf = func(format string, args ...any)

// Main reads the executor configuration from environ and calls run with it
// and a logger writing lines prefixed by name to stderr. A bad environment
// is reported on stderr and gives exit code 1.
func Main(name string, environ []string, stderr io.Writer, run func(executor.Config, Logf) int) int {
	cfg, err := executor.ConfigFromEnv(environ)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return run(cfg, func(format string, args ...any) {
		fmt.Fprintf(stderr, name+": "+format+"\n", args...)
	})
}

// Discard returns logf, or a logger that drops everything when logf is nil.
func Discard(logf Logf) Logf {
	if logf == nil {
		return func(string, ...any) {}
	}
	return logf
}

// ExitCode is the process exit code once the client loop has returned err:
// the executor's own code when the loop ended cleanly, else 1 after logging
// why (timeoutMsg when the shutdown grace period ran out).
func ExitCode(err error, code int, logf Logf, timeoutMsg string) int {
	switch {
	case err == nil:
		return code
	case errors.Is(err, executor.ErrShutdownTimeout):
		logf("%s", timeoutMsg)
	default:
		logf("%v", err)
	}
	return 1
}

// NewStatus is a task status update; an empty message is left unset.
func NewStatus(taskID *mesos.TaskID, state mesos.TaskState, reason *mesos.TaskStatus_Reason, message string) *mesos.TaskStatus {
	st := &mesos.TaskStatus{TaskId: taskID, State: state.Enum(), Reason: reason}
	if message != "" {
		st.Message = proto.String(message)
	}
	return st
}

// HealthStatus is the TASK_RUNNING update that reports a health change, as
// Mesos's executors send it.
func HealthStatus(taskID *mesos.TaskID, healthy bool) *mesos.TaskStatus {
	return &mesos.TaskStatus{
		TaskId:  taskID,
		State:   mesos.TaskState_TASK_RUNNING.Enum(),
		Reason:  mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED.Enum(),
		Healthy: proto.Bool(healthy),
	}
}

// NewChecker prepares task's health check, running in dir with env, or
// returns nil when the task has none or it is invalid (the master validates
// health checks; like Mesos's executors, an invalid one is only logged).
func NewChecker(c *executor.Client, task *mesos.TaskInfo, env []string, dir string, logf Logf) *health.Checker {
	if task.HealthCheck == nil {
		return nil
	}
	hc, err := health.New(task.GetHealthCheck(), health.Options{
		Clock:  c.Clock(),
		Env:    env,
		Dir:    dir,
		Output: os.Stderr,
	})
	if err != nil {
		logf("not health checking task %s: %v", task.GetTaskId().GetValue(), err)
		return nil
	}
	return hc
}

// StartChecker starts hc and delivers each of its Results to onResult on the
// client loop.
func StartChecker(c *executor.Client, hc *health.Checker, onResult func(health.Result)) {
	hc.Start(context.Background(), func(r health.Result) {
		c.Post(func() { onResult(r) })
	})
}

// LogResult logs a health Result for the task with the given ID.
func LogResult(logf Logf, id string, r health.Result) {
	if r.Healthy {
		logf("task %s is healthy", id)
	} else {
		logf("task %s is not healthy: %s (%d consecutive failures)", id, r.Message, r.ConsecutiveFailures)
	}
}
