package master

import (
	"bytes"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
)

func (s *state) addTask(t *task) {
	fw := s.frameworks[t.fwID]
	fw.tasks[t.id()] = t
	if a := s.agents[t.agentID]; a != nil {
		if a.tasks[t.fwID] == nil {
			a.tasks[t.fwID] = map[string]*task{}
		}
		a.tasks[t.fwID][t.id()] = t
	}
	s.dirty = true
}

func (s *state) addExecutor(ex *executor) {
	id := ex.info.GetExecutorId().GetValue()
	if a := s.agents[ex.agentID]; a != nil {
		if a.executors[ex.fwID] == nil {
			a.executors[ex.fwID] = map[string]*executor{}
		}
		a.executors[ex.fwID][id] = ex
	}
	if fw := s.frameworks[ex.fwID]; fw != nil {
		if fw.executors[ex.agentID] == nil {
			fw.executors[ex.agentID] = map[string]*executor{}
		}
		fw.executors[ex.agentID][id] = ex
	}
	s.dirty = true
}

func (s *state) removeExecutor(ex *executor) {
	id := ex.info.GetExecutorId().GetValue()
	if a := s.agents[ex.agentID]; a != nil {
		delete(a.executors[ex.fwID], id)
		if len(a.executors[ex.fwID]) == 0 {
			delete(a.executors, ex.fwID)
		}
	}
	if fw := s.frameworks[ex.fwID]; fw != nil {
		delete(fw.executors[ex.agentID], id)
		if len(fw.executors[ex.agentID]) == 0 {
			delete(fw.executors, ex.agentID)
		}
	}
	s.dirty = true
}

// completeTask moves a task to its framework's completed tasks; its
// resources go back to the allocator if they have not already.
func (s *state) completeTask(fw *framework, t *task) {
	s.recoverTask(t)
	delete(fw.tasks, t.id())
	if a := s.agents[t.agentID]; a != nil {
		delete(a.tasks[t.fwID], t.id())
		if len(a.tasks[t.fwID]) == 0 {
			delete(a.tasks, t.fwID)
		}
	}
	fw.completedTasks = append(fw.completedTasks, t.proto)
	s.trimCompleted(fw)
	s.dirty = true
	s.drainTaskDone(t.agentID)
}

func (s *state) recoverTask(t *task) {
	if t.recovered {
		return
	}
	t.recovered = true
	s.releaseLong(t)
	if !t.res.IsEmpty() {
		s.alloc.RecoverResources(t.fwID, t.agentID, t.res, nil)
	}
}

// applyStatus records a status on the task. latest is the state used for
// accounting (the agent's latest_state may run ahead of status.state while
// earlier updates await acknowledgement): when it is terminal the task's
// resources go back to the allocator right away.
func (s *state) applyStatus(t *task, st *mesos.TaskStatus, latest mesos.TaskState, fromAgent bool) {
	if mesos.IsTerminal(latest) && !mesos.IsTerminal(t.proto.GetState()) {
		s.countTerminal(latest)
		s.countTerminalStatus(t.fwID, st, latest)
	}
	p := shallowTask(t.proto)
	p.State = latest.Enum()
	p.StatusUpdateState = st.State
	if fromAgent && len(st.GetUuid()) > 0 {
		p.StatusUpdateUuid = st.GetUuid()
	}
	rec := st // statuses are not changed once made: shared
	if st.Data != nil {
		rec = proto.CloneOf(st)
		rec.Data = nil // Mesos keeps statuses without their data payload
	}
	// A new list: the old one stays the previous proto's.
	if n := len(p.Statuses); n > 0 && p.Statuses[n-1].GetState() == rec.GetState() {
		// A retried update (or a new one in the same state) replaces
		// the last entry rather than growing the list, as Mesos.
		p.Statuses = append(p.Statuses[:n-1:n-1], rec)
	} else {
		p.Statuses = append(p.Statuses[:len(p.Statuses):len(p.Statuses)], rec)
	}
	t.proto = p
	if mesos.IsTerminal(latest) {
		s.recoverTask(t)
	}
	s.dirty = true
	s.emit(func() *masterpb.Event {
		return &masterpb.Event{Type: masterpb.Event_TASK_UPDATED.Enum(), TaskUpdated: &masterpb.Event_TaskUpdated{
			FrameworkId: frameworkID(t.fwID), Status: st, State: latest.Enum(),
		}}
	})
}

