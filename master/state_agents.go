package master

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/master/allocator"
	"mezzo/resources"
)

func (s *state) newAgentStream() *AgentStream {
	st := &AgentStream{q: newQueue[*protocol.AgentEvent](maxStreamBacklog)}
	post := s.post
	st.closed = func(st *AgentStream) {
		post(func(s *state, now time.Time) { s.agentStreamClosed(st, now) })
	}
	return st
}

// endStream queues a final event and ends an agent stream.
func (s *state) endStream(st *AgentStream, ev *protocol.AgentEvent) {
	ev.Epoch = proto.Uint64(s.epoch)
	st.send(ev)
	st.q.close()
}

func (s *state) shutdownEvent(msg string) *protocol.AgentEvent {
	ev := s.agentEvent(protocol.AgentEvent_SHUTDOWN)
	ev.Shutdown = &protocol.AgentEvent_Shutdown{Message: proto.String(msg)}
	return ev
}

func (s *state) agentErrorEvent(msg string) *protocol.AgentEvent {
	ev := s.agentEvent(protocol.AgentEvent_ERROR)
	ev.Error = &protocol.AgentEvent_Error{Message: proto.String(msg)}
	return ev
}

// agentSubscribe handles an agent's SUBSCRIBE as principal (already
// checked against the ID's binding, api_agent.go): registration of a new
// agent (Registrar.Admit), re-registration of a known one (no registrar
// write), re-admission of an agent this master does not know (Readmit,
// after a master failover) or that was unreachable (MarkReachable). The
// registrar writes bind the agent ID to principal. A removed agent gets
// SHUTDOWN: it may never come back under its old ID.
func (s *state) agentSubscribe(sub *protocol.AgentCall_Subscribe, principal string, now time.Time) (*AgentStream, error) {
	s.countAgentSubscribe(sub.GetAgentInfo())
	if sub == nil || sub.GetAgentInfo() == nil {
		return nil, badRequest("Expecting 'subscribe.agent_info' to be present")
	}
	if sub.GetEndpoint() == "" {
		return nil, badRequest("Expecting 'subscribe.endpoint' to be present")
	}
	if sub.Version != nil && sub.GetVersion() != protocol.Version_VERSION_1 {
		return nil, badRequest("Unsupported agent protocol version %v (this master speaks VERSION_1)", sub.GetVersion())
	}
	if err := resources.Validate(sub.GetAgentInfo().GetResources()); err != nil {
		return nil, badRequest("Invalid 'agent_info.resources': %v", err)
	}
	if _, err := resources.FromProto(sub.GetAgentInfo().GetResources()); err != nil {
		return nil, badRequest("Invalid 'agent_info.resources': %v", err)
	}
	if len(sub.GetCheckpointedResources()) > 0 {
		if _, _, err := agentTotal(sub); err != nil {
			return nil, badRequest("Agent subscription refused: %v", err)
		}
	}
	sub = proto.Clone(sub).(*protocol.AgentCall_Subscribe)
	info := sub.GetAgentInfo()
	st := s.newAgentStream()
	id := info.GetId().GetValue()
	if s.refuseDownAgent(st, info, sub.GetEndpoint()) {
		return st, nil
	}

	switch {
	case id == "":
		id = s.newAgentID()
		info.Id = agentID(id)
		st.agentID = id
		s.admitting[st] = true
		s.reg.Admit(info, principal, func(err error) {
			s.post(func(s *state, now time.Time) { s.admitted(st, sub, err, false, now) })
		})
	case s.gone[id]:
		s.endStream(st, s.shutdownEvent(fmt.Sprintf("Agent %s was removed from the cluster and may not re-register under this ID; restart it with a clean work_dir", id)))
	case s.agents[id] != nil:
		a := s.agents[id]
		if a.leaving {
			s.endStream(st, s.agentErrorEvent(fmt.Sprintf("Agent %s is being removed; retry", id)))
			return st, nil
		}
		st.agentID = id
		s.reregister(a, st, sub, now)
	default:
		st.agentID = id
		// An agent recovered from the registry is no longer expected:
		// the re-registration timeout must not mark it unreachable.
		if s.recovered[id] {
			delete(s.recovered, id)
			s.dirty = true
		}
		s.admitting[st] = true
		s.readmitting[id]++
		done := func(err error) {
			s.post(func(s *state, now time.Time) {
				if s.readmitting[id]--; s.readmitting[id] <= 0 {
					delete(s.readmitting, id)
				}
				s.admitted(st, sub, err, true, now)
			})
		}
		if s.unreachable[id] != nil {
			s.reg.MarkReachable(info, principal, done)
		} else {
			s.reg.Readmit(info, principal, done)
		}
	}
	return st, nil
}

