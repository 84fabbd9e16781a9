package master

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
)

// snapshot renders the state as an immutable Snapshot. Task, offer and info
// protos are shared, not copied: the state replaces them on change and
// never mutates a published one.
func (s *state) snapshot(now time.Time) *Snapshot {
	snap := &Snapshot{
		Info:        s.info,
		Leader:      s.leader,
		Elected:     s.leading,
		StartTime:   s.startTime,
		ElectedTime: s.electedTime,
		Flags:       append([]Flag(nil), s.cfg.Flags...),
		Counters:    make(map[string]float64, len(s.counters)),
	}
	for k, v := range s.counters {
		snap.Counters[k] = v
	}
	snap.Counters["master/operator_event_stream_subscribers"] = float64(len(s.watchers))
	snap.RecoveredAgents = sortedKeys(s.recovered)
	if !s.leading {
		snap.ElectedTime = time.Time{}
	}
	for _, id := range sortedKeys(s.frameworks) {
		snap.Frameworks = append(snap.Frameworks, s.frameworkView(s.frameworks[id]))
	}
	snap.CompletedFrameworks = append([]*FrameworkView(nil), s.completed...)
	for _, id := range s.agentIDs() {
		snap.Agents = append(snap.Agents, s.cachedAgentView(s.agents[id]))
	}
	for _, id := range sortedKeys(s.unreachable) {
		snap.UnreachableAgents = append(snap.UnreachableAgents, &UnreachableAgent{ID: id, Time: s.unreachable[id].at})
	}
	snap.Operations = s.operationViews()
	snap.Roles = s.roleViews()
	snap.Weights = make(map[string]float64, len(s.rolesState().weights))
	for role, w := range s.rolesState().weights {
		snap.Weights[role] = w
	}
	snap.Maintenance = s.maintenanceView()
	return snap
}

func (s *state) frameworkView(fw *framework) *FrameworkView {
	v := &FrameworkView{
		Info:             fw.info,
		Active:           fw.active,
		Connected:        fw.connected,
		Recovered:        fw.recovered,
		RegisteredTime:   fw.registeredTime,
		ReregisteredTime: fw.reregisteredTime,
		CompletedTasks:   append([]*mesos.Task(nil), fw.completedTasks...),
		Metrics:          make(map[string]float64, len(fw.metrics)),
	}
	for k, n := range fw.metrics {
		v.Metrics[k] = n
	}
	for _, t := range sortedTasks(fw.tasks) {
		v.Tasks = append(v.Tasks, t.proto)
	}
	for _, id := range sortedKeys(fw.unreachableTasks) {
		v.UnreachableTasks = append(v.UnreachableTasks, fw.unreachableTasks[id])
	}
	var offered resources.Resources
	for _, o := range sortedOffers(fw.offers) {
		v.Offers = append(v.Offers, o.proto)
		offered = offered.Add(o.res)
	}
	for _, agentID := range sortedKeys(fw.executors) {
		for _, id := range sortedKeys(fw.executors[agentID]) {
			v.Executors = append(v.Executors, &ExecutorView{AgentID: agentID, Info: fw.executors[agentID][id].info})
		}
	}
	var used resources.Resources
	for _, r := range s.frameworkUsed(fw) {
		used = used.Add(r)
	}
	v.Used = used.Proto()
	v.Offered = offered.Proto()
	v.SuppressedRoles = sortedKeys(fw.suppressed)
	v.OfferConstraints = fw.offerConstraints
	return v
}

