package master

import (
	"math"
	"net"
	"sort"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// allocated turns one allocation into offers: per (agent, role), one Offer
// of each kind it holds (offerKinds: regular, throttle-able revocable,
// lent revocable), all sent in one OFFERS event. Resources that can no
// longer be offered (framework gone or inactive, agent gone or inactive)
// go straight back.
func (s *state) allocated(fwID string, offers allocator.Offers, now time.Time) {
	fw := s.frameworks[fwID]
	roles := make([]string, 0, len(offers))
	for role := range offers {
		roles = append(roles, role)
	}
	sort.Strings(roles)
	var made []*mesos.Offer
	for _, role := range roles {
		agents := make([]string, 0, len(offers[role]))
		for id := range offers[role] {
			agents = append(agents, id)
		}
		sort.Strings(agents)
		for _, agentID := range agents {
			// The master keeps offered and used resources in allocated form
			// (allocation_info.role set), as Mesos does, so a MULTI_ROLE
			// framework's resources are attributed to a role.
			res := offers[role][agentID].AllocatedTo(role)
			if res.IsEmpty() {
				continue
			}
			a := s.agents[agentID]
			if fw == nil || !fw.active || fw.stream == nil || a == nil || !a.active() {
				s.alloc.RecoverResources(fwID, agentID, res, nil)
				continue
			}
			if !s.stillOfferable(a, res) {
				// Allocated before an operation changed the agent's total
				// (an operator's, or a DESTROY of a shared volume): not
				// there in this form any more. Hand it back and have the
				// allocator recount the agent's free resources against
				// the total.
				s.log.Info("dropping an allocation that predates an operation on the agent",
					"framework", fwID, "agent", agentID, "resources", res.String())
				s.alloc.RecoverResources(fwID, agentID, res, nil)
				s.alloc.UpdateAgent(agentID, nil, a.total)
				continue
			}
			for _, part := range offerKinds(res) {
				o := &offer{id: s.newOfferID(), fwID: fwID, agentID: agentID, role: role, res: part}
				if s.cfg.OfferTimeout > 0 {
					s.setOfferExpiry(o, now.Add(s.cfg.OfferTimeout))
				}
				s.longOffer(o)
				o.proto = s.offerProto(o, fw, a)
				s.offers[o.id] = o
				fw.offers[o.id] = o
				a.offers[o.id] = o
				made = append(made, o.proto)
			}
		}
	}
	if len(made) == 0 {
		return
	}
	s.dirty = true
	s.sendFramework(fw, &schedulerpb.Event{
		Type:   schedulerpb.Event_OFFERS.Enum(),
		Offers: &schedulerpb.Event_Offers{Offers: made},
	})
}

// stillOfferable reports whether an allocation made by the allocator can
// still be offered on agent a in this form. Allocations are carved out of
// the total, but one may be on its way to the master when an operation
// changes the total: an operator's operation on free resources (a is then
// marked converted) or a framework's DESTROY of a shared volume, which the
// allocator offers while in use. Shared resources are checked against the
// total (several may hold them at once), the rest against what is free.
func (s *state) stillOfferable(a *agent, res resources.Resources) bool {
	res = res.NonRevocable().WithoutAllocationInfo() // revocable: not part of the total
	if res.HasShared() {
		sh := res.Shared()
		if !sh.SharedIn(a.total).Equal(sh) {
			return false
		}
		res = res.NonShared()
	}
	return !a.converted || s.freeOn(a).Contains(res)
}

// rescindOffersHolding rescinds the agent's offers that hold one of the
// volumes (DESTROY: a shared volume may be offered to others while the
// destroying framework holds it).
func (s *state) rescindOffersHolding(a *agent, volumes []*mesos.Resource) {
	vs, err := resources.FromProto(resources.ToPostRefinement(volumes))
	if err != nil || vs.IsEmpty() {
		return
	}
	vs = vs.WithoutAllocationInfo()
	for _, o := range sortedOffers(a.offers) {
		if !vs.SharedIn(o.res.WithoutAllocationInfo()).IsEmpty() || o.res.WithoutAllocationInfo().Contains(vs) {
			s.rescindOffer(o, true)
		}
	}
}

// offerKinds splits what one allocation gives on one agent into the offers
// the oversubscription-for-reservation design asks for ("Offers"): regular
// resources (unreserved and reserved), throttle-able revocable resources
// (the agent's estimated slack) and non-throttle revocable resources (lent
// reservations), each non-empty kind in an offer of its own, in that order.
// Rescinding one kind (its estimate shrank, its lender took it back) then
// leaves the framework's offers of the other kinds alone. A framework may
// still combine the offers of one agent in one ACCEPT.
func offerKinds(res resources.Resources) []resources.Resources {
	rev := res.Revocable()
	if rev.IsEmpty() {
		return []resources.Resources{res} // the common case, unsplit
	}
	out := make([]resources.Resources, 0, 3)
	for _, part := range []resources.Resources{res.NonRevocable(), rev.Throttleable(), rev.Lent()} {
		if !part.IsEmpty() {
			out = append(out, part)
		}
	}
	return out
}

// offerProto renders an offer the way the framework expects it (see
// reference §1.5): url, hostname, attributes, its executors on the agent;
// allocation_info only for MULTI_ROLE frameworks; pre-refinement resources
// unless RESERVATION_REFINEMENT; no ephemeral_ports.
func (s *state) offerProto(o *offer, fw *framework, a *agent) *mesos.Offer {
	multiRole := fw.has(mesos.FrameworkInfo_Capability_MULTI_ROLE)
	var rs []*mesos.Resource
	for _, r := range o.res.Proto() {
		if r.GetName() == "ephemeral_ports" {
			continue
		}
		if !multiRole {
			r.AllocationInfo = nil
		}
		rs = append(rs, r)
	}
	if !fw.has(mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT) {
		rs = resources.ToPreRefinementInPlace(rs) // rs are fresh from Proto
	}
	p := &mesos.Offer{
		Id:          offerID(o.id),
		FrameworkId: frameworkID(fw.id),
		AgentId:     agentID(a.id),
		Hostname:    proto.String(a.info.GetHostname()),
		Url:         agentURL(a),
		Domain:      a.info.GetDomain(),
		Resources:   rs,
		Attributes:  longAttributes(a.info.GetAttributes(), o.long),
		// Set while the agent's machine is in a maintenance window.
		Unavailability: s.agentUnavailability(a),
	}
	for _, id := range sortedKeys(fw.executors[a.id]) {
		p.ExecutorIds = append(p.ExecutorIds, &mesos.ExecutorID{Value: proto.String(id)})
	}
	if multiRole {
		p.AllocationInfo = &mesos.Resource_AllocationInfo{Role: proto.String(o.role)}
	}
	return p
}

// agentURL is the agent's HTTP address as frameworks find it in offers.
func agentURL(a *agent) *mesos.URL {
	host, portStr, err := net.SplitHostPort(a.endpoint)
	port := int64(a.info.GetPort())
	if err == nil {
		if p, perr := strconv.ParseInt(portStr, 10, 32); perr == nil {
			port = p
		}
	} else {
		host = a.endpoint
	}
	return &mesos.URL{
		Scheme: proto.String("http"),
		Address: &mesos.Address{
			Hostname: proto.String(a.info.GetHostname()),
			Ip:       proto.String(host),
			Port:     proto.Int32(int32(port)),
		},
		Path: proto.String("/slave(1)"),
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// normalizeFilters applies Mesos's rules to Filters: unset or negative
// refuse_seconds means the default 5 s, and the value is capped at a year.
func normalizeFilters(f *mesos.Filters) *mesos.Filters {
	secs := float64(DefaultRefuseSeconds)
	if f != nil && f.RefuseSeconds != nil {
		v := f.GetRefuseSeconds()
		if v >= 0 && !math.IsNaN(v) {
			secs = math.Min(v, MaxRefuseSeconds)
		}
	}
	return &mesos.Filters{RefuseSeconds: proto.Float64(secs)}
}

// decline handles DECLINE: each valid offer of the framework goes back to
// the allocator with the filters; unknown offers are ignored (they may have
// been rescinded meanwhile), as Mesos does.
func (s *state) decline(fw *framework, ids []*mesos.OfferID, filters *mesos.Filters) {
	f := normalizeFilters(filters)
	for _, id := range ids {
		o := s.offers[id.GetValue()]
		if o == nil || o.fwID != fw.id {
			s.log.Debug("ignoring DECLINE of unknown offer", "framework", fw.id, "offer", id.GetValue())
			continue
		}
		s.dropOffer(o)
		s.alloc.RecoverResources(o.fwID, o.agentID, o.res, f)
	}
}

// dropOffer forgets an offer (its resources are the caller's to recover;
// its long part goes back to the long-task books).
func (s *state) dropOffer(o *offer) {
	s.longUnoffer(o)
	delete(s.offers, o.id)
	if fw := s.frameworks[o.fwID]; fw != nil {
		delete(fw.offers, o.id)
	}
	if a := s.agents[o.agentID]; a != nil {
		delete(a.offers, o.id)
	}
	s.dirty = true
}

// rescindOffer takes an offer back: RESCIND to the framework if notify and
// it is connected, resources recovered without a filter.
func (s *state) rescindOffer(o *offer, notify bool) {
	s.dropOffer(o)
	if fw := s.frameworks[o.fwID]; fw != nil && notify {
		s.sendFramework(fw, &schedulerpb.Event{
			Type:    schedulerpb.Event_RESCIND.Enum(),
			Rescind: &schedulerpb.Event_Rescind{OfferId: offerID(o.id)},
		})
	}
	s.alloc.RecoverResources(o.fwID, o.agentID, o.res, nil)
}

func (s *state) recoverFrameworkOffers(fw *framework, notify bool) {
	s.dropFrameworkInverseOffers(fw)
	for _, o := range sortedOffers(fw.offers) {
		s.rescindOffer(o, notify)
	}
}

func (s *state) rescindAgentOffers(a *agent) {
	for _, o := range sortedOffers(a.offers) {
		s.rescindOffer(o, true)
	}
}

// rescindOn is the allocator's Rescind callback on the loop: the
// framework's offers on the agent no longer all fit (a revocable total
// shrank: a smaller estimate, a lent reservation its role took back; or an
// allocation predating a change of the agent's total). If r is all
// revocable, only the framework's offers holding some of r are rescinded,
// so a lender taking its reservation back costs a tenant its lent offer,
// not its regular or throttle-able ones; otherwise every offer of the
// framework on the agent is, as they may hold r in a form the agent no
// longer has.
func (s *state) rescindOn(fwID, agentID string, r resources.Resources, now time.Time) {
	fw := s.frameworks[fwID]
	if fw == nil {
		return
	}
	onlyRevocable := !r.IsEmpty() && r.NonRevocable().IsEmpty()
	want := r.WithoutAllocationInfo()
	for _, o := range sortedOffers(fw.offers) {
		if o.agentID != agentID {
			continue
		}
		if onlyRevocable && !shareResources(o.res.Revocable().WithoutAllocationInfo(), want) {
			continue
		}
		s.rescindOffer(o, true)
	}
}

// shareResources reports whether x and y have some resource in common.
func shareResources(x, y resources.Resources) bool {
	return !x.Subtract(x.Subtract(y)).IsEmpty()
}
