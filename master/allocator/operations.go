package allocator

import (
	"errors"
	"fmt"
	"sort"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Offer operations (RESERVE, UNRESERVE, CREATE, DESTROY, GROW_VOLUME,
// SHRINK_VOLUME) convert resources in place: the same quantities, with
// another reservation or disk info. When a framework applies one to what
// it was offered, the master tells the allocator (UpdateAllocation) so
// that the framework's allocation and the agent's total both hold the
// converted form; nothing is freed, so nothing is re-offered. The
// framework's and its roles' shares do not move (same quantities); what
// moves is where the resources may be offered once handed back, and the
// role's quota consumption (reservations count in full, quota.go).

// updateAllocation applies one conversion of framework fid's allocation on
// agent aid (Allocator.UpdateAllocation). Unknown IDs are ignored like in
// every notification (they race with removals); an inconsistent update is
// refused whole and counted. It never frees anything, so it asks for no
// allocation run.
func (c *core) updateAllocation(fid, aid string, from, to resources.Resources) bool {
	f := c.frameworks[fid]
	a := c.agents[aid]
	if f == nil || a == nil {
		return false
	}
	if err := c.convert(a, f, from, to); err != nil {
		c.updatesRejected++
		c.lastRejected = err.Error()
	}
	return false
}

// convert replaces from by to in f's allocation on a and in a's total,
// or changes nothing and says why.
func (c *core) convert(a *agent, f *framework, from, to resources.Resources) error {
	if from.IsEmpty() && to.IsEmpty() {
		return nil
	}
	if !from.Revocable().IsEmpty() || !to.Revocable().IsEmpty() {
		return errors.New("revocable resources cannot be converted")
	}
	if from.IsEmpty() && to.HasShared() {
		// More copies of shared resources the framework was offered
		// (tasks of one ACCEPT used more than its offers held).
		return c.addSharedCopies(a, f, to)
	}
	rn, err := c.conversionRole(a, f, from, to)
	if err != nil {
		return err
	}
	fromU, toU := from.WithoutAllocationInfo(), to.WithoutAllocationInfo()
	if !sameQuantities(fromU, toU) {
		return fmt.Errorf("%s and %s are not the same quantities", fromU, toU)
	}
	if !a.total.Contains(fromU) {
		return fmt.Errorf("agent %s total %s does not hold %s", a.id, a.total, fromU)
	}
	shared := fromU.HasShared() || toU.HasShared()
	var before sharedHeld
	var ownBefore qv
	i := a.alloc.find(f.id, rn)
	e := &a.alloc[i] // conversionRole found it
	if shared {
		before = c.sharedHeldBy(a, f.id, rn)
		ownBefore = c.names.vecOf(e.res.NonShared())
	}
	e.res = e.res.Subtract(fromU).Add(toU)
	e.taggedOK = false
	// The cluster's quantities do not change, so shares need no resort
	// (setTotal would ask for one: a full pass over every sorter).
	dirty := c.totalDirty
	c.setTotal(a, a.total.Subtract(fromU).Add(toU))
	c.totalDirty = dirty
	if shared {
		// A volume became shared or stopped being shared: the same
		// quantities overall, but the non-shared part (the entry's
		// vectors) moved, and shared resources count once per holder.
		own := c.names.vecOf(e.res.NonShared())
		e.q = append(e.q[:0], own...)
		e.uq = append(e.uq[:0], c.names.vecOf(e.res.NonShared().Unreserved())...)
		n := f.nodes[rn]
		if d := own.clone().sub(ownBefore); !d.isZero() {
			if r := c.roles[rn]; r != nil {
				r.leaf.adjust(d, c.totalQ)
			}
			if n != nil {
				n.adjust(d, c.totalQ)
			}
		}
		c.chargeShared(a, f.id, rn, n, before)
	} else if e.q != nil {
		// Same quantities; only the unreserved part may have moved.
		e.uq = append(e.uq[:0], c.names.vecOf(e.res.Unreserved())...)
	}
	c.refreshCand(a) // idle reservations may have appeared or gone
	return nil
}

// conversionRole is the role whose allocation of f on a holds from: the
// role named by from's allocation info, else the first role (by name)
// whose allocation contains it.
func (c *core) conversionRole(a *agent, f *framework, from, to resources.Resources) (string, error) {
	held := a.alloc.byRole(f.id)
	fromU := from.WithoutAllocationInfo()
	tagged := from.AllocationRoles()
	switch {
	case len(tagged) > 1:
		return "", fmt.Errorf("%s is allocated to several roles %v", from, tagged)
	case len(tagged) == 1:
		rn := tagged[0]
		if !from.ByAllocationRole("").IsEmpty() {
			return "", fmt.Errorf("%s mixes resources with and without allocation info", from)
		}
		if tr := to.AllocationRoles(); len(tr) > 1 || (len(tr) == 1 && tr[0] != rn) || (len(tr) == 1 && !to.ByAllocationRole("").IsEmpty()) {
			return "", fmt.Errorf("%s is allocated to %s but %s is not", from, rn, to)
		}
		if h, ok := held[rn]; !ok || !h.Contains(fromU) {
			return "", fmt.Errorf("framework %s does not hold %s in role %s on agent %s", f.id, fromU, rn, a.id)
		}
		return rn, nil
	}
	if len(to.AllocationRoles()) > 0 {
		return "", fmt.Errorf("%s names an allocation role but %s does not", to, from)
	}
	roles := make([]string, 0, len(held))
	for rn := range held {
		roles = append(roles, rn)
	}
	sort.Strings(roles)
	for _, rn := range roles {
		if held[rn].Contains(fromU) {
			return rn, nil
		}
	}
	return "", fmt.Errorf("framework %s does not hold %s on agent %s", f.id, fromU, a.id)
}

// sameQuantities reports whether x and y hold the same amounts of the
// same resources (scalars, ranges and sets by name), whatever their
// reservations, disk infos or sharing: what a conversion preserves.
func sameQuantities(x, y resources.Resources) bool {
	bx, errx := bare(x)
	by, erry := bare(y)
	return errx == nil && erry == nil && bx.Equal(by)
}

// bare strips everything but names, types and values.
func bare(r resources.Resources) (resources.Resources, error) {
	ps := r.Proto()
	out := make([]*mesos.Resource, 0, len(ps))
	for _, p := range ps {
		out = append(out, &mesos.Resource{Name: p.Name, Type: p.Type, Scalar: p.Scalar, Ranges: p.Ranges, Set: p.Set})
	}
	return resources.New(out...)
}
