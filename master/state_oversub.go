package master

import (
	"fmt"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// The master's side of oversubscription (docs/oversubscription.md). Two
// kinds of revocable resources reach frameworks with the
// REVOCABLE_RESOURCES capability, and they never merge:
//
//   - throttle-able slack: what an agent's resource estimator says may be
//     oversubscribed, sent in UPDATE_RESOURCES. The master marks every
//     resource of the estimate with throttle_info; the agent's QoS
//     controller throttles or evicts what runs on it.
//   - lent reservations (--lend_idle_reservations): reserved resources
//     nobody is allocated, lent without throttle_info; the agent evicts
//     tenants when the reservation's role launches on them.
//
// Each kind goes out in offers of its own (allocated), so a rescind of one
// kind leaves the framework's other offers alone (rescindOn).

// updateOversubscribed handles UPDATE_RESOURCES: the agent's estimate
// replaces the previous one. An invalid estimate changes nothing and is
// refused with 400 naming the field.
func (s *state) updateOversubscribed(a *agent, rs []*mesos.Resource) error {
	est, err := validateEstimate(rs)
	if err != nil {
		s.log.Warn("refusing an agent's oversubscribed resources", "agent", a.id, "err", err)
		return badRequest("Invalid 'update_resources.oversubscribed': %v", err)
	}
	if !est.Equal(a.oversubscribed) {
		s.log.Debug("agent's oversubscribed resources changed", "agent", a.id,
			"from", a.oversubscribed.String(), "to", est.String())
		a.oversubscribed = est
		a.oversubGen++
		s.dirty = true
	}
	// Passed on even when unchanged: the allocator's copy is what it
	// offers, and the agent resends after a (re-)registration.
	s.alloc.UpdateOversubscribed(a.id, est)
	return nil
}

// validateEstimate checks an UPDATE_RESOURCES estimate and returns it
// marked throttle-able. An estimate is revocable, unreserved scalar
// resources (what an estimator may oversubscribe: cpus, mem, disk, …);
// reservations, allocation info, disk info and sharing have no meaning in
// it. Revocable resources with or without throttle_info are accepted: the
// master marks them all.
func validateEstimate(rs []*mesos.Resource) (resources.Resources, error) {
	if err := resources.Validate(rs); err != nil {
		return resources.Resources{}, err
	}
	for i, r := range rs {
		field := fmt.Sprintf("oversubscribed[%d] (%s)", i, r.GetName())
		switch {
		case r.GetType() != mesos.Value_SCALAR:
			return resources.Resources{}, fmt.Errorf("%s: must be a scalar, got %s", field, r.GetType())
		case r.GetRevocable() == nil:
			return resources.Resources{}, fmt.Errorf("%s: must be revocable (revocable: {})", field)
		case len(r.GetReservations()) > 0 || r.GetReservation() != nil || (r.GetRole() != "" && r.GetRole() != "*"):
			return resources.Resources{}, fmt.Errorf("%s: must be unreserved", field)
		case r.GetAllocationInfo() != nil:
			return resources.Resources{}, fmt.Errorf("%s: must not carry allocation_info", field)
		case r.GetDisk() != nil:
			return resources.Resources{}, fmt.Errorf("%s: must not carry disk info", field)
		case r.GetShared() != nil:
			return resources.Resources{}, fmt.Errorf("%s: must not be shared", field)
		}
	}
	est, err := resources.FromProto(rs)
	if err != nil {
		return resources.Resources{}, err
	}
	return est.AsThrottleable(), nil
}

// revocableTotal is what the agent may offer as revocable now: its
// estimate and, with --lend_idle_reservations while it is active, the
// reservations neither used (regular) nor offered (regular), as lent. It
// is the agent's revocable part in the state and metrics, as Mesos counts
// the estimate in an agent's total. used and offered are what runs and is
// offered on the agent (both kinds, any allocation info).
func (s *state) revocableTotal(a *agent, used, offered resources.Resources) resources.Resources {
	rev := a.oversubscribed
	if s.cfg.LendIdleReservations && len(a.reserved) > 0 && a.active() {
		held := used.Add(offered).NonRevocable().Reserved().WithoutAllocationInfo()
		rev = rev.Add(a.total.Reserved().Subtract(held).AsLent())
	}
	return rev
}

// mixesRevocable refuses revocable and non-revocable resources of one name
// in one container (task, executor, or both), as Mesos's validation does:
// a container is revocable as a whole (the QoS controller may kill it), so
// it may take its cpus from revocable resources and its memory from
// regular ones, but not some of its cpus from each.
func mixesRevocable(r resources.Resources) error {
	rev := r.Revocable()
	if rev.IsEmpty() {
		return nil
	}
	regular := map[string]bool{}
	for _, p := range r.NonRevocable().Proto() {
		regular[p.GetName()] = true
	}
	for _, p := range rev.Proto() {
		if regular[p.GetName()] {
			return fmt.Errorf("Cannot use both revocable and non-revocable '%s' at the same time", p.GetName())
		}
	}
	return nil
}
