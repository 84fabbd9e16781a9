package master

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/allocatorpb"
	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/master/registrar"
)

// The master's side of maintenance (see maintenance.go for the machine
// modes): the schedule and DOWN machines as last written through the
// registrar, the unavailability each registered agent was given to the
// allocator, the outstanding inverse offers and the frameworks' answers.
//
// Inverse offers live like offers: the allocator makes them
// (Options.InverseOffer), the master sends INVERSE_OFFERS and keeps them
// until the framework answers (ACCEPT_INVERSE_OFFERS or
// DECLINE_INVERSE_OFFERS: the answer is recorded for
// GET_MAINTENANCE_STATUS and passed to the allocator with the call's
// filters) or they are rescinded (RESCIND_INVERSE_OFFER: the agent's
// unavailability changed, the agent went away) or dropped (the framework
// disconnected or was removed).
type maintState struct {
	schedule *maintenancepb.Schedule
	// index finds an agent's scheduled machine in constant time (see
	// setSchedule); a schedule names no two machines one agent matches.
	index map[string]scheduled
	down  map[string]*mesos.MachineID // by machineKey
	// unavail is what the allocator was told per registered agent.
	unavail map[string]*mesos.Unavailability
	// inverse are the outstanding inverse offers by ID.
	inverse map[string]*inverseOffer
	// statuses are the frameworks' answers by agent then framework,
	// forgotten when the agent's unavailability changes (as Mesos's
	// allocator forgets them).
	statuses map[string]map[string]*allocatorpb.InverseOfferStatus
}

type inverseOffer struct {
	id, fwID, agentID string
	proto             *mesos.InverseOffer
}

// scheduled is a machine of the schedule and its window's unavailability.
type scheduled struct {
	machine        *mesos.MachineID
	unavailability *mesos.Unavailability
}

// setSchedule replaces the schedule and its index: each machine under
// "hi:host/ip", "h:host" or "i:ip" after the fields it sets (host lower
// case).
func (ms *maintState) setSchedule(s *maintenancepb.Schedule) {
	ms.schedule = s
	ms.index = map[string]scheduled{}
	for _, w := range s.GetWindows() {
		for _, m := range w.GetMachineIds() {
			ms.index[indexKey(strings.ToLower(m.GetHostname()), m.GetIp())] = scheduled{m, w.GetUnavailability()}
		}
	}
}

func indexKey(host, ip string) string {
	switch {
	case host != "" && ip != "":
		return "hi:" + host + "/" + ip
	case host != "":
		return "h:" + host
	}
	return "i:" + ip
}

// maint returns the maintenance state, creating it.
func (s *state) maint() *maintState {
	if s.maintenance == nil {
		s.maintenance = &maintState{
			schedule: &maintenancepb.Schedule{},
			down:     map[string]*mesos.MachineID{},
			unavail:  map[string]*mesos.Unavailability{},
			inverse:  map[string]*inverseOffer{},
			statuses: map[string]map[string]*allocatorpb.InverseOfferStatus{},
		}
	}
	return s.maintenance
}

// recoverMaintenance loads the registry's schedule and DOWN machines on
// election (no agent is registered yet).
func (s *state) recoverMaintenance(rec *RecoveredRegistry) {
	ms := s.maint()
	ms.setSchedule(cloneSchedule(rec.Schedule))
	for _, m := range rec.Down {
		ms.down[machineKey(m)] = proto.Clone(m).(*mesos.MachineID)
	}
}

// agentMachine returns the scheduled machine the agent runs on and its
// window's unavailability (nil, nil if its machine is not scheduled).
func (s *state) agentMachine(hostname, ip string) (*mesos.MachineID, *mesos.Unavailability) {
	if s.maintenance == nil || len(s.maintenance.index) == 0 {
		return nil, nil
	}
	h := strings.ToLower(hostname)
	for _, k := range [3]string{indexKey(h, ip), indexKey(h, ""), indexKey("", ip)} {
		if k == "h:" || k == "i:" {
			continue // the agent has no hostname or no IP
		}
		if sc, ok := s.maintenance.index[k]; ok && machineMatches(sc.machine, hostname, ip) {
			return sc.machine, sc.unavailability
		}
	}
	return nil, nil
}