// admitted completes a registration or re-admission once the registrar
// write is durable.
func (s *state) admitted(st *AgentStream, sub *protocol.AgentCall_Subscribe, err error, readmit bool, now time.Time) {
	delete(s.admitting, st)
	info := sub.GetAgentInfo()
	id := info.GetId().GetValue()
	if errors.Is(err, ErrAgentGone) {
		s.markGone(id)
		delete(s.unreachable, id)
		s.endStream(st, s.shutdownEvent(fmt.Sprintf("Agent %s was removed from the cluster and may not re-register under this ID", id)))
		s.dirty = true
		return
	}
	if err != nil {
		s.log.Error("registrar failed to admit agent", "agent", id, "err", err)
		s.endStream(st, s.agentErrorEvent("Registrar failed to admit the agent: "+err.Error()))
		return
	}
	if old := s.agents[id]; old != nil {
		// A concurrent re-registration won the race; treat this one as a
		// reconnection of that agent.
		s.reregister(old, st, sub, now)
		return
	}
	_, total, _ := agentTotal(sub) // checked by agentSubscribe
	a := &agent{
		id:             id,
		info:           info,
		endpoint:       sub.GetEndpoint(),
		version:        sub.GetAgentVersion(),
		caps:           sub.GetCapabilities(),
		registeredTime: now,
		tasks:          map[string]map[string]*task{},
		executors:      map[string]map[string]*executor{},
		offers:         map[string]*offer{},
	}
	a.setTotal(total)
	s.agents[id] = a
	s.agentIDCache = nil
	s.longSetAgent(a)
	if readmit {
		a.reregisteredTime = now
		if u := s.unreachable[id]; u != nil {
			delete(s.unreachable, id)
		}
	}
	s.connectAgent(a, st, now)
	s.adoptReport(a, sub, now)
	// Tasks the master still lists as unreachable on this agent and the
	// agent did not report are gone for good.
	for _, fw := range s.frameworks {
		if len(fw.unreachableTasks) == 0 {
			continue // the common case, once per framework for every agent
		}
		for _, tid := range sortedKeys(fw.unreachableTasks) {
			if p := fw.unreachableTasks[tid]; p.GetAgentId().GetValue() == id {
				delete(fw.unreachableTasks, tid)
				fw.completedTasks = append(fw.completedTasks, p)
				s.trimCompleted(fw)
			}
		}
	}
	s.alloc.AddAgent(id, info, total, s.agentUsed(a))
	s.syncUnavailability(a)
	if !a.connected {
		s.alloc.DeactivateAgent(id)
	}
	s.drainAgentJoined(a)
	if readmit {
		s.count("master/slave_reregistrations")
	} else {
		s.count("master/slave_registrations")
	}
	s.log.Info("agent registered", "agent", id, "hostname", info.GetHostname(), "readmitted", readmit)
	s.emit(func() *masterpb.Event {
		return &masterpb.Event{Type: masterpb.Event_AGENT_ADDED.Enum(),
			AgentAdded: &masterpb.Event_AgentAdded{Agent: s.agentProto(a)}}
	})
}

// connectAgent attaches a subscription stream and sends SUBSCRIBED.
func (s *state) connectAgent(a *agent, st *AgentStream, now time.Time) {
	if a.stream != nil && a.stream != st {
		a.stream.q.close()
	}
	st.agentID = a.id
	a.stream = st
	a.connected = !st.q.isClosed()
	a.misses = 0
	a.pongPending = false
	s.setNextPing(a, s.firstPing(a, now))
	s.dirty = true
	ev := s.agentEvent(protocol.AgentEvent_SUBSCRIBED)
	ev.Subscribed = &protocol.AgentEvent_Subscribed{
		AgentId:             agentID(a.id),
		MasterInfo:          s.info,
		PingIntervalSeconds: proto.Float64(s.cfg.AgentPingTimeout.Seconds()),
		MaxMissed:           proto.Uint32(uint32(s.cfg.MaxAgentPingTimeouts)),
	}
	s.sendAgent(a, ev)
}

