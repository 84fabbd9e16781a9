package run

import (
	"context"
	"errors"
	"net/http"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/scheduler"
)

// Surviving a master failover (several --master addresses).
//
// When the leading master goes away, calls to it fail: the connection
// drops, or it answers 307 (no longer the leader) or 503 (no leader
// elected yet). Package scheduler notices the end of the event stream and
// re-subscribes, at the new leader, with the same framework id; Run waits
// for that (the next SUBSCRIBED event) instead of giving up.
//
// An ACCEPT that failed that way may or may not have reached the old
// leader, so launching again could run the task twice. The rule:
//
//   - the launch becomes "uncertain": no further ACCEPT, offers are
//     declined with the default (short) filter;
//   - Run reconciles the task explicitly (task id and agent id) at once
//     and again after every re-subscription;
//   - an answer with TASK_LOST, TASK_UNKNOWN or TASK_GONE and
//     REASON_RECONCILIATION for a task of which no other update was ever
//     seen means the master does not know the task: it never started, and
//     Run launches it again on the next fitting offer (reviving offers);
//   - any other update settles it: the task exists and is followed as
//     usual (a reconciliation answer for a task that had started is a real
//     end).
//
// A master answers nothing for a task whose agent has not re-registered
// with it yet; Run then keeps waiting (bounded by Options.Timeout) until
// the agent re-registers and the master reports the task.

// launchState is where the task's launch stands.
type launchState int

const (
	notLaunched     launchState = iota // no ACCEPT sent, or the task is known never to have started
	launchUncertain                    // an ACCEPT failed in a failover: it may have reached the master
	launched                           // the master accepted the ACCEPT
)

// failedOver reports whether a call's error means the master went away or
// is not (or no longer) the leader, so that the call's effect is unknown
// and the subscription will be re-established, rather than that the master
// refused the call.
func failedOver(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, scheduler.ErrNotSubscribed) {
		return true
	}
	var se *scheduler.Error
	if errors.As(err, &se) {
		// 403 "Framework is not subscribed": the master lost our stream.
		return se.Temporary() || se.Status == http.StatusForbidden
	}
	// Anything else never got an HTTP answer: a connection error.
	return true
}

// unknownToMaster reports whether s is the master's reconciliation answer
// for a task it does not know.
func unknownToMaster(s *mesos.TaskStatus) bool {
	if s.GetReason() != mesos.TaskStatus_REASON_RECONCILIATION {
		return false
	}
	switch s.GetState() {
	case mesos.TaskState_TASK_LOST, mesos.TaskState_TASK_UNKNOWN, mesos.TaskState_TASK_GONE:
		return true
	}
	return false
}

// reconcile asks the master for the task's state (explicit
// reconciliation); a failure is only logged: the next SUBSCRIBED retries.
func (r *runner) reconcile(ctx context.Context) {
	task := &schedulerpb.Call_Reconcile_Task{TaskId: r.taskID, AgentId: r.agentID}
	if err := r.client.Reconcile(ctx, []*schedulerpb.Call_Reconcile_Task{task}); err != nil {
		r.logf("Reconcile failed: %v\n", err)
	}
}

// neverStarted handles the master's word that it does not know the task
// (see the rule above): the launch is forgotten and offers revived.
func (r *runner) neverStarted(ctx context.Context, s *mesos.TaskStatus) {
	r.logf("Task %s is unknown to the master (%s); it never started: launching it again\n",
		r.opts.TaskID, s.GetState())
	r.state = notLaunched
	r.agentID = nil
	if r.suppressed {
		if err := r.client.Revive(ctx); err != nil {
			r.logf("Revive failed: %v\n", err)
		} else {
			r.suppressed = false
		}
	}
}