// downMachine returns the DOWN machine an agent would run on, or nil.
// DOWN machines are in the schedule (it may not drop them).
func (s *state) downMachine(hostname, ip string) *mesos.MachineID {
	m, _ := s.agentMachine(hostname, ip)
	if m == nil || s.maintenance.down[machineKey(m)] == nil {
		return nil
	}
	return m
}

// agentUnavailability is what an offer from the agent carries (nil if its
// machine is not scheduled).
func (s *state) agentUnavailability(a *agent) *mesos.Unavailability {
	_, u := s.agentMachine(a.info.GetHostname(), endpointIP(a.endpoint))
	return u
}

// refuseDownAgent ends a subscription from an agent on a DOWN machine
// with SHUTDOWN, as Mesos refuses its registration; true if it did.
func (s *state) refuseDownAgent(st *AgentStream, info *mesos.AgentInfo, endpoint string) bool {
	m := s.downMachine(info.GetHostname(), endpointIP(endpoint))
	if m == nil {
		return false
	}
	s.log.Warn("refusing registration of an agent on a DOWN machine", "hostname", info.GetHostname(),
		"endpoint", endpoint, "machine", machineString(m))
	s.endStream(st, s.shutdownEvent("Machine is `DOWN`"))
	s.count("master/dropped_messages")
	return true
}

// syncUnavailability gives the allocator the agent's current
// unavailability if it changed: the agent's offers (which carry it) and
// inverse offers are rescinded and the frameworks' answers forgotten, as
// Mesos's Master::updateUnavailability does.
func (s *state) syncUnavailability(a *agent) {
	ms := s.maint()
	u := s.agentUnavailability(a)
	old, had := ms.unavail[a.id]
	if (u == nil && !had) || (u != nil && had && proto.Equal(u, old)) {
		return
	}
	s.rescindAgentOffers(a)
	for _, io := range ms.sortedInverse() {
		if io.agentID == a.id {
			s.removeInverseOffer(io, true)
		}
	}
	delete(ms.statuses, a.id)
	if u == nil {
		delete(ms.unavail, a.id)
	} else {
		ms.unavail[a.id] = proto.Clone(u).(*mesos.Unavailability)
	}
	s.alloc.UpdateUnavailability(a.id, u)
	s.dirty = true
}

// syncAllUnavailability applies a schedule change to every registered
// agent.
func (s *state) syncAllUnavailability() {
	for _, id := range s.agentIDs() {
		s.syncUnavailability(s.agents[id])
	}
}

// forgetAgentMaintenance drops what maintenance held for an agent that
// left (its inverse offers are rescinded).
func (s *state) forgetAgentMaintenance(a *agent) {
	ms := s.maintenance
	if ms == nil {
		return
	}
	for _, io := range ms.sortedInverse() {
		if io.agentID == a.id {
			s.removeInverseOffer(io, true)
		}
	}
	delete(ms.unavail, a.id)
	delete(ms.statuses, a.id)
}

func (ms *maintState) sortedInverse() []*inverseOffer {
	out := make([]*inverseOffer, 0, len(ms.inverse))
	for _, k := range sortedKeys(ms.inverse) {
		out = append(out, ms.inverse[k])
	}
	return out
}

// removeInverseOffer forgets an outstanding inverse offer; rescind tells
// the framework (RESCIND_INVERSE_OFFER) and the allocator.
func (s *state) removeInverseOffer(io *inverseOffer, rescind bool) {
	delete(s.maint().inverse, io.id)
	s.dirty = true
	if !rescind {
		return
	}
	s.alloc.UpdateInverseOffer(io.agentID, io.fwID, nil)
	if fw := s.frameworks[io.fwID]; fw != nil {
		s.sendFramework(fw, &schedulerpb.Event{
			Type:                schedulerpb.Event_RESCIND_INVERSE_OFFER.Enum(),
			RescindInverseOffer: &schedulerpb.Event_RescindInverseOffer{InverseOfferId: offerID(io.id)},
		})
	}
}

// dropFrameworkInverseOffers forgets a framework's inverse offers when it
// disconnects, fails over or is removed (the allocator is told they are
// no longer outstanding, without a filter).
func (s *state) dropFrameworkInverseOffers(fw *framework) {
	ms := s.maintenance
	if ms == nil || len(ms.inverse) == 0 {
		return
	}
	for _, io := range ms.sortedInverse() {
		if io.fwID == fw.id {
			delete(ms.inverse, io.id)
			s.alloc.UpdateInverseOffer(io.agentID, io.fwID, nil)
			s.dirty = true
		}
	}
}