// reregister handles a known agent subscribing again (its connection
// dropped, or the agent process restarted and recovered).
func (s *state) reregister(a *agent, st *AgentStream, sub *protocol.AgentCall_Subscribe, now time.Time) {
	info := sub.GetAgentInfo()
	a.endpoint = sub.GetEndpoint()
	a.version = sub.GetAgentVersion()
	a.caps = sub.GetCapabilities()
	a.reregisteredTime = now
	if !proto.Equal(a.info, info) {
		a.info = info
	}
	// The total: flag resources with reservations and volumes applied.
	total, resend := s.reregisteredTotal(a, sub)
	if !total.Equal(a.total) {
		a.setTotal(total)
		s.rescindAgentOffers(a)
		s.alloc.UpdateAgent(a.id, info, total)
		s.longSetAgent(a)
	}
	s.connectAgent(a, st, now)
	if resend {
		s.checkpointResources(a)
	}
	s.removeUnreportedExecutors(a, sub)
	if s.adoptReport(a, sub, now) {
		// The agent runs something the master did not count (it came
		// back with tasks the master had dropped): re-add the agent so
		// the allocator counts exactly what the master now lists.
		s.rescindAgentOffers(a)
		s.alloc.RemoveAgent(a.id)
		s.alloc.AddAgent(a.id, a.info, a.total, s.agentUsed(a))
		if !a.connected {
			s.alloc.DeactivateAgent(a.id)
		}
	}
	// Tell the agent what the master believes it runs; it answers with
	// TASK_LOST/DROPPED for tasks it does not know (e.g. a RUN_TASK lost
	// while it was disconnected, or the agent restarted and its
	// framework did not checkpoint).
	var known []*mesos.Task
	var infos []*mesos.FrameworkInfo
	for _, fwID := range sortedKeys(a.tasks) {
		n := len(known)
		for _, t := range sortedTasks(a.tasks[fwID]) {
			if !mesos.IsTerminal(t.proto.GetState()) {
				known = append(known, t.proto)
			}
		}
		if fw := s.frameworks[fwID]; fw != nil && len(known) > n {
			infos = append(infos, fw.info)
		}
	}
	ev := s.agentEvent(protocol.AgentEvent_RECONCILE)
	ev.Reconcile = &protocol.AgentEvent_Reconcile{Tasks: known, Frameworks: infos}
	s.sendAgent(a, ev)
	if !a.deactivated {
		s.alloc.ActivateAgent(a.id)
	}
	s.drainAgentJoined(a)
	s.count("master/slave_reregistrations")
	s.log.Info("agent re-registered", "agent", a.id)
}

// agentUsed is what the allocator must count as used on an agent: its
// executors and the tasks whose resources have not gone back.
func (s *state) agentUsed(a *agent) map[string]resources.Resources {
	used := map[string]resources.Resources{}
	for fwID, ts := range a.tasks {
		for _, t := range ts {
			if !t.recovered {
				used[fwID] = used[fwID].Add(t.res)
			}
		}
	}
	for fwID, es := range a.executors {
		for _, e := range es {
			used[fwID] = used[fwID].Add(e.res)
		}
	}
	return used
}

// removeUnreportedExecutors forgets the executors the master lists on a
// re-registering agent that the agent no longer runs (it restarted and
// did not recover them, or they ended while it was disconnected), and
// gives their resources back, as Mesos's master does on re-registration.
// Their tasks are settled by the RECONCILE that follows.
func (s *state) removeUnreportedExecutors(a *agent, sub *protocol.AgentCall_Subscribe) {
	if len(a.executors) == 0 {
		return
	}
	reported := map[[2]string]bool{}
	for _, ei := range sub.GetExecutors() {
		reported[[2]string{ei.GetFrameworkId().GetValue(), ei.GetExecutorId().GetValue()}] = true
	}
	for _, fwID := range sortedKeys(a.executors) {
		for _, exID := range sortedKeys(a.executors[fwID]) {
			if reported[[2]string{fwID, exID}] {
				continue
			}
			ex := a.executors[fwID][exID]
			s.log.Info("agent no longer runs executor; removing it", "agent", a.id, "framework", fwID, "executor", exID)
			s.removeExecutor(ex)
			if !ex.res.IsEmpty() {
				s.alloc.RecoverResources(fwID, a.id, ex.res, nil)
			}
		}
	}
}

