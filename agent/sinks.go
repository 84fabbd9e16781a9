package agent

import (
	"context"
	"errors"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/fetcher"
	"mezzo/agent/oversub"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
)

// The sinks: the only ways the agent's loop-owned state acts on the world.
// New wires each to real I/O (the adapters below); the pure tests
// (core_test.go, session_test.go) wire recorders instead, so that running,
// killing and ending tasks is tested without processes, sockets or clocks.
// Every method is called on the loop goroutine and must not block: slow
// work runs on other goroutines and reports back through Agent.post.

// containerSink starts and ends containers.
type containerSink interface {
	// start fetches e's URIs, launches its container (direct: the task the
	// agent itself runs in it) and waits for it, off the loop; the loop
	// hears launched, launchFailed and executorExited.
	start(e *executor, cfg containerizer.ContainerConfig, uris []*mesos.CommandInfo_URI, fetch fetcher.Options, direct *mesos.TaskInfo)
	// destroy kills a container: the stop signal, then SIGKILL after
	// grace; its end arrives through start's wait.
	destroy(containerID string, grace time.Duration)
	// update sizes a live container for resources (the executor's and
	// its live tasks'). It runs on the loop, as the checkpoints do: a
	// task must not reach its executor before the container can hold it.
	update(containerID string, resources []*mesos.Resource) error
}

// updateSink is the status update manager as the loop uses it
// (*statusupdate.Manager): it checkpoints, forwards and retries each
// update until the scheduler acknowledges it.
type updateSink interface {
	Update(u *protocol.AgentCall_StatusUpdate, checkpoint bool) error
	Acknowledge(frameworkID, taskID string, uuid []byte) (terminal bool, err error)
	Pending(frameworkID, taskID string) []*protocol.AgentCall_StatusUpdate
	Latest(frameworkID, taskID string) (*mesos.TaskStatus, bool)
	Unacknowledged() []*protocol.AgentCall_StatusUpdate
	RetryFramework(frameworkID string)
	CleanupFramework(frameworkID string)
	Pause()
	Resume()
}

// callSink posts calls to the master on the registered stream; false when
// the agent is not registered (the call is not queued).
type callSink interface {
	send(c *protocol.AgentCall) bool
}

// timerSink arms loop timers: f runs on the loop after d unless the timer
// is stopped first (loopTimer.Stop, also on the loop).
type timerSink interface {
	after(d time.Duration, f func()) *loopTimer
}

// checkpointer records the frameworks, executors and tasks the agent runs
// so that a restarted agent finds them (meta.go has the layout). Errors
// are the caller's to log: a failed checkpoint never stops a task.
type checkpointer interface {
	framework(agentID string, fw *framework) error
	executor(agentID string, fw *framework, e *executor) error
	task(agentID string, fw *framework, e *executor, t *mesos.TaskInfo) error
	forgetTask(agentID string, e *executor, taskID string) error
	forgetExecutor(agentID string, fw *framework, e *executor) error
	forgetFramework(agentID string, fw *framework) error
}

// Oversubscription has a sink of its own, oversubSink
// (oversubscription.go): the loop hands it a snapshot of the live
// containers with their allocations; the resource estimator and the QoS
// controller (agent/oversub) measure them off the loop with the
// containerizer as their Meter, and their answers come back to the loop,
// leaving through callSink (UPDATE_RESOURCES) and containerSink (the
// destroyed revocable containers).
var (
	_ oversub.Meter = containerizer.UsageReporter(nil)
	_ oversubSink   = liveOversub{}

	_ containerSink = liveContainers{}
	_ callSink      = liveCalls{}
	_ timerSink     = clockTimers{}
	_ checkpointer  = diskCheckpointer{}
)

// liveContainers runs containers through the agent's containerizer.
type liveContainers struct{ a *Agent }

func (c liveContainers) start(e *executor, cfg containerizer.ContainerConfig, uris []*mesos.CommandInfo_URI, fetch fetcher.Options, direct *mesos.TaskInfo) {
	go c.a.startContainer(e, cfg, uris, fetch, direct)
}

// update resizes a container through the containerizer, if it can.
func (c liveContainers) update(id string, rs []*mesos.Resource) error {
	u, ok := c.a.cz.(containerizer.Updater)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return u.Update(ctx, id, rs)
}

// destroy kills a container off the loop, counting failures.
func (c liveContainers) destroy(id string, grace time.Duration) {
	a := c.a
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace+time.Minute)
		defer cancel()
		if err := a.cz.Destroy(ctx, id, grace); err != nil && !errors.Is(err, containerizer.ErrUnknownContainer) {
			a.log.Warn("destroying container", "container", id, "err", err)
			a.post(func() { a.metrics.containerDestroyErrors++ })
		}
	}()
}

// liveCalls posts through the current connection's call sender; it is
// also called from the status update manager's goroutine (forward).
type liveCalls struct{ a *Agent }

func (c liveCalls) send(call *protocol.AgentCall) bool {
	s := c.a.sender.Load()
	if s == nil {
		return false
	}
	s.send(call)
	return true
}

// clockTimers arms timers on the agent's clock.
type clockTimers struct{ a *Agent }

func (c clockTimers) after(d time.Duration, f func()) *loopTimer {
	a := c.a
	lt := &loopTimer{cancel: make(chan struct{})}
	t := a.clock.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			a.post(func() {
				if !lt.stopped {
					lt.stopped = true
					f()
				}
			})
		case <-lt.cancel:
			t.Stop()
		case <-a.stop:
			t.Stop()
		}
	}()
	return lt
}

// diskCheckpointer writes the records under meta/ and the runtime
// directory (meta.go).
type diskCheckpointer struct{ a *Agent }

func (d diskCheckpointer) framework(agentID string, fw *framework) error {
	return d.a.meta.checkpointFramework(agentID, fw.info)
}

func (d diskCheckpointer) executor(agentID string, fw *framework, e *executor) error {
	return d.a.recordsFor(fw).checkpointExecutor(agentID, fw.id, e.info, e.kind, e.containerID, !cacheOnly(fw, d.a.bootID))
}

func (d diskCheckpointer) task(agentID string, fw *framework, e *executor, t *mesos.TaskInfo) error {
	return d.a.recordsFor(fw).checkpointTask(agentID, fw.id, e.id, e.containerID, t, !cacheOnly(fw, d.a.bootID))
}

func (d diskCheckpointer) forgetTask(agentID string, e *executor, taskID string) error {
	return d.a.eachMeta(func(m metaDir) error { return m.removeTask(agentID, e.fw.id, e.id, e.containerID, taskID) })
}

func (d diskCheckpointer) forgetExecutor(agentID string, fw *framework, e *executor) error {
	return d.a.eachMeta(func(m metaDir) error { return m.removeExecutor(agentID, fw.id, e.id) })
}

func (d diskCheckpointer) forgetFramework(agentID string, fw *framework) error {
	return d.a.eachMeta(func(m metaDir) error { return m.removeFramework(agentID, fw.id) })
}
