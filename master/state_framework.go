package master

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/internal/authorizer"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// maxFailoverTimeout bounds FrameworkInfo.failover_timeout so that huge
// values (mesos-framework uses a week, some use 1e9 s) stay representable.
const maxFailoverTimeout = 100 * 365 * 24 * time.Hour

func (s *state) newFrameworkStream(fwID string) *FrameworkStream {
	st := &FrameworkStream{id: uuid.NewString(), frameworkID: fwID, q: newQueue[*schedulerpb.Event](maxStreamBacklog)}
	post := s.post
	st.closed = func(st *FrameworkStream) {
		post(func(s *state, now time.Time) { s.frameworkStreamClosed(st, now) })
	}
	return st
}

func newFramework(id string, info *mesos.FrameworkInfo, now time.Time) *framework {
	return &framework{
		id:               id,
		info:             info,
		caps:             capabilitySet(info),
		registeredTime:   now,
		suppressed:       map[string]bool{},
		tasks:            map[string]*task{},
		unreachableTasks: map[string]*mesos.Task{},
		offers:           map[string]*offer{},
		executors:        map[string]map[string]*executor{},
	}
}

// subscribe handles SUBSCRIBE: a new framework, a re-subscription (failover
// of the scheduler, or the first subscription after a master failover), or
// a framework that was removed (ERROR, stream ends).
func (s *state) subscribe(p Principal, sub *schedulerpb.Call_Subscribe, now time.Time) (*FrameworkStream, error) {
	s.countSubscribe(sub.GetFrameworkInfo())
	if err := validateFrameworkInfo(sub.GetFrameworkInfo()); err != nil {
		return nil, badRequest("Failed to validate scheduler::Call: %v", err)
	}
	opts, err := s.frameworkOptions(sub.GetFrameworkInfo(), sub.GetSuppressedRoles(), sub.GetOfferConstraints())
	if err != nil {
		return nil, badRequest("%v", err)
	}
	info := proto.Clone(sub.GetFrameworkInfo()).(*mesos.FrameworkInfo)
	id := info.GetId().GetValue()
	if p.Name != "" && p.Name != info.GetPrincipal() {
		return nil, badRequest("Authenticated principal '%s' does not match principal '%s' set in `FrameworkInfo`", p.Name, info.GetPrincipal())
	}

	if id != "" && s.completedIDs[id] {
		return s.refusedSubscription(id, "Framework has been removed"), nil
	}

	fw := s.frameworks[id]
	if msg := s.subscriptionRefusal(info, fw); msg != "" {
		return s.refusedSubscription(id, msg), nil
	}
	added := false
	switch {
	case id == "":
		added = true
		id = s.newFrameworkID()
		info.Id = frameworkID(id)
		fw = newFramework(id, info, now)
		s.frameworks[id] = fw
		s.alloc.AddFramework(id, info, nil, true, opts)
		s.log.Info("framework registered", "framework", id, "name", info.GetName())
	case fw == nil:
		added = true
		// Known to an earlier master, not yet to this one (master
		// failover before any agent reported the framework).
		fw = newFramework(id, info, now)
		fw.reregisteredTime = now
		s.frameworks[id] = fw
		s.alloc.AddFramework(id, info, s.frameworkUsed(fw), true, opts)
		s.updateFrameworkOnAgents(fw)
		s.log.Info("framework re-registered", "framework", id)
	default:
		if fw.stream != nil {
			s.sendFramework(fw, errorEvent("Framework failed over"))
			fw.stream.q.close()
			fw.stream = nil
		}
		s.recoverFrameworkOffers(fw, false)
		// user and checkpoint changes are ignored on re-subscription.
		info.User = proto.String(fw.info.GetUser())
		info.Checkpoint = proto.Bool(fw.info.GetCheckpoint())
		fw.info = info
		fw.caps = capabilitySet(info)
		fw.recovered = false
		s.setFailoverAt(fw, time.Time{})
		fw.reregisteredTime = now
		s.alloc.UpdateFramework(id, info, opts)
		s.alloc.ActivateFramework(id)
		s.updateFrameworkOnAgents(fw)
		s.log.Info("framework re-subscribed", "framework", id)
	}

	fw.suppressed = map[string]bool{}
	for _, r := range sub.GetSuppressedRoles() {
		fw.suppressed[r] = true
	}
	fw.offerConstraints = keptConstraints(sub.GetOfferConstraints())
	st := s.newFrameworkStream(id)
	fw.stream = st
	fw.connected = true
	fw.active = true
	s.dirty = true

	s.sendFramework(fw, &schedulerpb.Event{
		Type: schedulerpb.Event_SUBSCRIBED.Enum(),
		Subscribed: &schedulerpb.Event_Subscribed{
			FrameworkId:              frameworkID(id),
			HeartbeatIntervalSeconds: proto.Float64(s.cfg.HeartbeatInterval.Seconds()),
			MasterInfo:               proto.Clone(s.info).(*mesos.MasterInfo),
		},
	})
	// Mesos's heartbeater sends its first HEARTBEAT right away.
	s.sendFramework(fw, &schedulerpb.Event{Type: schedulerpb.Event_HEARTBEAT.Enum()})

	if added {
		s.emit(func() *masterpb.Event {
			return &masterpb.Event{Type: masterpb.Event_FRAMEWORK_ADDED.Enum(),
				FrameworkAdded: &masterpb.Event_FrameworkAdded{Framework: s.frameworkProto(fw)}}
		})
	} else {
		s.emitFrameworkUpdated(fw)
	}
	return st, nil
}