// adoptReport takes in the frameworks, executors and tasks an agent
// reports that the master does not know (after a master failover, or
// tasks that came back from a partition). Frameworks not yet subscribed to
// this master are added as "recovered"; removed frameworks are shut down.
// A task comes in its latest state with the state and uuid of the update
// the agent will forward next, so terminal tasks whose updates are not yet
// acknowledged are rebuilt too (their resources are free) and those
// updates find them. It reports whether it added an executor or a live
// task (resources the allocator does not know to be used).
func (s *state) adoptReport(a *agent, sub *protocol.AgentCall_Subscribe, now time.Time) bool {
	added := false
	shutdown := map[string]bool{}
	for _, info := range sub.GetFrameworks() {
		id := info.GetId().GetValue()
		if id == "" {
			continue
		}
		if s.completedIDs[id] {
			shutdown[id] = true
			continue
		}
		if s.frameworks[id] == nil {
			fw := newFramework(id, proto.Clone(info).(*mesos.FrameworkInfo), now)
			fw.recovered = true
			s.frameworks[id] = fw
			s.alloc.AddFramework(id, fw.info, nil, false, allocator.FrameworkOptions{})
			s.emit(func() *masterpb.Event {
				return &masterpb.Event{Type: masterpb.Event_FRAMEWORK_ADDED.Enum(),
					FrameworkAdded: &masterpb.Event_FrameworkAdded{Framework: s.frameworkProto(fw)}}
			})
		}
	}
	for _, ei := range sub.GetExecutors() {
		fw := s.frameworks[ei.GetFrameworkId().GetValue()]
		if fw == nil || a.executors[fw.id][ei.GetExecutorId().GetValue()] != nil {
			continue
		}
		res, err := resources.FromProto(withAllocation(ei.GetResources(), defaultRole(fw)))
		if err != nil {
			s.log.Warn("agent reported executor with invalid resources", "agent", a.id, "err", err)
			continue
		}
		info := proto.Clone(ei).(*mesos.ExecutorInfo)
		info.Resources = res.Proto()
		s.addExecutor(&executor{info: info, res: res, fwID: fw.id, agentID: a.id})
		added = added || !res.IsEmpty()
	}
	for _, p := range sub.GetTasks() {
		fwID := p.GetFrameworkId().GetValue()
		if s.completedIDs[fwID] {
			shutdown[fwID] = true
			continue
		}
		fw := s.frameworks[fwID]
		if fw == nil {
			s.log.Warn("agent reported a task of an unknown framework", "agent", a.id, "framework", fwID)
			continue
		}
		id := p.GetTaskId().GetValue()
		if t := fw.tasks[id]; t != nil {
			continue // the master's record is authoritative
		}
		res, err := resources.FromProto(withAllocation(p.GetResources(), defaultRole(fw)))
		if err != nil {
			s.log.Warn("agent reported task with invalid resources", "agent", a.id, "task", id, "err", err)
			continue
		}
		tp := proto.Clone(p).(*mesos.Task)
		tp.AgentId = agentID(a.id)
		tp.Resources = res.Proto()
		t := &task{proto: tp, res: res, fwID: fwID, agentID: a.id, executorID: p.GetExecutorId().GetValue()}
		t.recovered = mesos.IsTerminal(tp.GetState())
		added = added || (!t.recovered && !res.IsEmpty())
		delete(fw.unreachableTasks, id)
		s.addTask(t)
		s.adoptLong(t, now)
		s.emit(func() *masterpb.Event {
			return &masterpb.Event{Type: masterpb.Event_TASK_ADDED.Enum(), TaskAdded: &masterpb.Event_TaskAdded{Task: tp}}
		})
	}
	for _, id := range sortedKeys(shutdown) {
		ev := s.agentEvent(protocol.AgentEvent_SHUTDOWN_FRAMEWORK)
		ev.ShutdownFramework = &protocol.AgentEvent_ShutdownFramework{FrameworkId: frameworkID(id)}
		s.sendAgent(a, ev)
	}
	return added
}

// defaultRole is the role resources without allocation_info are
// attributed to: the framework's only role, or "*".
func defaultRole(fw *framework) string {
	if roles := fw.roles(); len(roles) > 0 {
		return roles[0]
	}
	return "*"
}

