package agent

import (
	"iter"
	"slices"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/stout"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

func shutdownEvent() *executorpb.Event {
	return &executorpb.Event{Type: executorpb.Event_SHUTDOWN.Enum()}
}

func (a *core) shutdownGrace(e *executor) time.Duration {
	return time.Duration(e.shutdownGrace(int64(a.cfg.ExecutorShutdownGracePeriod)))
}

// lostState is TASK_DROPPED for partition-aware frameworks, else TASK_LOST.
func (a *core) lostState(fw *framework) mesos.TaskState {
	if fw != nil && fw.hasCapability(mesos.FrameworkInfo_Capability_PARTITION_AWARE) {
		return mesos.TaskState_TASK_DROPPED
	}
	return mesos.TaskState_TASK_LOST
}

// flushQueue delivers the queued launches to a subscribed executor.
func (a *core) flushQueue(e *executor) {
	for _, item := range e.queue {
		ev := &executorpb.Event{}
		if item.task != nil {
			ev.Type = executorpb.Event_LAUNCH.Enum()
			ev.Launch = &executorpb.Event_Launch{Task: item.task}
		} else {
			ev.Type = executorpb.Event_LAUNCH_GROUP.Enum()
			ev.LaunchGroup = &executorpb.Event_LaunchGroup{TaskGroup: item.group}
		}
		if err := e.conn.Send(ev); err != nil {
			a.log.Warn("delivering a launch to the executor", "executor", e.id, "err", err)
			return // the executor re-subscribes and gets what is left
		}
		for _, id := range item.taskIDs() {
			if t := e.tasks[id]; t != nil {
				t.queued = false
			}
		}
	}
	e.queue = nil
}

// launched records a started container (loop).
func (a *Agent) launched(e *executor, c containerizer.Container) {
	e.launching = false
	e.pid = c.Pid
	if e.direct {
		a.directLaunched(e)
		return
	}
	if err := a.resize(e, nil); err != nil {
		a.failJoinedDuringLaunch(e, err)
	}
	if e.phase == phaseTerminating && e.conn == nil {
		a.destroyContainer(e, 0)
	}
}

// launchFailed ends an executor whose container could not start: its
// tasks fail with REASON_CONTAINER_LAUNCH_FAILED.
func (a *Agent) launchFailed(e *executor, err error) {
	e.launching = false
	a.metrics.containerLaunchErrors++
	a.log.Error("container launch failed", "framework", e.fw.id, "executor", e.id, "container", e.containerID, "err", err)
	if e.pending == nil {
		e.pending = &termination{mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED,
			"Failed to launch container: " + err.Error()}
	}
	a.executorExited(e, nil)
}

// registrationTimeout kills an executor that did not subscribe in time.
func (a *core) registrationTimeout(e *executor) {
	if e.phase != phaseRegistering {
		return
	}
	a.log.Warn("executor did not subscribe in time; killing it", "framework", e.fw.id, "executor", e.id,
		"timeout", a.cfg.ExecutorRegistrationTimeout)
	e.pending = &termination{mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_EXECUTOR_REGISTRATION_TIMEOUT,
		"Executor did not register within " + stout.FormatDuration(a.cfg.ExecutorRegistrationTimeout)}
	e.phase = phaseTerminating
	if !e.launching {
		a.destroyContainer(e, 0)
	}
}

// destroyContainer kills the executor's container off the loop; the exit
// arrives through the container's waiter.
// liveExecutors yields every executor not yet terminated (ending ones
// included): frameworks in the order they came, each one's executors in
// launch order.
func (a *core) liveExecutors() iter.Seq[*executor] {
	return func(yield func(*executor) bool) {
		for _, fid := range a.fwOrder {
			fw := a.frameworks[fid]
			for _, eid := range fw.order {
				if e := fw.executors[eid]; e != nil && e.phase != phaseTerminated && !yield(e) {
					return
				}
			}
		}
	}
}

func (a *core) destroyContainer(e *executor, grace time.Duration) {
	a.destroy(e.containerID, grace)
}

// shutdownExecutor asks the executor to shut down (SHUTDOWN event) and
// kills its container after the shutdown grace period; an executor that
// never subscribed is killed at once.
func (a *core) shutdownExecutor(e *executor) {
	if e.phase == phaseTerminating || e.phase == phaseTerminated {
		return
	}
	e.regTimer.Stop()
	e.phase = phaseTerminating
	if e.direct {
		// No executor to tell: the container gets its stop signal and the
		// shutdown grace period.
		a.stopDirectHealth(e)
		if !e.launching {
			a.destroyContainer(e, a.shutdownGrace(e))
		}
		return
	}
	if e.conn == nil {
		if !e.launching {
			a.destroyContainer(e, 0)
		}
		return
	}
	e.conn.Send(shutdownEvent())
	e.shutdownTimer = a.after(a.shutdownGrace(e), func() {
		if e.phase != phaseTerminated {
			a.destroyContainer(e, 0)
		}
	})
}

// shutdownFramework kills every executor of the framework; its tasks get
// no further updates from the agent (the framework is gone).
func (a *core) shutdownFramework(id string) {
	fw := a.frameworks[id]
	if fw == nil {
		return
	}
	fw.shuttingDown = true
	a.dropDeferredFramework(id)
	for _, eid := range append([]string(nil), fw.order...) {
		if e := fw.executors[eid]; e != nil {
			e.queue = nil
			a.shutdownExecutor(e)
			a.maybeRemoveExecutor(e)
		}
	}
	a.maybeRemoveFramework(fw)
}

// executorExited handles the end of an executor's container: every task
// without a terminal update gets one from the agent, the master hears
// EXECUTOR_EXITED, and the sandbox stays for browsing.
func (a *Agent) executorExited(e *executor, term *containerizer.Termination) {
	if e.phase == phaseTerminated {
		return
	}
	e.phase = phaseTerminated
	e.launching = false
	a.stopDirectHealth(e)
	a.executorReregistered(e)
	e.regTimer.Stop()
	e.shutdownTimer.Stop()
	if e.conn != nil {
		e.conn.Close()
		e.conn = nil
	}
	a.metrics.executorsTerminated++
	fw := e.fw
	a.log.Info("executor terminated", "framework", fw.id, "executor", e.id, "container", e.containerID,
		"termination", terminationText(term))
	if !fw.shuttingDown {
		for _, t := range e.liveTasks() {
			if a.directTerminal(e, t, term) {
				continue
			}
			id := t.t.GetTaskId().GetValue()
			state, reason := mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_EXECUTOR_TERMINATED
			msg := "Abnormal executor termination"
			if term != nil && term.Message != "" {
				msg += ": " + term.Message
			}
			switch {
			case term != nil && term.Limitation != nil:
				state, reason, msg = mesos.TaskState_TASK_FAILED, term.Limitation.Reason, term.Limitation.Message
			case e.pending != nil:
				state, reason, msg = e.pending.state, e.pending.reason, e.pending.message
			case e.killsSent[id]:
				state = mesos.TaskState_TASK_KILLED
			}
			a.agentUpdate(fw, e, id, state, reason, msg)
		}
	}
	e.queue = nil
	exited := &protocol.AgentCall_ExecutorExited{
		FrameworkId: fw.info.GetId(),
		ExecutorId:  e.info.GetExecutorId(),
	}
	if term != nil {
		exited.Status = proto.Int32(int32(term.Status))
	}
	a.sendCall(&protocol.AgentCall{Type: protocol.AgentCall_EXECUTOR_EXITED.Enum(), ExecutorExited: exited})
	a.maybeRemoveExecutor(e)
	a.removeKeptVolumes() // volumes dropped while this container used them
	a.retryDeferred()     // launches waiting for evicted tenants (lending.go)
}

func terminationText(t *containerizer.Termination) string {
	if t == nil {
		return "never started"
	}
	return t.Message
}

// maybeRemoveExecutor moves a terminated executor to the framework's
// completed executors once all its terminal updates are acknowledged (at
// once when the framework is being shut down).
func (a *core) maybeRemoveExecutor(e *executor) {
	fw := e.fw
	if e.phase != phaseTerminated || (len(e.tasks) > 0 && !fw.shuttingDown) {
		return
	}
	for _, id := range append([]string(nil), e.taskOrder...) {
		e.completeTask(id)
	}
	if fw.executors[e.id] != e {
		return
	}
	delete(fw.executors, e.id)
	for i, id := range fw.order {
		if id == e.id {
			fw.order = append(fw.order[:i], fw.order[i+1:]...)
			break
		}
	}
	fw.completed = append(fw.completed, e)
	if a.sess.agentID != "" {
		if err := a.cp.forgetExecutor(a.sess.agentID, fw, e); err != nil {
			a.log.Warn("removing executor checkpoint", "framework", fw.id, "executor", e.id, "err", err)
		}
	}
	if n := len(fw.completed); n > maxCompletedExecutorsPerFramework {
		fw.completed = fw.completed[n-maxCompletedExecutorsPerFramework:]
	}
	a.maybeRemoveFramework(fw)
}

// maybeRemoveFramework moves a framework without executors to the
// completed frameworks.
func (a *core) maybeRemoveFramework(fw *framework) {
	if len(fw.executors) > 0 || a.frameworks[fw.id] != fw || a.hasDeferred(fw) {
		return
	}
	delete(a.frameworks, fw.id)
	for i, id := range a.fwOrder {
		if id == fw.id {
			a.fwOrder = append(a.fwOrder[:i], a.fwOrder[i+1:]...)
			break
		}
	}
	a.completedF = append(a.completedF, fw)
	if n := len(a.completedF); n > maxCompletedFrameworks {
		a.completedF = a.completedF[n-maxCompletedFrameworks:]
	}
	if fw.shuttingDown {
		// Its unacknowledged updates will never be acknowledged.
		a.sum.CleanupFramework(fw.id)
	}
	if a.sess.agentID != "" {
		if err := a.cp.forgetFramework(a.sess.agentID, fw); err != nil {
			a.log.Warn("removing framework checkpoint", "framework", fw.id, "err", err)
		}
	}
}

// killTask handles KILL_TASK from the master.
func (a *core) killTask(m *protocol.AgentEvent_KillTask) {
	fid, tid := m.GetFrameworkId().GetValue(), m.GetTaskId().GetValue()
	if fid == "" || tid == "" {
		a.log.Warn("dropping malformed KILL_TASK (needs framework_id and task_id)")
		return
	}
	if a.killDeferred(fid, tid) {
		return // its launch was waiting for evictions
	}
	fw := a.frameworks[fid]
	var e *executor
	if fw != nil {
		e = fw.executorFor(tid)
	}
	if e == nil {
		// The task was never launched here (or is long gone).
		a.agentUpdateFor(fid, fw, nil, tid, a.lostState(fw), mesos.TaskStatus_REASON_EXECUTOR_TERMINATED, "Cannot find executor")
		return
	}
	t := e.tasks[tid]
	if t.terminal {
		return
	}
	if t.queued {
		a.killQueued(e, tid)
		return
	}
	e.killsSent[tid] = true
	if e.direct {
		a.killDirectTask(e, t, m.GetKillPolicy())
		return
	}
	if e.phase != phaseRunning {
		return // it is going away; its end reports the task KILLED
	}
	if e.conn == nil {
		a.log.Warn("cannot deliver KILL: the executor is disconnected", "executor", e.id, "task", tid)
		return
	}
	policy := m.GetKillPolicy()
	if policy == nil {
		policy = t.t.GetKillPolicy()
	}
	e.conn.Send(&executorpb.Event{
		Type: executorpb.Event_KILL.Enum(),
		Kill: &executorpb.Event_Kill{TaskId: t.t.GetTaskId(), KillPolicy: policy},
	})
}

// killQueued kills a task the executor has not received yet (with the rest
// of its task group); an executor left without tasks is shut down.
func (a *core) killQueued(e *executor, tid string) {
	for i, item := range e.queue {
		ids := item.taskIDs()
		if !contains(ids, tid) {
			continue
		}
		e.queue = append(e.queue[:i], e.queue[i+1:]...)
		for _, id := range ids {
			a.agentUpdate(e.fw, e, id, mesos.TaskState_TASK_KILLED, mesos.TaskStatus_REASON_TASK_KILLED_DURING_LAUNCH,
				"Killed before delivery to the executor")
		}
		break
	}
	if len(e.queue) == 0 && len(e.liveTasks()) == 0 {
		a.shutdownExecutor(e)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// resize sizes a container that is up for what its executor now holds
// (its own resources, its live tasks' and more, the tasks about to join),
// as Mesos's agent updates its containerizer when a running executor gets
// a task or one of its tasks ends. A container still launching is sized
// when it has launched; a direct task's holds that one task; one being
// torn down is left alone.
func (a *core) resize(e *executor, more []*mesos.Resource) error {
	if e.launching || e.direct || e.phase == phaseTerminating || e.phase == phaseTerminated {
		return nil
	}
	want := append(e.allocation(), more...)
	if slices.EqualFunc(want, e.sized, func(x, y *mesos.Resource) bool { return proto.Equal(x, y) }) {
		return nil
	}
	if err := a.containers.update(e.containerID, want); err != nil {
		return err
	}
	e.sized = want
	return nil
}

// resizeOrWarn is resize when nothing waits on its outcome: a container
// that cannot shrink keeps its larger limits.
func (a *core) resizeOrWarn(e *executor) {
	if err := a.resize(e, nil); err != nil {
		a.log.Warn("resizing container", "framework", e.fw.id, "executor", e.id, "container", e.containerID, "err", err)
	}
}

// failJoinedDuringLaunch fails the tasks that joined an executor while its
// container was launching when the container cannot grow to hold them:
// not yet delivered, they end TASK_FAILED as a task refused at a running
// executor does (handleStatus then sizes the container back down), and
// the tasks the container was launched for go on.
func (a *core) failJoinedDuringLaunch(e *executor, err error) {
	kept := e.queue[:0]
	for _, item := range e.queue {
		ids := item.taskIDs()
		if slices.ContainsFunc(ids, func(id string) bool { return contains(e.launchedWith, id) }) {
			kept = append(kept, item)
			continue
		}
		for _, id := range ids {
			a.agentUpdate(e.fw, e, id, mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_UPDATE_FAILED,
				"Failed to update container: "+err.Error())
		}
	}
	e.queue = kept
}

// acknowledge hands the scheduler's acknowledgement to the status update
// manager; an acknowledged terminal update completes the task.
func (a *core) acknowledge(m *protocol.AgentEvent_Acknowledge) {
	fid, tid := m.GetFrameworkId().GetValue(), m.GetTaskId().GetValue()
	terminal, err := a.sum.Acknowledge(fid, tid, m.GetUuid())
	if err != nil {
		a.log.Warn("ignoring acknowledgement", "framework", fid, "task", tid, "err", err)
		return
	}
	if !terminal {
		return
	}
	if fw := a.frameworks[fid]; fw != nil {
		if e := fw.executorFor(tid); e != nil {
			e.completeTask(tid)
			a.forgetTask(e, tid)
			a.maybeRemoveExecutor(e)
		}
	}
}

// frameworkMessage delivers scheduler data to a subscribed executor.
func (a *core) frameworkMessage(m *protocol.AgentEvent_FrameworkMessage) {
	fw := a.frameworks[m.GetFrameworkId().GetValue()]
	var e *executor
	if fw != nil {
		e = fw.executors[m.GetExecutorId().GetValue()]
	}
	if e == nil || e.phase != phaseRunning || e.conn == nil {
		a.metrics.invalidFrameworkMessages++
		a.log.Warn("dropping framework message for an executor that is not subscribed",
			"framework", m.GetFrameworkId().GetValue(), "executor", m.GetExecutorId().GetValue())
		return
	}
	a.metrics.validFrameworkMessages++
	e.conn.Send(&executorpb.Event{Type: executorpb.Event_MESSAGE.Enum(), Message: &executorpb.Event_Message{Data: m.GetData()}})
}

// updateFramework refreshes a framework's info (failover, UPDATE_FRAMEWORK).
// The master sends it when the framework (re-)subscribes, so the
// framework's unacknowledged updates are forwarded now rather than at their
// next backoff retry (up to 10 minutes away), as Mesos's agent resumes its
// status update manager here; that includes updates of tasks the agent no
// longer holds (e.g. TASK_LOST for a task of a framework it forgot).
func (a *core) updateFramework(info *mesos.FrameworkInfo) {
	a.sum.RetryFramework(info.GetId().GetValue())
	fw := a.frameworks[info.GetId().GetValue()]
	if fw == nil {
		return
	}
	fw.info = proto.Clone(info).(*mesos.FrameworkInfo)
	a.checkpointFramework(fw)
}

// reconcile answers the master's view after re-registration: tasks the
// agent does not know are reported lost (dropped).
// The framework's capabilities come from the agent's record or, for a
// framework it never saw (its RUN_TASK was lost), from the master's.
func (a *core) reconcile(m *protocol.AgentEvent_Reconcile) {
	infos := map[string]*mesos.FrameworkInfo{}
	for _, info := range m.GetFrameworks() {
		infos[info.GetId().GetValue()] = info
	}
	for _, t := range m.GetTasks() {
		fid, tid := t.GetFrameworkId().GetValue(), t.GetTaskId().GetValue()
		if fid == "" || tid == "" {
			continue
		}
		fw := a.frameworks[fid]
		if fw != nil && fw.executorFor(tid) != nil || a.deferredTask(fid, tid) != nil {
			continue
		}
		if _, known := a.sum.Latest(fid, tid); known {
			continue // the agent already reported its outcome (e.g. TASK_LOST without an executor)
		}
		state := a.lostState(fw)
		if fw == nil && infos[fid] != nil {
			state = a.lostState(&framework{id: fid, info: infos[fid]})
		}
		a.agentUpdateFor(fid, fw, nil, tid, state, mesos.TaskStatus_REASON_RECONCILIATION,
			"Reconciliation: task unknown to the agent")
	}
}

// agentUpdate sends a status update generated by the agent itself.
func (a *core) agentUpdate(fw *framework, e *executor, taskID string, state mesos.TaskState, reason mesos.TaskStatus_Reason, msg string) {
	a.agentUpdateFor(fw.id, fw, e, taskID, state, reason, msg)
}

func (a *core) agentUpdateFor(fid string, fw *framework, e *executor, taskID string, state mesos.TaskState, reason mesos.TaskStatus_Reason, msg string) {
	id := uuid.New()
	st := &mesos.TaskStatus{
		TaskId:    &mesos.TaskID{Value: proto.String(taskID)},
		State:     state.Enum(),
		Source:    mesos.TaskStatus_SOURCE_AGENT.Enum(),
		Reason:    reason.Enum(),
		Message:   proto.String(msg),
		AgentId:   agentIDProto(a.sess.agentID),
		Timestamp: proto.Float64(float64(a.clock.Now().UnixNano()) / 1e9),
		Uuid:      id[:],
	}
	if e != nil {
		st.ExecutorId = e.info.GetExecutorId()
	}
	checkpoint := fw != nil && fw.checkpoint()
	a.handleStatus(fid, checkpoint, e, st)
}

// handleStatus applies a status to the task and hands it to the status
// update manager; it reports whether the manager took it.
func (a *core) handleStatus(fid string, checkpoint bool, e *executor, st *mesos.TaskStatus) bool {
	if e != nil {
		if e.updateTaskState(st) && mesos.IsTerminal(st.GetState()) {
			a.countTerminal(st.GetState())
			if len(e.liveTasks()) > 0 {
				a.resizeOrWarn(e)
			}
		}
	} else if mesos.IsTerminal(st.GetState()) {
		a.countTerminal(st.GetState())
	}
	u := &protocol.AgentCall_StatusUpdate{FrameworkId: &mesos.FrameworkID{Value: proto.String(fid)}, Status: st}
	if e != nil {
		u.ExecutorId = e.info.GetExecutorId()
	}
	if err := a.sum.Update(u, checkpoint); err != nil {
		a.metrics.invalidUpdates++
		a.log.Warn("status update refused", "framework", fid, "task", st.GetTaskId().GetValue(),
			"state", st.GetState().String(), "err", err)
		return false
	}
	a.metrics.validUpdates++
	return true
}

func (a *core) countTerminal(s mesos.TaskState) {
	m := &a.metrics
	switch s {
	case mesos.TaskState_TASK_FINISHED:
		m.tasksFinished++
	case mesos.TaskState_TASK_FAILED:
		m.tasksFailed++
	case mesos.TaskState_TASK_KILLED:
		m.tasksKilled++
	case mesos.TaskState_TASK_LOST:
		m.tasksLost++
	case mesos.TaskState_TASK_ERROR:
		m.tasksError++
	case mesos.TaskState_TASK_DROPPED:
		m.tasksDropped++
	case mesos.TaskState_TASK_GONE:
		m.tasksGone++
	case mesos.TaskState_TASK_GONE_BY_OPERATOR:
		m.tasksGoneByOperator++
	}
}