func errorEvent(msg string) *schedulerpb.Event {
	return &schedulerpb.Event{
		Type:  schedulerpb.Event_ERROR.Enum(),
		Error: &schedulerpb.Event_Error{Message: proto.String(msg)},
	}
}

// frameworkStreamClosed handles the end of a scheduler's connection: the
// framework is disconnected unless a newer subscription replaced st.
func (s *state) frameworkStreamClosed(st *FrameworkStream, now time.Time) {
	fw := s.frameworks[st.frameworkID]
	if fw == nil || fw.stream != st {
		return
	}
	s.disconnectFramework(fw, now)
}

// disconnectFramework marks the framework inactive and starts its failover
// timeout; a zero failover_timeout removes it at once.
func (s *state) disconnectFramework(fw *framework, now time.Time) {
	if fw.stream != nil {
		fw.stream.q.close()
		fw.stream = nil
	}
	fw.connected = false
	fw.active = false
	s.recoverFrameworkOffers(fw, false)
	s.alloc.DeactivateFramework(fw.id)
	s.dirty = true
	timeout := fw.info.GetFailoverTimeout()
	if timeout <= 0 || math.IsNaN(timeout) {
		s.log.Info("framework disconnected with no failover timeout; removing", "framework", fw.id)
		s.removeFramework(fw, now)
		return
	}
	d := maxFailoverTimeout
	if timeout < maxFailoverTimeout.Seconds() {
		d = time.Duration(timeout * float64(time.Second))
	}
	s.setFailoverAt(fw, now.Add(d))
	s.log.Info("framework disconnected", "framework", fw.id, "failover_timeout", d)
	s.emitFrameworkUpdated(fw)
}

