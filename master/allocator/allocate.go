package allocator

import (
	"math"
	"sort"
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// runResult is what one allocation run decided: offers by framework ID,
// and the rescind and revoke requests to pass to the master.
type runResult struct {
	offers   map[string]Offers
	rescinds []request
	revokes  []request
}

// request names resources of a framework on an agent (rescind, revoke).
type request struct {
	framework, agent string
	res              resources.Resources
}

// run is the state of one allocation run.
type run struct {
	c       *core
	now     time.Time
	res     runResult
	qbuf    qv
	recs    []offerRec
	order   []*drfNode // cached role order (DRF), valid until dirty
	dirty   bool
	quota   *quotaRun // nil without quotas
	scratch []*drfNode
}

// allocate performs one allocation run at now: quota guarantees first,
// then weighted DRF over roles and, within each role, over frameworks,
// then the revocable stage.
func (c *core) allocate(now time.Time) runResult {
	c.runSeq++
	rn := &run{
		c:     c,
		now:   now,
		res:   runResult{offers: map[string]Offers{}},
		dirty: true,
	}
	if c.totalDirty {
		c.tree[""].resort(c.totalQ)
		for _, r := range c.roles {
			r.fws.resort(c.totalQ)
		}
		c.totalDirty = false
	}
	// Only agents that may have something to offer; in random order as
	// Mesos does (so no agent is always first), or in the order they were
	// added when shuffling is off (tests).
	agents := append(c.agentBuf[:0], c.cands...)
	if c.shuffle {
		c.rng.Shuffle(len(agents), func(i, j int) { agents[i], agents[j] = agents[j], agents[i] })
	} else {
		sort.Slice(agents, func(i, j int) bool { return agents[i].seq < agents[j].seq })
	}
	c.agentBuf = agents
	if len(c.quotas) > 0 {
		rn.quota = c.newQuotaRun(agents)
		rn.quotaStage(agents)
	}
	rn.fairStage(agents)
	if rn.quota != nil && c.revoke {
		rn.revocationStage()
	}
	rn.revocableStage(agents)
	rn.buildOffers()
	return rn.res
}

// allocatable is what agent a can offer role r: everything free when the
// agent has no reservations, else the unreserved part plus what is reserved
// to r or its ancestors.
//
// buf, if not nil, is scratch space for the returned vectors; they are
// copies either way (they must survive the agent's free vector shrinking
// when it is allocated).
func (c *core) allocatable(a *agent, r string, buf qv) (res resources.Resources, q, uq qv, whole bool) {
	if !a.reserved {
		q = append(buf[:0], a.freeQ...)
		return a.free, q, q, true
	}
	res = a.free.AllocatableTo(r)
	q = c.names.vecOf(res)
	uq = c.names.vecOf(res.Unreserved())
	return res, q, uq, res.Len() == a.free.Len() && q.leq(a.freeQ) && a.freeQ.leq(q)
}

// minAllocatable reports whether q holds at least one of the minimum
// allocatable quantity sets (--min_allocatable_resources).
func (c *core) minAllocatableOK(q qv) bool {
	if len(c.minAllocatable) == 0 {
		return q.positive()
	}
	for _, m := range c.minAllocatable {
		if m.leq(q) {
			return true
		}
	}
	return false
}

// eligible reports whether framework f may be offered anything for role
// rn on agent a (ignoring filters, which depend on the quantities).
func eligible(f *framework, rn string, a *agent) bool {
	if !f.known || !f.active || !f.roleSet[rn] || f.suppressed[rn] {
		return false
	}
	// Agents with GPUs are kept for GPU-aware frameworks (Mesos's
	// --filter_gpu_resources default).
	return !a.gpu || f.gpu
}

// offerable is eligible for the framework of sorter node n, without map
// lookups (the hot loop).
func offerable(n *drfNode, a *agent) bool {
	return n.offerable && (!a.gpu || n.fw.gpu)
}

// roleOrder returns role leaves in offer order for the configured policy.
func (rn *run) roleOrder() []*drfNode {
	c := rn.c
	switch c.order {
	case orderLottery:
		return c.lotteryOrder(rn.scratch[:0])
	case orderPriority:
		if rn.dirty {
			rn.order = c.priorityOrder(rn.order[:0])
			rn.dirty = false
		}
		return rn.order
	}
	if rn.dirty {
		rn.order = c.tree[""].leaves(rn.order[:0])
		rn.dirty = false
	}
	return rn.order
}

// frameworkOrder returns the frameworks of role r in offer order.
func (rn *run) frameworkOrder(kids []*drfNode) []*drfNode {
	if rn.c.order != orderLottery || len(kids) < 2 {
		return kids
	}
	out := append(rn.scratch[:0:0], kids...)
	rn.c.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// give records an allocation and adds it to the framework's offers.
func (rn *run) give(a *agent, n *drfNode, role string, res resources.Resources, q, uq qv, whole bool) {
	f := n.fw
	rn.c.track(a, f, role, n, res, q, uq, whole)
	rn.addOffer(a, f, role, res)
	rn.dirty = true
	if rn.quota != nil {
		rn.quota.allocated(role, uq)
	}
}

// addOffer records an offer; the Offers maps are built once at the end
// of the run (buildOffers), sized, rather than grown per offer.
func (rn *run) addOffer(a *agent, f *framework, role string, res resources.Resources) {
	rn.recs = append(rn.recs, offerRec{f, role, a, res})
	if f.offeredRun != rn.c.runSeq {
		f.offeredRun = rn.c.runSeq
		f.runOffers = 0
	}
	f.runOffers++
	f.lastOffer = rn.now
}

type offerRec struct {
	f    *framework
	role string
	a    *agent
	res  resources.Resources
}

func (rn *run) buildOffers() {
	for _, o := range rn.recs {
		byRole := rn.res.offers[o.f.id]
		if byRole == nil {
			byRole = make(Offers, 1)
			rn.res.offers[o.f.id] = byRole
		}
		byAgent := byRole[o.role]
		if byAgent == nil {
			byAgent = make(map[string]resources.Resources, o.f.runOffers)
			byRole[o.role] = byAgent
		}
		if old, ok := byAgent[o.a.id]; ok {
			byAgent[o.a.id] = old.Add(o.res)
		} else {
			byAgent[o.a.id] = o.res
		}
	}
}

// fairStage offers each agent's free resources to roles in weighted DRF
// order and, within a role, to its frameworks in DRF order; the first
// eligible framework that has not filtered them takes all the role may
// have.
func (rn *run) fairStage(agents []*agent) {
	c := rn.c
	for _, a := range agents {
		if !a.active || !a.freeQ.positive() {
			continue
		}
		for _, leaf := range rn.roleOrder() {
			r := leaf.role
			if r.live == 0 {
				continue
			}
			res, q, uq, whole := c.allocatable(a, r.name, rn.qbuf)
			rn.qbuf = q
			if !q.positive() {
				continue
			}
			if rn.quota != nil {
				cp := rn.quota.fairCap(r.name)
				if cp != nil {
					res, q, uq, whole = c.chop(res, q, uq, cp, whole)
				}
			}
			if !c.minAllocatableOK(q) {
				continue
			}
			for _, n := range rn.frameworkOrder(r.fws.kids) {
				if !offerable(n, a) || filtered(n, a, q, rn.now) {
					continue
				}
				rn.give(a, n, r.name, res, q, uq, whole)
				break
			}
			if !a.freeQ.positive() {
				break
			}
		}
	}
}

// chop limits the unreserved scalar part of res to cp (per name; a
// component of math.MaxInt64 is no limit). Reserved and non-scalar
// resources are kept whole.
func (c *core) chop(res resources.Resources, q, uq, cp qv, whole bool) (resources.Resources, qv, qv, bool) {
	if uq.leq(cp) {
		return res, q, uq, whole
	}
	budget := cp.clone()
	var keep []*mesos.Resource
	for _, p := range res.Proto() {
		if p.GetType() != mesos.Value_SCALAR || isReserved(p) {
			keep = append(keep, p)
			continue
		}
		i := c.names.index(p.GetName())
		b := budget.at(i)
		v := toMilli(p.GetScalar().GetValue())
		if b <= 0 {
			continue
		}
		if v > b {
			v = b
			p.Scalar.Value = ptrFloat(fromMilli(v))
		}
		if i < len(budget) {
			budget[i] -= v
		}
		keep = append(keep, p)
	}
	out, err := resources.New(keep...)
	if err != nil {
		return resources.Resources{}, nil, nil, false
	}
	var nq, nuq qv
	nq = c.names.vecOf(out)
	nuq = c.names.vecOf(out.Unreserved())
	return out, nq, nuq, false
}

func ptrFloat(f float64) *float64 { return &f }

func isReserved(p *mesos.Resource) bool {
	if len(p.GetReservations()) > 0 || p.GetReservation() != nil {
		return true
	}
	return p.GetRole() != "" && p.GetRole() != "*"
}

// infCap is a cap vector with no limit on any known name.
func (c *core) infCap() qv {
	v := make(qv, len(c.names.list))
	for i := range v {
		v[i] = math.MaxInt64
	}
	return v
}

// priorityOrder: roles by weight, heaviest first, then by name; strict
// priority means a lighter role is offered only what heavier ones left.
func (c *core) priorityOrder(out []*drfNode) []*drfNode {
	for _, r := range c.roles {
		out = append(out, r.leaf)
	}
	sort.Slice(out, func(i, j int) bool {
		wi, wj := c.weight(out[i].role.name), c.weight(out[j].role.name)
		if wi != wj {
			return wi > wj
		}
		return out[i].role.name < out[j].role.name
	})
	return out
}

// lotteryOrder draws roles without replacement with probability
// proportional to their weight (tickets), as in lottery scheduling.
func (c *core) lotteryOrder(out []*drfNode) []*drfNode {
	type ticket struct {
		n   *drfNode
		key float64
	}
	ts := make([]ticket, 0, len(c.roles))
	for _, r := range c.roles {
		// Efraimidis–Spirakis: sorting by u^(1/w) descending samples a
		// weighted permutation.
		u := c.rng.Float64()
		ts = append(ts, ticket{r.leaf, math.Pow(u, 1/c.weight(r.name))})
	}
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].key != ts[j].key {
			return ts[i].key > ts[j].key
		}
		return ts[i].n.name < ts[j].n.name
	})
	for _, t := range ts {
		out = append(out, t.n)
	}
	return out
}
