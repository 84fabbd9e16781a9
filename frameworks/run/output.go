package run

import (
	"context"
	"time"
)

// Output follows a running task's stdout and stderr (cli.TaskOutput reads
// them from the agent's sandbox through /files/read, as `mezzo logs
// --follow` does).
//
// Run calls Follow once, on its own goroutine, when the task first reports
// TASK_STARTING or TASK_RUNNING. Follow copies what the task writes as it
// writes it. When ended is closed (the task reached a terminal state), it
// copies what remains and returns; when ctx ends it returns at once. Run
// waits for it before tearing the framework down, because the sandbox's
// files outlive the framework only until the agent's garbage collection.
type Output interface {
	Follow(ctx context.Context, task LaunchedTask, ended <-chan struct{}) error
}

// LaunchedTask names the task whose output to follow.
type LaunchedTask struct {
	FrameworkID string
	AgentID     string
	TaskID      string
}

// drainTimeout bounds the wait for the last of the task's output once it
// ended (an agent that went away must not hold the exit).
const drainTimeout = 15 * time.Second

// follower is one Follow in flight.
type follower struct {
	ended chan struct{}
	done  chan error
	stop  context.CancelFunc
}

// startOutput starts following the task's output, once.
func (r *runner) startOutput(ctx context.Context) {
	if r.opts.Output == nil || r.output != nil {
		return
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	f := &follower{ended: make(chan struct{}), done: make(chan error, 1), stop: stop}
	r.output = f
	t := LaunchedTask{FrameworkID: r.client.FrameworkID().GetValue(), AgentID: r.agentID.GetValue(), TaskID: r.taskID.GetValue()}
	go func() { f.done <- r.opts.Output.Follow(ctx, t, f.ended) }()
}

// finishOutput lets the follower copy the rest and waits for it, at most
// drainTimeout (wall time: this guards against a vanished agent, it does
// not order events).
func (r *runner) finishOutput() {
	f := r.output
	if f == nil {
		return
	}
	r.output = nil
	close(f.ended)
	t := time.NewTimer(drainTimeout)
	defer t.Stop()
	select {
	case err := <-f.done:
		if err != nil {
			r.logf("Could not read the task's output: %v (try `mezzo logs %s`)\n", err, r.taskID.GetValue())
		}
	case <-t.C:
		r.logf("Gave up waiting for the task's output after %v (try `mezzo logs %s`)\n", drainTimeout, r.taskID.GetValue())
	}
	f.stop()
}

// stopOutput ends a follower that is still running, without waiting for
// the rest of the output (Run is returning for another reason than the
// task's end).
func (r *runner) stopOutput() {
	if r.output != nil {
		r.output.stop()
		r.output = nil
	}
}