// removeFramework ends a framework for good (TEARDOWN, failover timeout):
// its offers go back, its tasks are killed, its agents told to shut its
// executors down, and a bounded record of it is kept as completed.
func (s *state) removeFramework(fw *framework, now time.Time) {
	s.log.Info("removing framework", "framework", fw.id)
	if fw.stream != nil {
		fw.stream.q.close()
		fw.stream = nil
	}
	for _, o := range sortedOffers(fw.offers) {
		s.dropOffer(o)
	}
	s.dropFrameworkInverseOffers(fw)
	agentsToTell := map[string]bool{}
	for _, t := range sortedTasks(fw.tasks) {
		agentsToTell[t.agentID] = true
		if !mesos.IsTerminal(t.proto.GetState()) {
			st := s.masterStatus(t, mesos.TaskState_TASK_KILLED, mesos.TaskStatus_REASON_FRAMEWORK_REMOVED,
				"Framework "+fw.id+" removed", now)
			s.applyStatus(t, st, st.GetState(), false)
		}
		s.completeTask(fw, t)
	}
	for agentID, execs := range fw.executors {
		agentsToTell[agentID] = true
		if a := s.agents[agentID]; a != nil {
			for execID := range execs {
				delete(a.executors[fw.id], execID)
			}
			delete(a.executors, fw.id)
		}
	}
	fw.executors = map[string]map[string]*executor{}
	for _, t := range fw.unreachableTasks {
		fw.completedTasks = append(fw.completedTasks, t)
	}
	fw.unreachableTasks = map[string]*mesos.Task{}
	s.trimCompleted(fw)
	ids := make([]string, 0, len(agentsToTell))
	for id := range agentsToTell {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if a := s.agents[id]; a != nil {
			ev := s.agentEvent(protocol.AgentEvent_SHUTDOWN_FRAMEWORK)
			ev.ShutdownFramework = &protocol.AgentEvent_ShutdownFramework{FrameworkId: frameworkID(fw.id)}
			s.sendAgent(a, ev)
		}
	}
	s.alloc.RemoveFramework(fw.id)
	fw.connected = false
	fw.active = false
	s.setFailoverAt(fw, time.Time{})
	delete(s.frameworks, fw.id)
	delete(s.undelivered, fw.id)
	s.completedIDs[fw.id] = true
	view := s.frameworkView(fw)
	view.UnregisteredTime = now
	s.completed = append(s.completed, view)
	if over := len(s.completed) - s.cfg.MaxCompletedFrameworks; over > 0 {
		s.completed = append([]*FrameworkView(nil), s.completed[over:]...)
	}
	s.dirty = true
	s.emit(func() *masterpb.Event {
		return &masterpb.Event{Type: masterpb.Event_FRAMEWORK_REMOVED.Enum(),
			FrameworkRemoved: &masterpb.Event_FrameworkRemoved{FrameworkInfo: fw.info}}
	})
}

// updateFramework handles UPDATE_FRAMEWORK.
func (s *state) updateFramework(fw *framework, u *schedulerpb.Call_UpdateFramework) error {
	info := u.GetFrameworkInfo()
	if err := validateFrameworkInfo(info); err != nil {
		return badRequest("Failed to validate scheduler::Call: %v", err)
	}
	if info.GetId().GetValue() != fw.id {
		return badRequest("Updating framework %s: 'FrameworkInfo.id' (%q) must equal the call's 'framework_id'",
			fw.id, info.GetId().GetValue())
	}
	switch {
	case info.GetPrincipal() != fw.info.GetPrincipal():
		return badRequest("Updating 'FrameworkInfo.principal' is unsupported")
	case info.GetUser() != fw.info.GetUser():
		return badRequest("Updating 'FrameworkInfo.user' is unsupported")
	case info.GetCheckpoint() != fw.info.GetCheckpoint():
		return badRequest("Updating 'FrameworkInfo.checkpoint' is unsupported")
	}
	opts, err := s.frameworkOptions(info, u.GetSuppressedRoles(), u.GetOfferConstraints())
	if err != nil {
		return badRequest("'UpdateFramework' call is not valid: %v", err)
	}
	if err := s.authorize(Principal{Name: info.GetPrincipal()}, authorizer.RegisterFramework, roleObjects(frameworkRoles(info))...); err != nil {
		return err
	}
	fw.offerConstraints = keptConstraints(u.GetOfferConstraints())
	fw.info = proto.Clone(info).(*mesos.FrameworkInfo)
	fw.caps = capabilitySet(fw.info)
	fw.suppressed = map[string]bool{}
	for _, r := range u.GetSuppressedRoles() {
		fw.suppressed[r] = true
	}
	// Offers made under the old roles or capabilities may no longer fit.
	s.recoverFrameworkOffers(fw, true)
	s.alloc.UpdateFramework(fw.id, fw.info, opts)
	s.updateFrameworkOnAgents(fw)
	s.dirty = true
	s.emitFrameworkUpdated(fw)
	return nil
}

// refusedSubscription is the stream answering a SUBSCRIBE the master
// refuses once the stream is open, as Mesos does: one ERROR event naming
// why, then the end of the stream. Nothing else changes.
func (s *state) refusedSubscription(id, msg string) *FrameworkStream {
	st := s.newFrameworkStream(id)
	st.send(errorEvent(msg))
	st.q.close()
	return st
}

