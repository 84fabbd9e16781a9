package authorizer

import "mezzo/api/mesos"

// The objects of the user-based actions, derived from the Mesos messages
// as Mesos's local authorizer derives them (src/authorizer/local/
// authorizer.cpp, LocalAuthorizerObjectApprover::approved). A user that is
// unset falls back to the framework's, even when that is empty: the
// object is then the value "", which only ANY (or NONE) objects match.

// RunTaskObject is run_tasks' object: the user task t runs as — its
// command's user, else its executor's (exec: the task's own executor, or
// a task group's), else the framework's.
func RunTaskObject(t *mesos.TaskInfo, exec *mesos.ExecutorInfo, fw *mesos.FrameworkInfo) Object {
	if hasUser(t.GetCommand()) {
		return Value(t.GetCommand().GetUser())
	}
	if exec == nil {
		exec = t.GetExecutor()
	}
	if hasUser(exec.GetCommand()) {
		return Value(exec.GetCommand().GetUser())
	}
	if fw != nil {
		return Value(fw.GetUser())
	}
	return AnyObject
}

// ViewFrameworkObject is view_frameworks' object: the framework's user.
func ViewFrameworkObject(fw *mesos.FrameworkInfo) Object { return Value(fw.GetUser()) }

// ViewTaskObject is view_tasks' object: the task's user, else its
// framework's.
func ViewTaskObject(t *mesos.Task, fw *mesos.FrameworkInfo) Object {
	if t != nil && t.User != nil {
		return Value(t.GetUser())
	}
	return Value(fw.GetUser())
}

// ViewExecutorObject is view_executors' object: the executor's command's
// user, else its framework's.
func ViewExecutorObject(e *mesos.ExecutorInfo, fw *mesos.FrameworkInfo) Object {
	if hasUser(e.GetCommand()) {
		return Value(e.GetCommand().GetUser())
	}
	return Value(fw.GetUser())
}

// AccessSandboxObject is access_sandboxes' object: the executor's
// command's user, else its framework's; ANY when neither is known.
func AccessSandboxObject(e *mesos.ExecutorInfo, fw *mesos.FrameworkInfo) Object {
	if hasUser(e.GetCommand()) {
		return Value(e.GetCommand().GetUser())
	}
	if fw != nil {
		return Value(fw.GetUser())
	}
	return AnyObject
}

// TeardownObject is teardown_frameworks' object: the framework's principal.
func TeardownObject(fw *mesos.FrameworkInfo) Object { return Value(fw.GetPrincipal()) }

// hasUser reports whether c sets a user (possibly "").
func hasUser(c *mesos.CommandInfo) bool { return c != nil && c.User != nil }
