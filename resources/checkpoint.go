package resources

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// An agent's resources come from its flags (--resources) or are detected;
// both may carry static reservations only. Dynamic reservations and
// persistent volumes are made later by operations, so the agent must
// checkpoint them to survive a restart, and re-apply them to its flag
// resources when it starts again (Mesos: needCheckpointing and
// applyCheckpointedResources).

// Checkpointed returns the resources an agent must checkpoint: those with a
// dynamic reservation anywhere in their reservation stack, and persistent
// volumes (disks with persistence).
func (r Resources) Checkpointed() Resources {
	return r.filter((*item).needsCheckpoint)
}

// needsCheckpoint reports whether the item holds state that the agent's
// flags cannot recreate.
func (it *item) needsCheckpoint() bool {
	m := it.meta
	if m == nil {
		return false
	}
	if m.GetDisk().GetPersistence() != nil {
		return true
	}
	for _, res := range m.Reservations {
		if res.GetType() == mesos.Resource_ReservationInfo_DYNAMIC {
			return true
		}
	}
	return false
}

// ApplyCheckpointed returns an agent's total resources: total (what its
// flags or detection give, possibly with static reservations) with the
// checkpointed dynamic reservations and persistent volumes applied. Each
// checkpointed resource must be carved out of what remains of total: its
// flag form (dynamic reservations popped, persistence, volume and sharing
// removed) must be contained there, and is replaced by the checkpointed
// resource. The error names the first resource that does not fit, so an
// agent restarted with smaller --resources than its reservations fails
// clearly. Checkpointed resources that need no checkpointing are rejected
// too: they would be counted twice.
func ApplyCheckpointed(total, checkpointed Resources) (Resources, error) {
	remaining := total
	for _, it := range checkpointed.items {
		if !it.needsCheckpoint() {
			return Resources{}, fmt.Errorf("checkpointed resource %s is neither dynamically reserved nor a persistent volume", single(it))
		}
		for range it.copies() {
			want := single(it)
			flag := single(it.stripped())
			if !remaining.Contains(flag) {
				return Resources{}, fmt.Errorf("checkpointed resource %s does not fit the agent's resources %s: %s is missing",
					want, total, flag.Subtract(remaining))
			}
			remaining = remaining.Subtract(flag).Add(want)
		}
	}
	return remaining, nil
}

// single returns one copy of the item as a Resources value.
func single(it *item) Resources {
	if it.count == 1 {
		return Resources{items: []*item{it}}
	}
	c := *it
	c.count = 1
	return Resources{items: []*item{&c}}
}

// stripped returns the item as the agent's flags would give it: the dynamic
// reservations popped (only a leading static one is kept), persistence and
// volume removed from the disk (the disk info dropped entirely when no
// source is left), and not shared.
func (it *item) stripped() *item {
	return it.withMeta(func(m *mesos.Resource) {
		m.Reservations = staticPrefix(m.Reservations)
		m.Disk = stripVolume(m.Disk)
		m.Shared = nil
	})
}

// staticPrefix returns the static reservations at the bottom of a stack
// (refinements are always dynamic, so at most the first).
func staticPrefix(rs []*mesos.Resource_ReservationInfo) []*mesos.Resource_ReservationInfo {
	n := 0
	for n < len(rs) && rs[n].GetType() == mesos.Resource_ReservationInfo_STATIC {
		n++
	}
	if n == 0 {
		return nil
	}
	return rs[:n:n]
}

// stripVolume returns d without persistence and volume: the disk a
// persistent volume was created from. A disk info with no source left
// becomes nil (the agent's root disk). d is not modified.
func stripVolume(d *mesos.Resource_DiskInfo) *mesos.Resource_DiskInfo {
	if d == nil || (d.Persistence == nil && d.Volume == nil) {
		return d
	}
	if d.Source == nil {
		return nil
	}
	c := proto.Clone(d).(*mesos.Resource_DiskInfo)
	c.Persistence, c.Volume = nil, nil
	return c
}