func (s *state) agentView(a *agent) *AgentView {
	v := &AgentView{
		Info:             a.info,
		PID:              a.pid(),
		Endpoint:         a.endpoint,
		Version:          a.version,
		Capabilities:     a.caps,
		Active:           a.active(),
		Connected:        a.connected,
		Deactivated:      a.deactivated,
		DrainInfo:        a.drain,
		RegisteredTime:   a.registeredTime,
		ReregisteredTime: a.reregisteredTime,
		Total:            a.totalProto,
		Unreserved:       a.totalProto, // unless reservations, below
		TaskCounts:       map[string]int{},
	}
	if len(a.reserved) > 0 {
		v.Unreserved = a.total.Unreserved().Proto()
		v.Reserved = make(map[string][]*mesos.Resource, len(a.reserved))
		for role, r := range a.reserved {
			v.Reserved[role] = r.Proto()
		}
	}
	var used, offered resources.Resources
	fws := map[string]bool{}
	for fwID, ts := range a.tasks {
		for _, t := range ts {
			fws[fwID] = true
			if !t.recovered {
				used = used.Add(t.res)
			}
			v.TaskCounts[t.proto.GetState().String()]++
		}
	}
	for fwID, es := range a.executors {
		fws[fwID] = true
		for _, e := range es {
			used = used.Add(e.res)
		}
	}
	for _, o := range a.offers {
		offered = offered.Add(o.res)
	}
	v.Used = used.Proto()
	v.Offered = offered.Proto()
	v.FrameworkIDs = sortedKeys(fws)
	// Revocable resources count in the agent's total and its unreserved
	// resources, as Mesos counts an agent's estimate in its
	// totalResources (the regular views stay shared).
	if rev := s.revocableTotal(a, used, offered); !rev.IsEmpty() {
		p := rev.Proto()
		v.Total = slices.Concat(v.Total, p)
		v.Unreserved = slices.Concat(v.Unreserved, p)
	}
	return v
}

// roleViews lists roles known from frameworks, reservations, weights and
// quota, with their weight, quota, and allocated, offered and reserved
// resources.
func (s *state) roleViews() []*RoleView {
	roles := map[string]*RoleView{}
	get := func(name string) *RoleView {
		r := roles[name]
		if r == nil {
			r = &RoleView{Name: name, Weight: s.weight(name)}
			roles[name] = r
		}
		return r
	}
	for role := range s.rolesState().weights {
		get(role)
	}
	for role := range s.rolesState().quotas {
		get(role)
	}
	allocated, reserved := s.roleUsage()
	offered := map[string]resources.Resources{}
	for _, id := range sortedKeys(s.frameworks) {
		fw := s.frameworks[id]
		for _, role := range fw.roles() {
			r := get(role)
			r.Frameworks = append(r.Frameworks, id)
		}
		for _, o := range fw.offers {
			offered[o.role] = offered[o.role].Add(o.res)
		}
	}
	for role, r := range allocated {
		get(role).Allocated = r.Proto()
	}
	for role, r := range offered {
		get(role).Offered = r.Proto()
	}
	for role, r := range reserved {
		get(role).Reserved = r.Proto()
	}
	subUsed, subReserved := consumptionBase(allocated, reserved)
	out := make([]*RoleView, 0, len(roles))
	for _, r := range roles {
		r.Quota = s.quotaView(r.Name, subUsed, subReserved)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func allocationRole(r resources.Resources, fallback string) string {
	for _, x := range r.Proto() {
		if role := x.GetAllocationInfo().GetRole(); role != "" {
			return role
		}
	}
	return fallback
}

// frameworkProto is the operator API's view of a framework.
func (s *state) frameworkProto(fw *framework) *masterpb.Response_GetFrameworks_Framework {
	v := s.frameworkView(fw)
	return &masterpb.Response_GetFrameworks_Framework{
		FrameworkInfo:      fw.info,
		Active:             proto.Bool(fw.active),
		Connected:          proto.Bool(fw.connected),
		Recovered:          proto.Bool(fw.recovered),
		RegisteredTime:     timeInfo(fw.registeredTime),
		ReregisteredTime:   timeInfo(fw.reregisteredTime),
		Offers:             v.Offers,
		AllocatedResources: v.Used,
		OfferedResources:   v.Offered,
		// Always set, empty when there are none, as Mesos does.
		OfferConstraints: cmp.Or(fw.offerConstraints, &schedulerpb.OfferConstraints{}),
	}
}

// agentProto is the operator API's view of an agent.
func (s *state) agentProto(a *agent) *masterpb.Response_GetAgents_Agent {
	v := s.agentView(a)
	return &masterpb.Response_GetAgents_Agent{
		AgentInfo:          a.info,
		Active:             proto.Bool(v.Active),
		Deactivated:        proto.Bool(a.deactivated),
		DrainInfo:          a.drain,
		Version:            proto.String(a.version),
		Pid:                proto.String(v.PID),
		RegisteredTime:     timeInfo(a.registeredTime),
		ReregisteredTime:   timeInfo(a.reregisteredTime),
		TotalResources:     v.Total,
		AllocatedResources: v.Used,
		OfferedResources:   v.Offered,
		Capabilities:       a.caps,
	}
}