// shallowTask copies a Task proto's fields (not the messages they point
// to, which are never changed once made): tasks are copied on every status
// update, and a deep copy of the task with its resources and statuses was
// a large part of a loaded master's status handling.
func shallowTask(p *mesos.Task) *mesos.Task {
	return &mesos.Task{
		Name: p.Name, TaskId: p.TaskId, FrameworkId: p.FrameworkId, ExecutorId: p.ExecutorId,
		AgentId: p.AgentId, State: p.State, Resources: p.Resources, Statuses: p.Statuses,
		StatusUpdateState: p.StatusUpdateState, StatusUpdateUuid: p.StatusUpdateUuid, Labels: p.Labels,
		Discovery: p.Discovery, Container: p.Container, HealthCheck: p.HealthCheck, KillPolicy: p.KillPolicy,
		User: p.User, Limits: p.Limits,
	}
}

// newStatus builds a master-generated status (no uuid: it needs no ack).
func newStatus(taskID *mesos.TaskID, agent *mesos.AgentID, st mesos.TaskState, reason mesos.TaskStatus_Reason, msg string, now time.Time) *mesos.TaskStatus {
	return &mesos.TaskStatus{
		TaskId:    taskID,
		State:     st.Enum(),
		Source:    mesos.TaskStatus_SOURCE_MASTER.Enum(),
		Reason:    reason.Enum(),
		Message:   proto.String(msg),
		AgentId:   agent,
		Timestamp: proto.Float64(seconds(now)),
	}
}

// masterStatus is newStatus for a task the master tracks.
func (s *state) masterStatus(t *task, st mesos.TaskState, reason mesos.TaskStatus_Reason, msg string, now time.Time) *mesos.TaskStatus {
	status := newStatus(t.proto.GetTaskId(), agentID(t.agentID), st, reason, msg, now)
	if t.executorID != "" {
		status.ExecutorId = &mesos.ExecutorID{Value: proto.String(t.executorID)}
	}
	return status
}

// forwardStatus sends an UPDATE to the framework, translating states it
// did not opt into (see stateFor). It reports whether the update was sent.
func (s *state) forwardStatus(fw *framework, st *mesos.TaskStatus) bool {
	if fw == nil || fw.stream == nil {
		return false
	}
	out := st // statuses are not changed once made: shared
	if ns := stateFor(fw, st.GetState()); ns != st.GetState() {
		out = proto.CloneOf(st)
		out.State = ns.Enum()
	}
	s.sendFramework(fw, &schedulerpb.Event{
		Type:   schedulerpb.Event_UPDATE.Enum(),
		Update: &schedulerpb.Event_Update{Status: out},
	})
	return true
}

