package resources

import (
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// filter keeps the items for which keep returns true. Order is preserved,
// so no re-sorting is needed.
func (r Resources) filter(keep func(*item) bool) Resources {
	var out []*item
	for _, it := range r.items {
		if keep(it) {
			out = append(out, it)
		}
	}
	return Resources{items: out}
}

// Filter keeps the entries for which keep returns true. keep receives a
// fresh post-refinement proto of each entry (one copy for indivisible
// entries, whose copies are kept or dropped together) and may not retain it.
func (r Resources) Filter(keep func(*mesos.Resource) bool) Resources {
	return r.filter(func(it *item) bool { return keep(it.protoOne()) })
}

// Named returns the entries called name.
func (r Resources) Named(name string) Resources {
	return r.filter(func(it *item) bool { return it.name == name })
}

// Scalars returns the SCALAR entries.
func (r Resources) Scalars() Resources {
	return r.filter(func(it *item) bool { return it.typ == mesos.Value_SCALAR })
}

// Unreserved returns the resources with no reservation (role "*").
func (r Resources) Unreserved() Resources {
	return r.filter(func(it *item) bool { return it.role == "" })
}

// Reserved returns the resources with any reservation.
func (r Resources) Reserved() Resources {
	return r.filter(func(it *item) bool { return it.role != "" })
}

// ReservedTo returns the resources whose reservation stack ends with role
// exactly (Mesos's reserved(role)).
func (r Resources) ReservedTo(role string) Resources {
	return r.filter(func(it *item) bool { return it.role != "" && it.role == role })
}

// AllocatableTo returns what a framework in role may be allocated:
// unreserved resources and those reserved to role or to one of its ancestors
// (a child role can use its ancestors' reservations).
func (r Resources) AllocatableTo(role string) Resources {
	return r.filter(func(it *item) bool {
		return it.role == "" || it.role == role || IsStrictSubroleOf(role, it.role)
	})
}

// Revocable returns the revocable resources.
func (r Resources) Revocable() Resources {
	return r.filter(func(it *item) bool { return it.revocable })
}

// Throttleable returns the revocable resources with throttle_info: the
// usage slack agents estimate, which QoS controllers throttle or evict
// (the oversubscription-for-reservation design's "throttle-able" kind).
func (r Resources) Throttleable() Resources {
	return r.filter(func(it *item) bool { return it.throttle })
}

// Lent returns the revocable resources without throttle_info: idle
// reservations lent out, which the owner takes back by evicting tenants.
func (r Resources) Lent() Resources {
	return r.filter(func(it *item) bool { return it.revocable && !it.throttle })
}

// AsLent returns what r's reserved resources become when lent out
// (oversubscription for reservations): unreserved, without allocation
// info, revocable without throttle_info. Persistent volumes, other disks
// with disk info and shared resources are never lent (a tenant could not
// give them back as it found them), nor are unreserved resources, which
// need no lending.
func (r Resources) AsLent() Resources {
	ps := r.filter(func(it *item) bool {
		return it.role != "" && !it.shared && it.meta.GetDisk() == nil
	}).Proto()
	for _, p := range ps {
		p.Reservations = nil
		p.Reservation = nil
		p.Role = nil
		p.AllocationInfo = nil
		p.Revocable = &mesos.Resource_RevocableInfo{}
	}
	return rebuilt(ps)
}

// AsThrottleable returns r marked as an agent's usage slack: every entry
// revocable with throttle_info (the master marks the estimates agents
// send in UPDATE_RESOURCES this way, so they never merge with lent
// reservations).
func (r Resources) AsThrottleable() Resources {
	ps := r.Proto()
	for _, p := range ps {
		p.Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
	}
	return rebuilt(ps)
}

// rebuilt is New of protos derived from valid resources by changing
// what only identifies them (reservation, revocability): they cannot be
// invalid, so an error is a bug here.
func rebuilt(ps []*mesos.Resource) Resources {
	out, err := FromProto(ps)
	if err != nil {
		panic("resources: rebuilding derived resources: " + err.Error())
	}
	return out
}

// NonRevocable returns the non-revocable resources.
func (r Resources) NonRevocable() Resources {
	return r.filter(func(it *item) bool { return !it.revocable })
}

// Shared returns the shared resources.
func (r Resources) Shared() Resources {
	return r.filter(func(it *item) bool { return it.shared })
}

// HasShared reports whether r holds shared resources, without building
// anything (the allocator asks on its hot path).
func (r Resources) HasShared() bool {
	for _, it := range r.items {
		if it.shared {
			return true
		}
	}
	return false
}

// SharedIn returns the shared entries of r, with all their copies, of
// which o holds at least one copy: a shared resource held several times
// (one copy per user) still exists while o (an agent's total) has it once.
func (r Resources) SharedIn(o Resources) Resources {
	have := make(map[string]bool, len(o.items))
	for _, it := range o.items {
		if it.shared {
			have[it.key] = true
		}
	}
	return r.filter(func(it *item) bool { return it.shared && have[it.key] })
}

// NonShared returns the non-shared resources.
func (r Resources) NonShared() Resources {
	return r.filter(func(it *item) bool { return !it.shared })
}

// PersistentVolumes returns the disk resources with a persistence id.
func (r Resources) PersistentVolumes() Resources {
	return r.filter(func(it *item) bool {
		return it.meta != nil && it.meta.GetDisk().GetPersistence() != nil
	})
}

// ByAllocationRole returns the entries whose allocation_info names role,
// counting entries without allocation_info as role "".
func (r Resources) ByAllocationRole(role string) Resources {
	return r.filter(func(it *item) bool { return it.allocRole == role })
}

// Allocated returns the resources that carry allocation_info for role
// (AllocationInfo is set by the master on offered and used resources).
func (r Resources) Allocated(role string) Resources {
	return r.filter(func(it *item) bool { return it.hasAlloc && it.allocRole == role })
}

// AllocationRoles returns the distinct allocation_info roles present in r.
func (r Resources) AllocationRoles() []string {
	seen := map[string]bool{}
	var out []string
	for _, it := range r.items {
		if it.hasAlloc && !seen[it.allocRole] {
			seen[it.allocRole] = true
			out = append(out, it.allocRole)
		}
	}
	return out
}

// mapItems rewrites every item's identity with f and re-normalizes (the
// rewrite may make distinct entries equal).
func (r Resources) mapItems(f func(m *mesos.Resource)) Resources {
	if len(r.items) == 0 {
		return r
	}
	items := make([]*item, len(r.items))
	for i, it := range r.items {
		items[i] = it.withMeta(f)
	}
	return build(items)
}

// AllocatedTo returns a copy with allocation_info.role set to role on every
// entry, as the master marks offered and used resources.
func (r Resources) AllocatedTo(role string) Resources {
	done := true
	for _, it := range r.items {
		if !it.hasAlloc || it.allocRole != role {
			done = false
			break
		}
	}
	if done {
		return r
	}
	// One AllocationInfo shared by every entry: meta sub-messages are
	// immutable and Proto() hands out clones.
	ai := &mesos.Resource_AllocationInfo{Role: proto.String(role)}
	return r.mapItems(func(m *mesos.Resource) { m.AllocationInfo = ai })
}

// WithoutAllocationInfo returns a copy with allocation_info cleared.
func (r Resources) WithoutAllocationInfo() Resources {
	for _, it := range r.items {
		if it.hasAlloc {
			return r.mapItems(func(m *mesos.Resource) { m.AllocationInfo = nil })
		}
	}
	return r
}

// ToUnreserved returns a copy with every reservation removed.
func (r Resources) ToUnreserved() Resources {
	for _, it := range r.items {
		if it.role != "" {
			return r.mapItems(func(m *mesos.Resource) { m.Reservations = nil })
		}
	}
	return r
}

// PushReservation returns a copy with res pushed on top of every entry's
// reservation stack (a RESERVE operation). The result is validated, so a
// reservation that does not refine the existing stack is an error.
func (r Resources) PushReservation(res *mesos.Resource_ReservationInfo) (Resources, error) {
	out := r.Proto()
	for _, p := range out {
		p.Reservations = append(p.Reservations, proto.Clone(res).(*mesos.Resource_ReservationInfo))
	}
	return FromProto(out)
}

// PopReservation returns a copy with the top reservation removed from every
// reserved entry (an UNRESERVE operation); unreserved entries are unchanged.
func (r Resources) PopReservation() Resources {
	for _, it := range r.items {
		if it.role != "" {
			return r.mapItems(func(m *mesos.Resource) {
				if n := len(m.Reservations); n > 0 {
					// Clip so nobody can append into the shared array.
					m.Reservations = m.Reservations[: n-1 : n-1]
				}
			})
		}
	}
	return r
}
