package allocator

import (
	"math"

	"sort"
	"strings"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// quotaRun holds the quota bookkeeping of one allocation run.
//
// Consumption of a role's quota is, as in Mesos 1.9+, every reservation
// to a role of its subtree (allocated or not) plus the unreserved
// resources allocated to its subtree. Resources reserved to an ancestor
// and allocated to the subtree count for the ancestor, not here. Guarantees are served
// first (quotaStage); the fair stage then keeps enough unreserved
// resources free across the cluster ("headroom") for the guarantees still
// unsatisfied, and never lets a role's consumption pass its limit.
type quotaRun struct {
	c         *core
	guar      map[string]qv // by quota role
	limit     map[string]qv // cap vectors (MaxInt64 = unlimited)
	resvAll   map[string]qv // reservations (allocated or not) by reservation role
	resvAlloc map[string]qv // reserved part of allocations by allocation role
	top       map[string]string
	deficit   map[string]qv // for top-level quota roles
	avail     qv            // unreserved free on active agents
	required  qv            // sum of top-level deficits
	sorter    *drfNode      // roles with unsatisfied guarantees, DRF order
	nodes     map[string]*drfNode
}

func (c *core) newQuotaRun(agents []*agent) *quotaRun {
	qr := &quotaRun{
		c:         c,
		guar:      map[string]qv{},
		limit:     map[string]qv{},
		resvAll:   map[string]qv{},
		resvAlloc: map[string]qv{},
		top:       map[string]string{},
		deficit:   map[string]qv{},
		sorter:    &drfNode{weight: 1, sortedKids: true},
		nodes:     map[string]*drfNode{},
	}
	for rn, q := range c.quotas {
		if len(q.Guarantees) > 0 {
			qr.guar[rn] = c.names.vecOfMap(q.Guarantees)
		}
		if len(q.Limits) > 0 {
			l := c.infCap()
			for name, x := range q.Limits {
				i := c.names.index(name)
				l = l.grow(i + 1)
				l[i] = toMilli(x)
			}
			qr.limit[rn] = l
		}
	}
	for _, a := range agents {
		if a.active {
			qr.avail = qr.avail.add(a.freeUnresQ)
		}
	}
	// Reservations count wherever they are: on every agent, candidate of
	// this run or not, active or not (reserved agents are few).
	for a := range c.resvAgents {
		for rr, q := range a.resvQ {
			qr.resvAll[rr] = qr.resvAll[rr].add(q)
		}
		for i := range a.alloc {
			x := &a.alloc[i]
			var rq qv
			if x.q != nil {
				rq = x.q.clone().sub(x.uq)
			} else {
				rq = c.names.vecOf(x.res).sub(c.names.vecOf(x.res.Unreserved()))
			}
			if rq.positive() {
				qr.resvAlloc[x.role] = qr.resvAlloc[x.role].add(rq)
			}
		}
		// The tree counts shared resources (reserved, as every volume)
		// once per role and agent; entries' quantities leave them out.
		var roleShared map[string]resources.Resources
		for i := range a.alloc {
			x := &a.alloc[i]
			if x.res.HasShared() {
				if roleShared == nil {
					roleShared = map[string]resources.Resources{}
				}
				roleShared[x.role] = roleShared[x.role].Add(x.res.Shared())
			}
		}
		for rn, sh := range roleShared {
			qr.resvAlloc[rn] = qr.resvAlloc[rn].add(c.names.vecOf(sh.Reserved()))
		}
	}
	names := make([]string, 0, len(qr.guar))
	for rn := range qr.guar {
		names = append(names, rn)
	}
	sort.Strings(names)
	for _, rn := range names {
		if t := qr.topQuota(rn); t == rn {
			d := qr.computeDeficit(rn)
			qr.deficit[rn] = d
			qr.required = qr.required.add(d)
		}
		if qr.computeDeficit(rn).positive() {
			cons := qr.consumption(rn)
			n := &drfNode{name: rn, weight: c.weight(rn), alloc: cons, share: dominant(cons, c.totalQ) / c.weight(rn)}
			qr.sorter.insertKid(n)
			qr.nodes[rn] = n
		}
	}
	return qr
}

// reservationRole is the role a (post-refinement) resource is reserved to.
func reservationRole(p *mesos.Resource) string {
	if rs := p.GetReservations(); len(rs) > 0 {
		return rs[len(rs)-1].GetRole()
	}
	return p.GetRole()
}

// ancestorsOrSelf lists rn, its parent, ... up to the top-level role.
func ancestorsOrSelf(rn string) []string {
	out := []string{rn}
	for {
		i := strings.LastIndexByte(rn, '/')
		if i < 0 {
			return out
		}
		rn = rn[:i]
		out = append(out, rn)
	}
}

// topQuota is the outermost role with a guarantee among rn and its
// ancestors ("" if none): headroom counts each subtree once.
func (qr *quotaRun) topQuota(rn string) string {
	if t, ok := qr.top[rn]; ok {
		return t
	}
	t := ""
	for _, x := range ancestorsOrSelf(rn) {
		if _, ok := qr.guar[x]; ok {
			t = x
		}
	}
	qr.top[rn] = t
	return t
}

// consumption is what counts against rn's quota: the subtree's
// allocations without their reserved parts, plus every reservation to a
// role of the subtree.
func (qr *quotaRun) consumption(rn string) qv {
	var v qv
	if n := qr.c.tree[rn]; n != nil {
		v = n.alloc.clone()
	}
	for x, q := range qr.resvAlloc {
		if inSubtree(x, rn) {
			v = v.sub(q)
		}
	}
	for rr, q := range qr.resvAll {
		if inSubtree(rr, rn) {
			v = v.add(q)
		}
	}
	return v
}

// inSubtree reports whether role x is rn or one of its descendants.
func inSubtree(x, rn string) bool {
	return x == rn || strings.HasPrefix(x, rn+"/")
}

func (qr *quotaRun) computeDeficit(rn string) qv {
	g := qr.guar[rn]
	if g == nil {
		return nil
	}
	return g.clone().sub(qr.consumption(rn)).clampZero()
}

// allocated updates the bookkeeping after role rn was allocated q, of
// which uq unreserved (reserved parts were already counted as consumed:
// the tree grows by q, and resvAlloc by the reserved part, so the
// consumption grows by uq only).
func (qr *quotaRun) allocated(rn string, q, uq qv) {
	qr.avail = qr.avail.sub(uq)
	if rq := q.clone().sub(uq); rq.positive() {
		qr.resvAlloc[rn] = qr.resvAlloc[rn].add(rq)
	}
	if t := qr.topQuota(rn); t != "" {
		before := qr.deficit[t]
		after := qr.computeDeficit(t)
		qr.required = qr.required.sub(before).add(after)
		qr.deficit[t] = after
	}
	for _, x := range ancestorsOrSelf(rn) {
		n := qr.nodes[x]
		if n == nil {
			continue
		}
		if !qr.computeDeficit(x).positive() {
			qr.sorter.removeKid(n)
			delete(qr.nodes, x)
			continue
		}
		n.change(uq, +1, qr.c.totalQ)
	}
}

// limitRoom is how much more unreserved resource role rn may consume
// under its own and its ancestors' limits (nil: no limit applies).
func (qr *quotaRun) limitRoom(rn string) qv {
	var room qv
	for _, x := range ancestorsOrSelf(rn) {
		l := qr.limit[x]
		if l == nil {
			continue
		}
		r := l.clone()
		cons := qr.consumption(x)
		for i := range r {
			if r[i] != math.MaxInt64 {
				r[i] -= cons.at(i)
				if r[i] < 0 {
					r[i] = 0
				}
			}
		}
		if room == nil {
			room = r
		} else {
			room = room.min(r)
		}
	}
	return room
}

// surplus is the unreserved free quantity beyond what unsatisfied
// guarantees need, for names some guarantee still needs (others unlimited).
func (qr *quotaRun) surplus() qv {
	if !qr.required.positive() {
		return nil
	}
	s := qr.c.infCap()
	for i, need := range qr.required {
		if need > 0 {
			s = s.grow(i + 1)
			s[i] = qr.avail.at(i) - need
			if s[i] < 0 {
				s[i] = 0
			}
		}
	}
	return s
}

// fairCap bounds what role rn may take in the fair stage: its limit room,
// and the headroom surplus plus its own share of the headroom.
func (qr *quotaRun) fairCap(rn string) qv {
	room := qr.limitRoom(rn)
	sur := qr.surplus()
	if sur != nil {
		if t := qr.topQuota(rn); t != "" {
			d := qr.deficit[t]
			for i := range sur {
				if sur[i] != math.MaxInt64 {
					sur[i] += d.at(i)
				}
			}
		}
	}
	switch {
	case room == nil:
		return sur
	case sur == nil:
		return room
	}
	return capMin(room, sur)
}

// capMin is the componentwise minimum of two cap vectors (missing
// components are unlimited).
func capMin(a, b qv) qv {
	n := len(a)
	if len(b) > n {
		n = len(b)
	}
	out := make(qv, n)
	for i := range out {
		x, y := int64(math.MaxInt64), int64(math.MaxInt64)
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		out[i] = min(x, y)
	}
	return out
}

// guaranteeCap bounds what role rn takes in the quota stage: its deficit
// for guaranteed names; for other names, the headroom surplus; and always
// its limit room.
func (qr *quotaRun) guaranteeCap(rn string) qv {
	d := qr.computeDeficit(rn)
	g := qr.guar[rn]
	sur := qr.surplus()
	cp := qr.c.infCap()
	for i := range cp {
		switch {
		case g.at(i) > 0:
			cp[i] = d.at(i)
		case sur != nil && i < len(sur):
			cp[i] = sur[i]
		}
	}
	if room := qr.limitRoom(rn); room != nil {
		cp = capMin(cp, room)
	}
	return cp
}

// quotaStage offers agents to roles whose guarantees are not yet met,
// neediest (lowest share) first, up to the guarantee.
func (rn *run) quotaStage(agents []*agent) {
	c := rn.c
	qr := rn.quota
	var snap []*drfNode
	for _, a := range agents {
		if len(qr.sorter.kids) == 0 {
			return
		}
		if !a.active || !a.freeQ.positive() {
			continue
		}
		snap = append(snap[:0], qr.sorter.kids...)
		for _, qn := range snap {
			if qn.parent == nil {
				continue // satisfied meanwhile
			}
			r := c.roles[qn.name]
			if r == nil || r.live == 0 {
				continue
			}
			res, q, uq, whole := c.allocatable(a, r.name, rn.qbuf)
			rn.qbuf = q
			if !q.positive() {
				continue
			}
			res, q, uq, whole = c.chop(res, q, uq, qr.guaranteeCap(r.name), whole)
			// Shared resources go with the guarantees to frameworks that
			// may have them (as Mesos's first stage), once per run.
			sh := c.sharedFor(rn.sharedLeft(a), r.name, q)
			minOK := c.minAllocatableOK(q)
			if c.skipBelowMin(minOK) && c.skipBelowMin(sh.minOK) {
				continue
			}
			it := rn.frameworks(r.fws)
			for n := it.next(); n != nil; n = it.next() {
				ores, oq, ominOK, withShared := sh.pick(n, res, q, minOK)
				if !offerable(n, a) || !admits(n, a, oq, ominOK) || filtered(n, a, oq, rn.now) {
					continue
				}
				rn.give(a, n, r.name, ores, q, uq, whole)
				if withShared {
					rn.offeredShared(a, sh.res)
				}
				break
			}
			if !a.freeQ.positive() {
				break
			}
		}
	}
}