// statusUpdate handles an agent's STATUS_UPDATE.
func (s *state) statusUpdate(a *agent, su *protocol.AgentCall_StatusUpdate, now time.Time) {
	fwID := su.GetFrameworkId().GetValue()
	taskID := su.GetStatus().GetTaskId().GetValue()
	uuid := su.GetStatus().GetUuid()
	fw := s.frameworks[fwID]
	if fw == nil {
		s.count("master/invalid_status_updates")
		s.log.Warn("status update for unknown framework", "framework", fwID, "task", taskID, "agent", a.id)
		if s.completedIDs[fwID] && len(uuid) > 0 {
			// Nobody will ever acknowledge it; let the agent's stream move on.
			s.ackToAgent(a, fwID, su.GetStatus().GetTaskId(), uuid)
		} else {
			// The framework may yet subscribe to this master (after a
			// failover): the agent keeps retrying, and is told when.
			s.markUndelivered(fwID, a.id)
		}
		return
	}
	// The call was decoded for this update alone: its status is taken
	// over rather than copied (from here on it is shared, never changed).
	st := su.GetStatus()
	st.AgentId = agentID(a.id)
	t := fw.tasks[taskID]
	if t == nil || t.agentID != a.id {
		// As Mesos, the update still goes to the framework (e.g. the
		// TASK_LOST an agent sent for a task it never saw): its
		// acknowledgement is what lets the agent's stream end.
		s.count("master/invalid_status_updates")
		s.log.Warn("status update for unknown task", "framework", fwID, "task", taskID, "agent", a.id)
		if st.Timestamp == nil {
			st.Timestamp = proto.Float64(seconds(now))
		}
		// Remembered even when sent: nothing of the framework on this
		// agent would otherwise bring the agent a retry when the
		// framework re-subscribes (its stream may already be dead).
		s.forwardStatus(fw, st)
		if len(uuid) > 0 {
			s.markUndelivered(fwID, a.id)
		}
		return
	}
	if len(uuid) > 0 && bytes.Equal(uuid, t.ackedUUID) {
		// The agent sent again an update the scheduler has acknowledged
		// (its retry crossed the acknowledgement): the agent needs the
		// acknowledgement, the scheduler nothing. Forwarding it made an
		// overloaded cluster spend most of its time on such retries and
		// their acknowledgements.
		s.count("master/valid_status_updates")
		s.ackToAgent(a, fwID, st.GetTaskId(), uuid)
		return
	}
	if su.GetExecutorId() != nil {
		st.ExecutorId = su.GetExecutorId()
	} else if st.ExecutorId == nil && t.executorID != "" {
		st.ExecutorId = &mesos.ExecutorID{Value: proto.String(t.executorID)}
	}
	if st.Timestamp == nil {
		st.Timestamp = proto.Float64(seconds(now))
	}
	latest := st.GetState()
	if su.LatestState != nil {
		latest = su.GetLatestState()
	}
	s.applyStatus(t, st, latest, true)
	s.count("master/valid_status_updates")

	if st.GetState() == mesos.TaskState_TASK_KILLING && !fw.has(mesos.FrameworkInfo_Capability_TASK_KILLING_STATE) {
		// The framework must not see TASK_KILLING; acknowledge on its
		// behalf so that the agent delivers the next update.
		if len(uuid) > 0 {
			s.ackToAgent(a, fwID, st.GetTaskId(), uuid)
		}
	} else if !s.forwardStatus(fw, st) && len(uuid) > 0 {
		s.markUndelivered(fwID, a.id)
	}
	if mesos.IsTerminal(st.GetState()) && len(uuid) == 0 {
		s.completeTask(fw, t)
	}
}

// markUndelivered remembers that an agent holds an update the framework
// has not received; see state.undelivered.
func (s *state) markUndelivered(fwID, agentID string) {
	if s.undelivered[fwID] == nil {
		s.undelivered[fwID] = map[string]bool{}
	}
	s.undelivered[fwID][agentID] = true
}

func (s *state) ackToAgent(a *agent, fwID string, taskID *mesos.TaskID, uuid []byte) {
	ev := s.agentEvent(protocol.AgentEvent_ACKNOWLEDGE)
	ev.Acknowledge = &protocol.AgentEvent_Acknowledge{FrameworkId: frameworkID(fwID), TaskId: taskID, Uuid: uuid}
	s.sendAgent(a, ev)
}

// acknowledge handles ACKNOWLEDGE: forwarded to the agent; a task whose
// terminal update is acknowledged moves to completed.
func (s *state) acknowledge(fw *framework, ack *schedulerpb.Call_Acknowledge) {
	a := s.agents[ack.GetAgentId().GetValue()]
	if a == nil {
		s.log.Warn("acknowledgement for unknown agent", "framework", fw.id, "agent", ack.GetAgentId().GetValue())
		return
	}
	if t := fw.tasks[ack.GetTaskId().GetValue()]; t != nil && t.agentID == a.id {
		t.ackedUUID = ack.GetUuid()
		if mesos.IsTerminal(t.proto.GetStatusUpdateState()) && bytes.Equal(t.proto.GetStatusUpdateUuid(), ack.GetUuid()) {
			s.completeTask(fw, t)
		}
	}
	s.ackToAgent(a, fw.id, ack.GetTaskId(), ack.GetUuid())
}

