package allocator

import "mezzo/resources"

// revocableStage is the third stage (oversubscription-for-reservation
// design, Option 1): a separate role sorter and per-role framework sorters
// offer revocable resources (the agents' oversubscribed estimates, plus
// idle reservations when enabled) only to frameworks with the
// REVOCABLE_RESOURCES capability. The revocable total is recomputed here
// because idle reservations change in the fair stage; when it shrinks
// below what is allocated, the excess is rescinded.
func (rn *run) revocableStage(agents []*agent) {
	c := rn.c
	var totalQ qv
	any := false
	for _, a := range agents {
		if a.oversub.IsEmpty() && a.revAllocd.IsEmpty() && !(c.idleResvd && a.reserved) {
			a.revTotal = resources.Resources{}
			continue
		}
		total := a.oversub
		if c.idleResvd && a.reserved && a.active {
			total = total.Add(a.free.AsLent())
		}
		if !a.active {
			total = resources.Resources{}
		}
		a.revTotal = total
		totalQ = totalQ.add(c.names.vecOf(total))
		any = true
		rn.rescindExcess(a)
	}
	if !any {
		return
	}
	if !sameVec(totalQ, c.revTotalQ) {
		c.revTotalQ = totalQ
		c.revRoot.resort(totalQ)
		for _, r := range c.roles {
			r.revFws.resort(totalQ)
		}
	}
	for _, a := range agents {
		if !a.active || a.revTotal.IsEmpty() {
			continue
		}
		free := a.revTotal.Subtract(a.revAllocd)
		if free.IsEmpty() {
			continue
		}
		q := c.names.vecOf(free)
		minOK := c.minAllocatableOK(q)
		if c.skipBelowMin(minOK) {
			continue
		}
		snap := append(rn.scratch[:0:0], c.revRoot.kids...)
		done := false
		for _, leaf := range snap {
			r := leaf.role
			if r == nil || r.revLive == 0 {
				continue
			}
			it := rn.frameworks(r.revFws)
			for n := it.next(); n != nil; n = it.next() {
				f := n.fw
				if !f.revocable || !offerable(n, a) || !admits(n, a, q, minOK) || filtered(n, a, q, rn.now) {
					continue
				}
				c.trackRevocable(a, f, r.name, free, q)
				rn.addOffer(a, f, r.name, free)
				done = true
				break
			}
			if done {
				break
			}
		}
	}
}

// rescindExcess asks for offers of revocable resources above the agent's
// revocable total to be rescinded, once per excess.
func (rn *run) rescindExcess(a *agent) {
	if a.revAllocd.IsEmpty() || a.revTotal.Contains(a.revAllocd) {
		return
	}
	excess := a.revAllocd.Subtract(a.revTotal)
	ids := a.revAlloc.frameworks()
	for _, fid := range ids {
		excess = excess.Subtract(a.rescinding[fid])
	}
	for _, fid := range ids {
		if excess.IsEmpty() {
			return
		}
		var held resources.Resources
		for _, r := range a.revAlloc.byRole(fid) {
			held = held.Add(r)
		}
		part := intersect(held.Subtract(a.rescinding[fid]), excess)
		if part.IsEmpty() {
			continue
		}
		a.rescinding[fid] = a.rescinding[fid].Add(part)
		excess = excess.Subtract(part)
		rn.res.rescinds = append(rn.res.rescinds, request{framework: fid, agent: a.id, res: part})
	}
}

func sameVec(a, b qv) bool { return a.leq(b) && b.leq(a) }