// inverseAllocated turns the allocator's inverse offers into
// INVERSE_OFFERS for the framework. Those that can no longer be sent
// (framework gone or inactive, agent gone, unavailability changed since)
// go back to the allocator as not outstanding.
func (s *state) inverseAllocated(fwID string, offers map[string]*mesos.Unavailability, now time.Time) {
	fw := s.frameworks[fwID]
	ms := s.maint()
	var made []*mesos.InverseOffer
	for _, aid := range sortedKeys(offers) {
		u := offers[aid]
		a := s.agents[aid]
		cur, ok := ms.unavail[aid]
		if fw == nil || !fw.active || fw.stream == nil || a == nil || !ok || !proto.Equal(cur, u) {
			s.alloc.UpdateInverseOffer(aid, fwID, nil)
			continue
		}
		io := &inverseOffer{id: s.newOfferID(), fwID: fwID, agentID: aid}
		io.proto = &mesos.InverseOffer{
			Id:             offerID(io.id),
			Url:            agentURL(a),
			FrameworkId:    frameworkID(fwID),
			AgentId:        agentID(aid),
			Unavailability: proto.Clone(u).(*mesos.Unavailability),
		}
		ms.inverse[io.id] = io
		made = append(made, io.proto)
	}
	if len(made) == 0 {
		return
	}
	s.dirty = true
	s.sendFramework(fw, &schedulerpb.Event{
		Type:          schedulerpb.Event_INVERSE_OFFERS.Enum(),
		InverseOffers: &schedulerpb.Event_InverseOffers{InverseOffers: made},
	})
}

// answerInverseOffers applies ACCEPT_INVERSE_OFFERS or
// DECLINE_INVERSE_OFFERS. As in Mesos, IDs that are not the framework's
// outstanding inverse offers are ignored (logged): they may have been
// rescinded while the answer was on its way.
func (s *state) answerInverseOffers(fw *framework, ids []*mesos.OfferID, filters *mesos.Filters, status allocatorpb.InverseOfferStatus_Status, now time.Time) {
	ms := s.maint()
	if filters == nil {
		filters = &mesos.Filters{} // refuse_seconds defaults to 5, as Mesos's
	}
	for _, id := range ids {
		io := ms.inverse[id.GetValue()]
		if io == nil || io.fwID != fw.id {
			s.log.Warn("ignoring answer to an inverse offer that is no longer valid", "framework", fw.id,
				"inverse_offer", id.GetValue(), "status", status.String())
			continue
		}
		delete(ms.inverse, io.id)
		if ms.statuses[io.agentID] == nil {
			ms.statuses[io.agentID] = map[string]*allocatorpb.InverseOfferStatus{}
		}
		ms.statuses[io.agentID][fw.id] = &allocatorpb.InverseOfferStatus{
			Status:      status.Enum(),
			FrameworkId: frameworkID(fw.id),
			Timestamp:   timeInfo(now),
		}
		s.alloc.UpdateInverseOffer(io.agentID, fw.id, filters)
		s.dirty = true
	}
}

// updateSchedule applies UPDATE_MAINTENANCE_SCHEDULE: validated against
// the DOWN machines, written through the registrar, then every agent's
// unavailability follows the new schedule.
func (s *state) updateSchedule(sched *maintenancepb.Schedule, finish func(error)) {
	ms := s.maint()
	if err := ValidateSchedule(sched, ms.down, "update_maintenance_schedule.schedule"); err != nil {
		finish(err)
		return
	}
	s.reg.UpdateSchedule(sched, func(err error) {
		s.post(func(s *state, now time.Time) {
			if err != nil {
				finish(maintenanceWriteFailed(err))
				return
			}
			s.maint().setSchedule(sched)
			s.syncAllUnavailability()
			s.dirty = true
			s.log.Info("maintenance schedule updated", "windows", len(sched.GetWindows()))
			finish(nil)
		})
	})
}