// kill handles KILL. An unknown task gets a reconciliation-style update,
// as Mesos does, so the framework learns what the master knows of it.
func (s *state) kill(fw *framework, k *schedulerpb.Call_Kill, now time.Time) {
	t := fw.tasks[k.GetTaskId().GetValue()]
	if t == nil {
		s.reconcile(fw, []*schedulerpb.Call_Reconcile_Task{{TaskId: k.GetTaskId(), AgentId: k.GetAgentId()}}, now)
		return
	}
	a := s.agents[t.agentID]
	if a == nil {
		return
	}
	ev := s.agentEvent(protocol.AgentEvent_KILL_TASK)
	ev.KillTask = &protocol.AgentEvent_KillTask{FrameworkId: frameworkID(fw.id), TaskId: k.GetTaskId(), KillPolicy: k.GetKillPolicy()}
	s.sendAgent(a, ev)
}

const reconcileLatest = "Reconciliation: Latest task state"

// reconcile handles RECONCILE (reference §1.10): implicit when tasks is
// empty (every task the master knows), explicit otherwise.
func (s *state) reconcile(fw *framework, tasks []*schedulerpb.Call_Reconcile_Task, now time.Time) {
	if len(tasks) == 0 {
		for _, t := range sortedTasks(fw.tasks) {
			s.forwardStatus(fw, s.latestStatus(t.proto, now))
		}
		for _, id := range sortedKeys(fw.unreachableTasks) {
			s.forwardStatus(fw, s.latestStatus(fw.unreachableTasks[id], now))
		}
		return
	}
	for _, rt := range tasks {
		id := rt.GetTaskId().GetValue()
		if t := fw.tasks[id]; t != nil {
			s.forwardStatus(fw, s.latestStatus(t.proto, now))
			continue
		}
		if p := fw.unreachableTasks[id]; p != nil {
			s.forwardStatus(fw, s.latestStatus(p, now))
			continue
		}
		agent := rt.GetAgentId().GetValue()
		if s.transitioning(agent) {
			// The task may come back with an agent that has not
			// re-registered since the failover: no answer yet, as Mesos.
			continue
		}
		var st *mesos.TaskStatus
		switch {
		case agent != "" && s.agents[agent] != nil:
			st = newStatus(rt.GetTaskId(), rt.GetAgentId(), mesos.TaskState_TASK_GONE,
				mesos.TaskStatus_REASON_RECONCILIATION, "Reconciliation: Task is unknown to the agent", now)
		case agent != "" && s.unreachable[agent] != nil:
			st = newStatus(rt.GetTaskId(), rt.GetAgentId(), mesos.TaskState_TASK_UNREACHABLE,
				mesos.TaskStatus_REASON_RECONCILIATION, "Reconciliation: Task is unreachable", now)
			st.UnreachableTime = timeInfo(s.unreachable[agent].at)
		case agent != "" && s.gone[agent]:
			st = newStatus(rt.GetTaskId(), rt.GetAgentId(), mesos.TaskState_TASK_GONE_BY_OPERATOR,
				mesos.TaskStatus_REASON_RECONCILIATION, "Reconciliation: Task is gone", now)
		default:
			st = newStatus(rt.GetTaskId(), rt.GetAgentId(), mesos.TaskState_TASK_UNKNOWN,
				mesos.TaskStatus_REASON_RECONCILIATION, "Reconciliation: Task is unknown", now)
		}
		s.forwardStatus(fw, st)
	}
}

// transitioning reports whether an agent (or, with no agent ID, any
// agent) recovered from the registry has yet to re-register, or is being
// re-admitted: Mesos does not answer explicit reconciliation for tasks
// that may still be on it.
func (s *state) transitioning(agentID string) bool {
	if agentID == "" {
		return len(s.recovered) > 0 || len(s.readmitting) > 0
	}
	return s.recovered[agentID] || s.readmitting[agentID] > 0
}

