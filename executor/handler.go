// Package executor is mezzo's executor library: it speaks the Mesos v1
// executor HTTP API (POST /api/v1/executor on the agent) for an executor
// process, and hands the agent's events to a Handler.
//
// It is used by the built-in command executor (executor/command, `mezzo
// executor`) and the default executor for task groups (executor/group,
// `mezzo default-executor`), and can be used by custom executors written in
// Go. It imports only api/..., and internal leaf helpers.
//
// What the library does for its user, as Mesos's own executor library does:
//   - reads the agent-provided environment (ConfigFromEnv);
//   - SUBSCRIBEs and reads the RecordIO event stream (protobuf or JSON);
//   - keeps every status update it sent until the agent ACKNOWLEDGES it, and
//     every launched task until one of its updates is acknowledged, and
//     passes both in each SUBSCRIBE so the agent can replay them;
//   - stamps updates with a fresh 16-byte UUID, a timestamp, SOURCE_EXECUTOR
//     and the executor ID;
//   - when the connection breaks: with checkpointing it re-subscribes with a
//     random backoff bounded by MESOS_SUBSCRIPTION_BACKOFF_MAX and gives up
//     after MESOS_RECOVERY_TIMEOUT; without checkpointing (or on giving up)
//     it delivers a locally injected SHUTDOWN;
//   - after SHUTDOWN it lets the executor run at most the shutdown grace
//     period (Run then returns ErrShutdownTimeout).
package executor

import (
	"mezzo/api/executorpb"
	mesos "mezzo/api/mesos"
)

// Handler receives the agent's events. Every method is called on the
// client's loop goroutine (the goroutine running Client.Run), one at a time,
// so a handler may keep its state without locks as long as other goroutines
// reach it only through Client.Post. HEARTBEAT events are not delivered.
type Handler interface {
	// Subscribed is called on every successful (re-)subscription.
	Subscribed(c *Client, ev *executorpb.Event_Subscribed)
	// Launch asks the executor to run a task.
	Launch(c *Client, task *mesos.TaskInfo)
	// LaunchGroup asks the executor to run a task group atomically.
	LaunchGroup(c *Client, group *mesos.TaskGroupInfo)
	// Kill asks the executor to kill a task; policy may be nil.
	Kill(c *Client, taskID *mesos.TaskID, policy *mesos.KillPolicy)
	// Acknowledged reports that the agent has taken the update with uuid;
	// the library has already dropped it from its unacknowledged set.
	Acknowledged(c *Client, taskID *mesos.TaskID, uuid []byte)
	// Message carries framework data sent to the executor.
	Message(c *Client, data []byte)
	// Shutdown asks the executor to kill its tasks and exit. It is delivered
	// once, whether the agent sent it or the library injected it because the
	// agent is gone (then AgentGone reports true).
	Shutdown(c *Client)
	// Error reports an error from the agent or a stream the library could
	// not decode.
	Error(c *Client, message string)
}