// startMaintenance applies START_MAINTENANCE: every machine must be
// scheduled and not DOWN; once the registrar recorded them DOWN, their
// agents are shut down and removed (tasks TASK_GONE_BY_OPERATOR, or
// TASK_LOST for frameworks that are not partition-aware). The call
// finishes when every removal is durable.
func (s *state) startMaintenance(ids []*mesos.MachineID, finish func(error)) {
	ms := s.maint()
	scheduled := map[string]bool{}
	for _, w := range ms.schedule.GetWindows() {
		for _, m := range w.GetMachineIds() {
			scheduled[machineKey(m)] = true
		}
	}
	for i, m := range ids {
		k := machineKey(m)
		if !scheduled[k] {
			finish(badRequest("start_maintenance.machines[%d]: Machine '%s' is not part of a maintenance schedule", i, machineString(m)))
			return
		}
		if ms.down[k] != nil {
			finish(badRequest("start_maintenance.machines[%d]: Machine '%s' is not in DRAINING mode and cannot be brought down", i, machineString(m)))
			return
		}
	}
	s.reg.StartMaintenance(ids, func(err error) {
		s.post(func(s *state, now time.Time) {
			if err != nil {
				finish(maintenanceWriteFailed(err))
				return
			}
			ms := s.maint()
			for _, m := range ids {
				ms.down[machineKey(m)] = proto.Clone(m).(*mesos.MachineID)
			}
			s.dirty = true
			var victims []*agent
			for _, id := range s.agentIDs() {
				a := s.agents[id]
				if s.downMachine(a.info.GetHostname(), endpointIP(a.endpoint)) != nil && !a.leaving {
					victims = append(victims, a)
				}
			}
			s.log.Info("machines down", "machines", len(ids), "agents", len(victims))
			pending := len(victims)
			if pending == 0 {
				finish(nil)
				return
			}
			var firstErr error
			for _, a := range victims {
				s.shutDownForMaintenance(a, func(err error) {
					if err != nil && firstErr == nil {
						firstErr = err
					}
					if pending--; pending == 0 {
						finish(firstErr)
					}
				})
			}
		})
	})
}

// shutDownForMaintenance removes an agent of a DOWN machine: the registrar
// removes it (it may come back only as a new agent, once its machine is
// UP), it is told SHUTDOWN, its tasks end. done runs on the loop.
func (s *state) shutDownForMaintenance(a *agent, done func(error)) {
	a.leaving = true
	s.rescindAgentOffers(a)
	s.alloc.DeactivateAgent(a.id)
	s.reg.Remove(a.id, func(err error) {
		s.post(func(s *state, now time.Time) {
			if s.agents[a.id] != a {
				done(nil)
				return
			}
			if err != nil {
				a.leaving = false
				done(registrarFailed(err))
				return
			}
			if a.stream != nil {
				st := a.stream
				a.stream = nil
				s.endStream(st, s.shutdownEvent("Operator initiated 'Machine DOWN'"))
			}
			s.dropAgent(a, func(fw *framework) mesos.TaskState {
				if fw.partitionAware() {
					return mesos.TaskState_TASK_GONE_BY_OPERATOR
				}
				return mesos.TaskState_TASK_LOST
			}, fmt.Sprintf("Agent %s (%s) removed: Operator initiated 'Machine DOWN'", a.id, a.info.GetHostname()), now, now)
			s.markGone(a.id) // the registry dropped its drain and binding with it
			s.count("master/slave_removals/reason_unregistered")
			s.dirty = true
			done(nil)
		})
	})
}

// stopMaintenance applies STOP_MAINTENANCE: every machine must be DOWN;
// once the registrar recorded them UP they leave the schedule and their
// agents may register again.
func (s *state) stopMaintenance(ids []*mesos.MachineID, finish func(error)) {
	ms := s.maint()
	for i, m := range ids {
		if ms.down[machineKey(m)] == nil {
			finish(badRequest("stop_maintenance.machines[%d]: Machine '%s' is not in DOWN mode and cannot be brought up", i, machineString(m)))
			return
		}
	}
	s.reg.StopMaintenance(ids, func(err error) {
		s.post(func(s *state, now time.Time) {
			if err != nil {
				finish(maintenanceWriteFailed(err))
				return
			}
			ms := s.maint()
			stop := map[string]bool{}
			for _, m := range ids {
				stop[machineKey(m)] = true
				delete(ms.down, machineKey(m))
			}
			ns := &maintenancepb.Schedule{}
			for _, w := range ms.schedule.GetWindows() {
				var keep []*mesos.MachineID
				for _, m := range w.GetMachineIds() {
					if !stop[machineKey(m)] {
						keep = append(keep, m)
					}
				}
				if len(keep) > 0 {
					ns.Windows = append(ns.Windows, &maintenancepb.Window{MachineIds: keep, Unavailability: w.GetUnavailability()})
				}
			}
			ms.setSchedule(ns)
			s.syncAllUnavailability()
			s.dirty = true
			s.log.Info("machines up", "machines", len(ids))
			finish(nil)
		})
	})
}