// agentStreamClosed deactivates an agent whose connection ended: no
// offers until it re-subscribes; missed pings keep counting.
func (s *state) agentStreamClosed(st *AgentStream, now time.Time) {
	a := s.agents[st.agentID]
	if a == nil || a.stream != st {
		return
	}
	a.stream = nil
	a.connected = false
	s.rescindAgentOffers(a)
	s.alloc.DeactivateAgent(a.id)
	s.dirty = true
	s.log.Info("agent disconnected", "agent", a.id)
}

// markUnreachable starts moving an agent to the unreachable list; the
// master acts once the registrar write is durable.
func (s *state) markUnreachable(a *agent, reason string, now time.Time) {
	if a.leaving {
		return
	}
	a.leaving = true
	s.rescindAgentOffers(a)
	s.alloc.DeactivateAgent(a.id)
	s.log.Warn("marking agent unreachable", "agent", a.id, "reason", reason)
	at := now
	s.reg.MarkUnreachable(a.id, at, func(err error) {
		s.post(func(s *state, now time.Time) { s.unreachableDone(a, reason, at, err, now) })
	})
}

func (s *state) unreachableDone(a *agent, reason string, at time.Time, err error, now time.Time) {
	if s.agents[a.id] != a {
		return
	}
	if err != nil {
		s.log.Error("registrar failed to mark agent unreachable; will retry", "agent", a.id, "err", err)
		a.leaving = false
		s.setNextPing(a, now.Add(s.cfg.AgentPingTimeout))
		return
	}
	msg := fmt.Sprintf("Agent %s (%s) is unreachable: %s", a.id, a.info.GetHostname(), reason)
	s.dropAgent(a, func(fw *framework) mesos.TaskState {
		if fw.partitionAware() {
			return mesos.TaskState_TASK_UNREACHABLE
		}
		return mesos.TaskState_TASK_LOST
	}, msg, at, now)
	s.unreachable[a.id] = &unreachableAgent{info: a.info, at: at}
	s.count("master/slave_unreachable_completed")
	s.count("master/slave_removals/reason_unhealthy")
}

// dropAgent removes a registered agent: its tasks get newState(fw) with
// REASON_AGENT_REMOVED (Mesos's reason for both unreachable and removed
// agents; REASON_AGENT_REMOVED_BY_OPERATOR with TASK_GONE_BY_OPERATOR, as
// Mesos), unreachable tasks of partition-aware frameworks are kept aside,
// the rest completed; its executors, offers and allocator entry go away.
func (s *state) dropAgent(a *agent, newState func(*framework) mesos.TaskState, msg string, at time.Time, now time.Time) {
	s.forgetAgentMaintenance(a)
	for _, o := range sortedOffers(a.offers) {
		s.rescindOffer(o, true)
	}
	for _, fwID := range sortedKeys(a.tasks) {
		fw := s.frameworks[fwID]
		for _, t := range sortedTasks(a.tasks[fwID]) {
			if fw == nil {
				continue
			}
			ns := newState(fw)
			if !mesos.IsTerminal(t.proto.GetState()) {
				reason := mesos.TaskStatus_REASON_AGENT_REMOVED
				if ns == mesos.TaskState_TASK_GONE_BY_OPERATOR {
					reason = mesos.TaskStatus_REASON_AGENT_REMOVED_BY_OPERATOR // as Mesos's __removeSlave
				}
				st := s.masterStatus(t, ns, reason, msg, now)
				if ns == mesos.TaskState_TASK_UNREACHABLE {
					st.UnreachableTime = timeInfo(at)
				}
				s.applyStatus(t, st, ns, false)
				s.forwardStatus(fw, st)
			}
			if t.proto.GetState() == mesos.TaskState_TASK_UNREACHABLE {
				s.recoverTask(t)
				delete(fw.tasks, t.id())
				fw.unreachableTasks[t.id()] = t.proto
			} else {
				s.completeTask(fw, t)
			}
		}
	}
	for _, fwID := range sortedKeys(a.executors) {
		for _, ex := range a.executors[fwID] {
			s.removeExecutor(ex)
		}
	}
	if a.stream != nil {
		a.stream.q.close()
		a.stream = nil
	}
	delete(s.agents, a.id)
	s.agentIDCache = nil
	s.alloc.RemoveAgent(a.id)
	s.longRemoveAgent(a.id)
	s.count("master/slave_removals")
	s.emit(func() *masterpb.Event {
		return &masterpb.Event{Type: masterpb.Event_AGENT_REMOVED.Enum(),
			AgentRemoved: &masterpb.Event_AgentRemoved{AgentId: agentID(a.id)}}
	})
}

