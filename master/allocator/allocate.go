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
	// inverse are the run's inverse offers (maintenance.go), by
	// framework then agent.
	inverse map[string]map[string]*mesos.Unavailability
}

// request names resources of a framework on an agent (rescind, revoke).
type request struct {
	framework, agent string
	res              resources.Resources
}

// run is the state of one allocation run.
type run struct {
	c     *core
	now   time.Time
	res   runResult
	qbuf  qv
	recs  []offerRec   // offers made, in order
	fws   []*framework // frameworks offered to, by runSlot
	order []*drfNode   // cached role order: strict priority (valid until dirty), DRF (if drfOrderOK)
	// DRF: order holds the role order (a complete walk of the tree) and
	// no allocation was made since.
	drfOrderOK bool
	sink       uint64 // see touch
	gives      int    // allocations made in this run
	dirty      bool
	quota      *quotaRun // nil without quotas
	scratch    []*drfNode
	fwIt       kidIter // framework iteration (one at a time)
	roleIt     roleIter
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
		recs:  c.recBuf[:0],
		fws:   c.fwBuf[:0],
	}
	if len(c.pendingRescinds) > 0 {
		rn.res.rescinds = append(rn.res.rescinds, c.pendingRescinds...)
		c.pendingRescinds = nil
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
	agents := c.candidates(c.agentBuf[:0], c.runAgents())
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
	rn.res.inverse = c.inverseOffers(now)
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
func (c *core) minAllocatableOK(q qv) bool { return minQuantitiesOK(c.minAllocatable, q) }

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

// roleOrder returns role leaves in offer order for the policies other
// than DRF (which walks the role tree instead, see roles).
func (rn *run) roleOrder() []*drfNode {
	c := rn.c
	if c.order == orderLottery {
		return c.lotteryOrder(rn.scratch[:0])
	}
	if rn.dirty {
		rn.order = c.priorityOrder(rn.order[:0])
		rn.dirty = false
	}
	return rn.order
}

// frameworks starts an iteration over the frameworks of a role's sorter
// (its regular or revocable one) in offer order: DRF order, read lazily
// (usually only the first few are looked at), or for the lottery a
// random permutation of it.
func (rn *run) frameworks(sorter *drfNode) *kidIter {
	it := &rn.fwIt
	if rn.c.order != orderLottery || len(sorter.kids) < 2 {
		it.start(sorter)
		return it
	}
	out := sorter.ordered(it.sorted[:0])
	rn.c.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	it.sorted = out
	it.startList(out)
	return it
}

// give records an allocation and adds it to the framework's offers.
func (rn *run) give(a *agent, n *drfNode, role string, res resources.Resources, q, uq qv, whole bool) {
	f := n.fw
	var leafBefore qv
	if rn.quota != nil && res.HasShared() {
		leafBefore = n.owner.leaf.alloc.clone()
	}
	rn.c.track(a, f, role, n, res, q, uq, whole)
	if leafBefore != nil {
		// The role's leaf grew by q plus what its share counts of the
		// shared resources (reserved, as every volume): count that as an
		// allocated reservation, which consumes no more quota.
		q = n.owner.leaf.alloc.clone().sub(leafBefore)
	}
	rn.addOffer(a, f, role, res)
	rn.dirty = true
	rn.gives++
	rn.drfOrderOK = false
	if rn.quota != nil {
		rn.quota.allocated(role, q, uq)
	}
}

// addOffer records an offer; the Offers maps are built once at the end
// of the run (buildOffers), sized, rather than grown per offer.
func (rn *run) addOffer(a *agent, f *framework, role string, res resources.Resources) {
	rn.recs = append(rn.recs, offerRec{f, role, a.id, res})
	if f.offeredRun != rn.c.runSeq {
		f.offeredRun = rn.c.runSeq
		f.runOffers = 0
		f.runSlot = len(rn.fws)
		rn.fws = append(rn.fws, f)
	}
	f.runOffers++
	f.lastOffer = rn.now
}

// offerRec is one offer of a run. It holds the agent's ID rather than the
// agent: buildOffers then needs no second visit to agents scattered in
// memory.
type offerRec struct {
	f     *framework
	role  string
	agent string
	res   resources.Resources
}

// buildOffers turns the run's offer records into the Offers maps, one
// framework at a time: the records are first grouped by framework (a
// counting sort on the run's framework slots), so each framework's maps
// are filled while they are in cache rather than touched once per offer
// all over the heap.
func (rn *run) buildOffers() {
	c := rn.c
	defer func() {
		// Keep the buffers for the next run, without what they point to.
		clear(rn.recs)
		c.recBuf = rn.recs[:0]
		clear(rn.fws)
		c.fwBuf = rn.fws[:0]
	}()
	if len(rn.recs) == 0 {
		return
	}
	rn.res.offers = make(map[string]Offers, len(rn.fws))
	offs := c.offBuf[:0]
	pos := 0
	for _, f := range rn.fws {
		offs = append(offs, pos)
		pos += f.runOffers
	}
	c.offBuf = offs
	grouped := c.groupBuf
	if cap(grouped) < len(rn.recs) {
		grouped = make([]offerRec, len(rn.recs))
	}
	grouped = grouped[:len(rn.recs)]
	for _, o := range rn.recs {
		i := offs[o.f.runSlot]
		offs[o.f.runSlot]++
		grouped[i] = o
	}
	for start := 0; start < len(grouped); {
		f := grouped[start].f
		end := start + f.runOffers
		byRole := make(Offers, 1)
		for i, o := range grouped[start:end] {
			byAgent := byRole[o.role]
			if byAgent == nil {
				byAgent = make(map[string]resources.Resources, f.runOffers)
				byRole[o.role] = byAgent
			}
			n := len(byAgent)
			byAgent[o.agent] = o.res
			if len(byAgent) == n {
				// A second offer of the agent to the framework and role in
				// this run (rare: quota then fair stage): sum them all.
				sum := o.res
				for _, p := range grouped[start : start+i] {
					if p.agent == o.agent && p.role == o.role {
						sum = p.res.Add(sum)
					}
				}
				byAgent[o.agent] = sum
			}
		}
		rn.res.offers[f.id] = byRole
		start = end
	}
	clear(grouped)
	c.groupBuf = grouped[:0]
}

// fairStage offers each agent's free resources to roles in weighted DRF
// order and, within a role, to its frameworks in DRF order; the first
// eligible framework that has not filtered them takes all the role may
// have. Frameworks with SHARED_RESOURCES are also offered the agent's
// shared resources not yet offered in this run (shared.go), even while in
// use: an agent with nothing else free is still visited for them.
func (rn *run) fairStage(agents []*agent) {
	c := rn.c
	for _, a := range agents {
		rn.touch(a)
		if !a.active {
			continue
		}
		shared := rn.sharedLeft(a)
		if !a.freeQ.positive() && shared.IsEmpty() {
			continue
		}
		roles := rn.roles()
		for leaf := roles.next(); leaf != nil; leaf = roles.next() {
			r := leaf.role
			if r.live == 0 {
				continue
			}
			res, q, uq, whole := c.allocatable(a, r.name, rn.qbuf)
			rn.qbuf = q
			if q.positive() && rn.quota != nil {
				cp := rn.quota.fairCap(r.name)
				if cp != nil {
					res, q, uq, whole = c.chop(res, q, uq, cp, whole)
				}
			}
			sh := c.sharedFor(shared, r.name, q)
			if !q.positive() && sh.res.IsEmpty() {
				continue
			}
			minOK := c.minAllocatableOK(q)
			if c.skipBelowMin(minOK) && c.skipBelowMin(sh.minOK) {
				continue
			}
			it := rn.frameworks(r.fws)
			for n := it.next(); n != nil; n = it.next() {
				ores, oq, ominOK, withShared := sh.pick(n, res, q, minOK)
				if !oq.positive() || !offerable(n, a) || !admits(n, a, oq, ominOK) || filtered(n, a, oq, rn.now) {
					continue
				}
				left := shared
				if withShared {
					left = shared.Subtract(sh.res)
				}
				if (!whole && !exhausts(a, q)) || !left.IsEmpty() {
					// The agent will have more for the roles after this
					// one, which are offered in the order of before the
					// allocation: fix it before the tree changes.
					roles.freeze()
				}
				rn.give(a, n, r.name, ores, q, uq, whole)
				if withShared {
					rn.offeredShared(a, sh.res)
					shared = left
				}
				if withShared || sh.res.IsEmpty() {
					break
				}
				// The framework may not have the role's shared resources:
				// as in Mesos, the role's other frameworks may still be
				// offered them alone (if that is allocatable to them).
				// The sorter changed: start its reading again (the
				// framework just served now has nothing to take).
				res, q, uq, whole = resources.Resources{}, nil, nil, false
				minOK = c.minAllocatableOK(nil)
				sh = c.sharedFor(shared, r.name, nil)
				if c.skipBelowMin(sh.minOK) {
					break
				}
				it = rn.frameworks(r.fws)
			}
			if !a.freeQ.positive() && shared.IsEmpty() {
				break
			}
		}
	}
}

// touch reads one word from each cache line of a's fields that an
// allocation uses. Agents are visited in random order, so each visit
// misses the cache on every line it touches; reading them back to back
// makes the misses overlap (independent loads in flight together) instead
// of paying them one after the other as the code reaches each field.
func (rn *run) touch(a *agent) {
	rn.sink += uint64(len(a.alloc)) + a.filterMask + uint64(len(a.id)) +
		uint64(len(a.allocBuf[0].fw)) + uint64(a.allocVec[1][3])
}

// exhausts reports whether allocating q leaves nothing free on a.
func exhausts(a *agent, q qv) bool {
	for i, x := range a.freeQ {
		if x-q.at(i) > 0 {
			return false
		}
	}
	return true
}

// roles starts an iteration over role leaves in offer order for one
// agent. Under DRF it walks the role tree lazily (depth first, children
// in order), so an agent taken by the first role costs O(depth), not a
// list of every role; the other policies list all roles.
//
// A walk that reaches the end is kept (run.order) and reused as a list
// until the next allocation changes the tree: agents nobody takes (all
// filtered or suppressed) then cost no walk at all.
func (rn *run) roles() *roleIter {
	it := &rn.roleIt
	it.stack = it.stack[:0]
	it.list, it.pos = nil, 0
	if rn.c.order != orderDRF {
		it.list = rn.roleOrder()
		return it
	}
	if rn.drfOrderOK {
		it.list = rn.order
		if it.list == nil {
			it.list = []*drfNode{}
		}
		return it
	}
	it.rn, it.gives = rn, rn.gives
	// seen's storage may be run.order's: no longer valid (drfOrderOK is
	// false), and not being read (this walk replaces it).
	it.seen = it.seen[:0]
	it.stack = append(it.stack, roleFrame{rn.c.tree[""], 0})
	return it
}

// roleIter yields role leaves: from list if set, else by walking the
// tree (whose sorted children must not change while walking; see freeze).
type roleIter struct {
	list  []*drfNode
	pos   int
	stack []roleFrame
	buf   []*drfNode

	// A walk records what it yielded (seen); if it reaches the end with
	// no allocation made meanwhile, that is the run's role order until
	// the next allocation.
	rn    *run
	gives int
	seen  []*drfNode
}

type roleFrame struct {
	n *drfNode
	i int
}

func (it *roleIter) next() *drfNode {
	if it.list != nil {
		if it.pos >= len(it.list) {
			return nil
		}
		it.pos++
		return it.list[it.pos-1]
	}
	for len(it.stack) > 0 {
		top := &it.stack[len(it.stack)-1]
		if top.i >= len(top.n.kids) {
			it.stack = it.stack[:len(it.stack)-1]
			continue
		}
		k := top.n.kids[top.i]
		top.i++
		if len(k.kids) == 0 {
			if k.role != nil || k.fw != nil {
				it.seen = append(it.seen, k)
				return k
			}
			continue
		}
		it.stack = append(it.stack, roleFrame{k, 0})
	}
	if rn := it.rn; rn != nil {
		if rn.gives == it.gives {
			rn.order, rn.drfOrderOK = it.seen, true
		}
		it.rn = nil
	}
	return nil
}

// freeze lists the leaves still to come, so the iteration goes on in the
// current order after the tree changes.
func (it *roleIter) freeze() {
	if it.list != nil {
		return
	}
	it.rn = nil // the walk's end is no longer a plain walk's
	rest := it.buf[:0]
	for l := it.next(); l != nil; l = it.next() {
		rest = append(rest, l)
	}
	it.buf = rest
	it.list, it.pos = rest, 0
	if rest == nil {
		it.list = []*drfNode{}
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