// maintenanceWriteFailed maps a registrar refusal of a maintenance write:
// one that does not fit the registry (a concurrent change won) is a 409;
// a failed write a 503.
func maintenanceWriteFailed(err error) error {
	if errors.Is(err, registrar.ErrMaintenance) {
		return &APIError{Status: http.StatusConflict, Message: "Maintenance change refused by the registry: " + err.Error()}
	}
	return registrarFailed(err)
}

// MaintenanceView is maintenance as a Snapshot shows it. Everything in it
// is a copy the reader may keep.
type MaintenanceView struct {
	// Schedule is the maintenance schedule (GET_MAINTENANCE_SCHEDULE).
	Schedule *maintenancepb.Schedule
	// Status is GET_MAINTENANCE_STATUS: every scheduled machine that is
	// not DOWN is DRAINING, with the answers of frameworks to the inverse
	// offers for its agents; then the DOWN machines.
	Status *maintenancepb.ClusterStatus
	// InverseOffers are the outstanding inverse offers by framework ID.
	InverseOffers map[string][]*mesos.InverseOffer
	// Agents maps registered agents on a scheduled machine to their
	// machine and window.
	Agents map[string]*AgentMaintenance
}

// AgentMaintenance is a registered agent's machine in the schedule.
type AgentMaintenance struct {
	Machine        *mesos.MachineID
	Unavailability *mesos.Unavailability
	// Mode is DRAINING (the agents of DOWN machines are shut down).
	Mode mesos.MachineInfo_Mode
}

func (s *state) maintenanceView() *MaintenanceView {
	ms := s.maint()
	v := &MaintenanceView{
		Schedule:      cloneSchedule(ms.schedule),
		Status:        &maintenancepb.ClusterStatus{},
		InverseOffers: map[string][]*mesos.InverseOffer{},
		Agents:        map[string]*AgentMaintenance{},
	}
	byMachine := map[string][]string{} // machine key → agent IDs
	for _, id := range s.agentIDs() {
		if len(ms.schedule.GetWindows()) == 0 {
			break // the common case: no walk of every agent per publish
		}
		a := s.agents[id]
		m, u := s.agentMachine(a.info.GetHostname(), endpointIP(a.endpoint))
		if m == nil {
			continue
		}
		v.Agents[id] = &AgentMaintenance{Machine: proto.Clone(m).(*mesos.MachineID),
			Unavailability: proto.Clone(u).(*mesos.Unavailability), Mode: mesos.MachineInfo_DRAINING}
		byMachine[machineKey(m)] = append(byMachine[machineKey(m)], id)
	}
	for _, w := range ms.schedule.GetWindows() {
		for _, m := range w.GetMachineIds() {
			k := machineKey(m)
			if ms.down[k] != nil {
				continue
			}
			dm := &maintenancepb.ClusterStatus_DrainingMachine{Id: proto.Clone(m).(*mesos.MachineID)}
			for _, aid := range byMachine[k] {
				for _, fid := range sortedKeys(ms.statuses[aid]) {
					dm.Statuses = append(dm.Statuses, proto.Clone(ms.statuses[aid][fid]).(*allocatorpb.InverseOfferStatus))
				}
			}
			v.Status.DrainingMachines = append(v.Status.DrainingMachines, dm)
		}
	}
	for _, k := range sortedKeys(ms.down) {
		v.Status.DownMachines = append(v.Status.DownMachines, proto.Clone(ms.down[k]).(*mesos.MachineID))
	}
	for _, io := range ms.sortedInverse() {
		v.InverseOffers[io.fwID] = append(v.InverseOffers[io.fwID], io.proto)
	}
	return v
}