// latestStatus is the reconciliation answer for a known task: its latest
// state, SOURCE_MASTER, REASON_RECONCILIATION and no uuid.
func (s *state) latestStatus(p *mesos.Task, now time.Time) *mesos.TaskStatus {
	state := p.GetState()
	if p.StatusUpdateState != nil {
		state = p.GetStatusUpdateState()
	}
	st := newStatus(p.GetTaskId(), p.GetAgentId(), state, mesos.TaskStatus_REASON_RECONCILIATION, reconcileLatest, now)
	st.ExecutorId = p.GetExecutorId()
	if n := len(p.GetStatuses()); n > 0 {
		last := p.GetStatuses()[n-1]
		st.Healthy = last.Healthy
		st.Labels = last.Labels
		st.ContainerStatus = last.ContainerStatus
		st.UnreachableTime = last.UnreachableTime
		st.CheckStatus = last.CheckStatus
	}
	return st
}

// shutdownExecutor handles SHUTDOWN.
func (s *state) shutdownExecutor(fw *framework, sh *schedulerpb.Call_Shutdown) {
	a := s.agents[sh.GetAgentId().GetValue()]
	if a == nil {
		s.log.Warn("SHUTDOWN for unknown agent", "framework", fw.id, "agent", sh.GetAgentId().GetValue())
		return
	}
	ev := s.agentEvent(protocol.AgentEvent_SHUTDOWN_EXECUTOR)
	ev.ShutdownExecutor = &protocol.AgentEvent_ShutdownExecutor{FrameworkId: frameworkID(fw.id), ExecutorId: sh.GetExecutorId()}
	s.sendAgent(a, ev)
}

// message handles MESSAGE: forwarded to the executor's agent.
func (s *state) message(fw *framework, m *schedulerpb.Call_Message) {
	a := s.agents[m.GetAgentId().GetValue()]
	if a == nil || !a.connected {
		s.count("master/invalid_framework_to_executor_messages")
		s.log.Warn("dropping framework message for unavailable agent", "framework", fw.id, "agent", m.GetAgentId().GetValue())
		return
	}
	ev := s.agentEvent(protocol.AgentEvent_FRAMEWORK_MESSAGE)
	ev.FrameworkMessage = &protocol.AgentEvent_FrameworkMessage{FrameworkId: frameworkID(fw.id), ExecutorId: m.GetExecutorId(), Data: m.GetData()}
	s.sendAgent(a, ev)
	s.count("master/valid_framework_to_executor_messages")
}

// executorExited handles EXECUTOR_EXITED: the executor's resources go
// back and the framework gets FAILURE. Executors the master never knew
// (the agent's synthesized command executors) are ignored, as in Mesos.
func (s *state) executorExited(a *agent, ee *protocol.AgentCall_ExecutorExited) {
	fwID := ee.GetFrameworkId().GetValue()
	ex := a.executors[fwID][ee.GetExecutorId().GetValue()]
	if ex == nil {
		return
	}
	s.removeExecutor(ex)
	if !ex.res.IsEmpty() {
		s.alloc.RecoverResources(fwID, a.id, ex.res, nil)
	}
	if fw := s.frameworks[fwID]; fw != nil {
		s.sendFramework(fw, &schedulerpb.Event{
			Type: schedulerpb.Event_FAILURE.Enum(),
			Failure: &schedulerpb.Event_Failure{
				AgentId:    agentID(a.id),
				ExecutorId: ee.GetExecutorId(),
				Status:     ee.Status,
			},
		})
	}
}

// frameworkMessage forwards executor data to the scheduler.
func (s *state) frameworkMessage(a *agent, fm *protocol.AgentCall_FrameworkMessage) {
	fw := s.frameworks[fm.GetFrameworkId().GetValue()]
	if fw == nil || fw.stream == nil {
		s.count("master/invalid_executor_to_framework_messages")
		return
	}
	s.sendFramework(fw, &schedulerpb.Event{
		Type:    schedulerpb.Event_MESSAGE.Enum(),
		Message: &schedulerpb.Event_Message{AgentId: agentID(a.id), ExecutorId: fm.GetExecutorId(), Data: fm.GetData()},
	})
	s.count("master/valid_executor_to_framework_messages")
}