// subscriptionRefusal says why a (re-)subscription with info may not
// proceed ("" if it may): a root framework under --root_submissions=false,
// a principal other than the one the framework registered with (which
// would let one principal take over another's framework), or roles its
// principal may not register with (register_frameworks).
func (s *state) subscriptionRefusal(info *mesos.FrameworkInfo, fw *framework) string {
	if s.cfg.RefuseRootSubmissions && info.GetUser() == "root" {
		return "User 'root' is not allowed to run frameworks without --root_submissions set"
	}
	if fw != nil && fw.info.GetPrincipal() != info.GetPrincipal() {
		return fmt.Sprintf("Changing framework's principal is not allowed: framework %s is registered with principal '%s', not '%s'",
			fw.id, fw.info.GetPrincipal(), info.GetPrincipal())
	}
	if err := s.authorize(Principal{Name: info.GetPrincipal()}, authorizer.RegisterFramework, roleObjects(frameworkRoles(info))...); err != nil {
		return err.Error()
	}
	return ""
}

// frameworkOptions builds the allocator's options for a SUBSCRIBE or
// UPDATE_FRAMEWORK, validating its offer constraints against the
// framework's roles as Mesos does (the error says what is wrong).
func (s *state) frameworkOptions(info *mesos.FrameworkInfo, suppressed []string, c *schedulerpb.OfferConstraints) (allocator.FrameworkOptions, error) {
	oc, err := allocator.NewOfferConstraints(c, frameworkRoles(info), s.cfg.OfferConstraintsMaxProgramSize)
	return allocator.FrameworkOptions{SuppressedRoles: suppressed, OfferConstraints: oc}, err
}

// keptConstraints is what the master reports of a call's offer
// constraints: a copy, or nil when they constrain nothing.
func keptConstraints(c *schedulerpb.OfferConstraints) *schedulerpb.OfferConstraints {
	if len(c.GetRoleConstraints()) == 0 {
		return nil
	}
	return proto.CloneOf(c)
}

// updateFrameworkOnAgents sends the current FrameworkInfo to every agent
// running something of the framework, and to those holding updates it did
// not receive: on (re-)subscription this is what makes them forward those
// updates now.
func (s *state) updateFrameworkOnAgents(fw *framework) {
	ids := s.frameworkAgents(fw)
	if extra := s.undelivered[fw.id]; len(extra) > 0 {
		for _, id := range ids {
			delete(extra, id)
		}
		ids = append(ids, sortedKeys(extra)...)
		delete(s.undelivered, fw.id)
	}
	for _, id := range ids {
		if a := s.agents[id]; a != nil {
			ev := s.agentEvent(protocol.AgentEvent_UPDATE_FRAMEWORK)
			ev.UpdateFramework = &protocol.AgentEvent_UpdateFramework{FrameworkInfo: fw.info}
			s.sendAgent(a, ev)
		}
	}
}

// frameworkAgents lists, sorted, the agents with tasks or executors of fw.
func (s *state) frameworkAgents(fw *framework) []string {
	set := map[string]bool{}
	for _, t := range fw.tasks {
		set[t.agentID] = true
	}
	for id := range fw.executors {
		set[id] = true
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// frameworkUsed is what the framework runs per agent, for the allocator.
func (s *state) frameworkUsed(fw *framework) map[string]resources.Resources {
	used := map[string]resources.Resources{}
	for _, t := range fw.tasks {
		if !t.recovered {
			used[t.agentID] = used[t.agentID].Add(t.res)
		}
	}
	for agentID, execs := range fw.executors {
		for _, e := range execs {
			used[agentID] = used[agentID].Add(e.res)
		}
	}
	return used
}

func (s *state) emitFrameworkUpdated(fw *framework) {
	s.emit(func() *masterpb.Event {
		return &masterpb.Event{Type: masterpb.Event_FRAMEWORK_UPDATED.Enum(),
			FrameworkUpdated: &masterpb.Event_FrameworkUpdated{Framework: s.frameworkProto(fw)}}
	})
}

// trimCompleted bounds a framework's completed tasks.
func (s *state) trimCompleted(fw *framework) {
	if over := len(fw.completedTasks) - s.cfg.MaxCompletedTasksPerFramework; over > 0 {
		fw.completedTasks = append([]*mesos.Task(nil), fw.completedTasks[over:]...)
	}
}

func sortedTasks(m map[string]*task) []*task {
	out := make([]*task, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id() < out[j].id() })
	return out
}

func sortedOffers(m map[string]*offer) []*offer {
	out := make([]*offer, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
