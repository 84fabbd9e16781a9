package mesos

import "time"

// Hand-written helpers over the generated types: task semantics every
// component (master, agent, executors, clients) must agree on.

// IsTerminal reports whether a task in state s will not change state again,
// as Mesos defines it. TASK_UNREACHABLE and TASK_UNKNOWN are not terminal.
func IsTerminal(s TaskState) bool {
	switch s {
	case TaskState_TASK_FINISHED, TaskState_TASK_FAILED, TaskState_TASK_KILLED,
		TaskState_TASK_ERROR, TaskState_TASK_LOST, TaskState_TASK_DROPPED,
		TaskState_TASK_GONE, TaskState_TASK_GONE_BY_OPERATOR:
		return true
	}
	return false
}

// DefaultKillGracePeriod is the SIGTERM-to-SIGKILL delay of a kill when
// neither the KILL nor the task carries a KillPolicy (Mesos's command,
// default and docker executors use 3 seconds).
const DefaultKillGracePeriod = 3 * time.Second

// KillGracePeriod picks the grace period of a kill: the KILL's policy, else
// the task's, else DefaultKillGracePeriod. Negative durations count as 0.
func KillGracePeriod(override *KillPolicy, task *TaskInfo) time.Duration {
	if gp := override.GetGracePeriod(); gp != nil {
		return time.Duration(max(gp.GetNanoseconds(), 0))
	}
	if gp := task.GetKillPolicy().GetGracePeriod(); gp != nil {
		return time.Duration(max(gp.GetNanoseconds(), 0))
	}
	return DefaultKillGracePeriod
}