// removeAgent removes an agent for good (it unregistered): the registrar
// marks it gone, its tasks become TASK_GONE (TASK_LOST for frameworks that
// are not partition-aware).
func (s *state) removeAgent(a *agent, reason string) {
	if a.leaving {
		return
	}
	a.leaving = true
	s.rescindAgentOffers(a)
	s.alloc.DeactivateAgent(a.id)
	s.reg.Remove(a.id, func(err error) {
		s.post(func(s *state, now time.Time) {
			if s.agents[a.id] != a {
				return
			}
			if err != nil {
				s.log.Error("registrar failed to remove agent", "agent", a.id, "err", err)
				a.leaving = false
				return
			}
			s.dropAgent(a, func(fw *framework) mesos.TaskState {
				if fw.partitionAware() {
					return mesos.TaskState_TASK_GONE
				}
				return mesos.TaskState_TASK_LOST
			}, fmt.Sprintf("Agent %s (%s) removed: %s", a.id, a.info.GetHostname(), reason), now, now)
			s.markGone(a.id)
			s.count("master/slave_removals/reason_unregistered")
		})
	})
}

// markGone notes that the registry removed agent id for good: its ID is
// refused to everyone from now on, so its drain entry and its principal
// binding go, as they went from the registry with it.
func (s *state) markGone(id string) {
	s.gone[id] = true
	s.forgetDrain(id)
	delete(s.agentPrincipals, id)
}

// agentCall applies a non-SUBSCRIBE agent-protocol call.
func (s *state) agentCall(call *protocol.AgentCall, now time.Time) error {
	id := call.GetAgentId().GetValue()
	a := s.agents[id]
	s.countAgentCall(call)
	if a == nil {
		s.count("master/dropped_messages")
		if s.gone[id] {
			return forbidden("Agent %s was removed from the cluster", id)
		}
		return forbidden("Agent %s is not registered", id)
	}
	switch call.GetType() {
	case protocol.AgentCall_STATUS_UPDATE:
		su := call.GetStatusUpdate()
		if su == nil || su.GetStatus() == nil {
			return badRequest("Expecting 'status_update.status' to be present")
		}
		if su.GetStatus().GetTaskId().GetValue() == "" {
			return badRequest("Expecting 'status_update.status.task_id' to be present")
		}
		s.statusUpdate(a, su, now)
	case protocol.AgentCall_PONG:
		a.pongPending = false
		a.misses = 0
	case protocol.AgentCall_EXECUTOR_EXITED:
		if call.GetExecutorExited() == nil {
			return badRequest("Expecting 'executor_exited' to be present")
		}
		s.executorExited(a, call.GetExecutorExited())
	case protocol.AgentCall_FRAMEWORK_MESSAGE:
		if call.GetFrameworkMessage() == nil {
			return badRequest("Expecting 'framework_message' to be present")
		}
		s.frameworkMessage(a, call.GetFrameworkMessage())
	case protocol.AgentCall_UNREGISTER:
		s.removeAgent(a, "agent unregistered")
	case protocol.AgentCall_UPDATE_RESOURCES:
		if call.GetUpdateResources() == nil {
			return badRequest("Expecting 'update_resources' to be present")
		}
		return s.updateOversubscribed(a, call.GetUpdateResources().GetOversubscribed())
	case protocol.AgentCall_SUBSCRIBE:
		return badRequest("SUBSCRIBE opens the event stream; it cannot be sent as a separate call")
	default:
		return badRequest("Unknown agent call type %v", call.GetType())
	}
	return nil
}

// agentIDs returns registered agent IDs, sorted. The slice is shared
// (cached until an agent is added or removed: every publish walks it, and
// sorting 10,000 IDs each time showed in failover profiles); callers must
// not modify it.
func (s *state) agentIDs() []string {
	if s.agentIDCache == nil {
		ids := make([]string, 0, len(s.agents))
		for id := range s.agents {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		s.agentIDCache = ids
	}
	return s.agentIDCache
}
