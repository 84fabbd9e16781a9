package allocator

import (
	"math/rand"
	"sort"
	"strings"
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// core is the allocator's state and policy as plain synchronous code: the
// driver (driver.go) owns one and calls its methods from its goroutine;
// tests call them directly with an explicit now. Nothing here starts
// goroutines, reads the clock or invokes callbacks: allocate returns what
// to send.
type core struct {
	names *nameTable

	agents     map[string]*agent
	agentList  []*agent // insertion order
	cands      []*agent // agents that may have something to offer (see refreshCand)
	agentSeq   uint64
	frameworks map[string]*framework
	roles      map[string]*role

	tree    map[string]*drfNode // role tree internal nodes by path; "" is the root
	revRoot *drfNode            // revocable stage: flat sorter of roles

	totalQ     qv   // sum of all agents' non-revocable totals
	revTotalQ  qv   // sum of revocable totals at the last run
	totalDirty bool // shares must be recomputed before the next run

	weights map[string]float64
	quotas  map[string]Quota

	minAllocatable []qv
	interval       time.Duration

	order     orderPolicy
	shuffle   bool
	rng       *rand.Rand
	revoke    bool // revocation policy (Options.Revoke set)
	idleResvd bool // offer idle reservations as revocable

	agentBuf []*agent // reused per run

	revokingQ qv // sum of all agents' pending revocations

	metrics runMetrics
	runSeq  uint64 // allocation runs started
}

type orderPolicy int

const (
	orderDRF      orderPolicy = iota // weighted DRF (HierarchicalDRF)
	orderPriority                    // strict priority by weight
	orderLottery                     // random, weight-proportional tickets
)

// agent is one agent's resources as the allocator sees them.
type agent struct {
	id       string
	seq      uint64 // insertion order
	candIdx  int    // index in core.cands, -1 if absent
	removed  bool
	info     *mesos.AgentInfo
	active   bool
	total    resources.Resources // non-revocable
	totalQ   qv
	reserved bool // total holds reserved resources (slow path)
	gpu      bool

	free       resources.Resources // total minus allocated (non-revocable)
	freeQ      qv
	freeUnresQ qv // unreserved part of freeQ

	// alloc holds non-revocable allocations (offered or in use), by
	// framework ID and role, without allocation info.
	alloc allocSet

	oversub    resources.Resources // revocable estimate (UpdateOversubscribed)
	revTotal   resources.Resources // oversub plus idle reservations, computed per run
	revAlloc   allocSet
	revAllocd  resources.Resources // sum of revAlloc
	rescinding map[string]resources.Resources
	revoking   map[string]qv // revocations asked of frameworks here, until they give back
}

// framework is one framework as the allocator sees it. A placeholder (known
// false) stands for a framework that appears in an agent's used resources
// before the master added it.
type framework struct {
	id         string
	info       *mesos.FrameworkInfo
	known      bool
	active     bool
	roles      []string
	roleSet    map[string]bool
	suppressed map[string]bool
	revocable  bool
	gpu        bool

	nodes    map[string]*drfNode // this framework in each role's sorter
	revNodes map[string]*drfNode // and in each role's revocable sorter
	nalloc   int                 // allocation entries it holds on agents

	lastOffer  time.Time // last time it was offered anything (explanations)
	offeredRun uint64    // the run that last offered it anything
	runOffers  int       // offers in that run
}

// role is one role that has frameworks, allocations or quota.
type role struct {
	name    string
	leaf    *drfNode // self leaf in the role tree
	fws     *drfNode // framework sorter root
	revLeaf *drfNode
	revFws  *drfNode
	nsub    int // subscribed frameworks
	live    int // framework nodes that are offerable
	revLive int // revocable framework nodes that are offerable
}

// offerFilter keeps resources from being offered to a framework on an agent
// for a role until expiry, as long as what would be offered is no more than
// what was refused.
type offerFilter struct {
	until   time.Time
	refused qv
}

func newCore(opts Options) *core {
	c := &core{
		names:      newNameTable(),
		agents:     map[string]*agent{},
		frameworks: map[string]*framework{},
		roles:      map[string]*role{},
		tree:       map[string]*drfNode{"": {name: "", weight: 1}},
		revRoot:    &drfNode{name: "", weight: 1},
		weights:    map[string]float64{},
		quotas:     map[string]Quota{},
		interval:   opts.Interval,
		rng:        rand.New(rand.NewSource(1)),
	}
	if c.interval <= 0 {
		c.interval = time.Second
	}
	for r, w := range opts.Weights {
		c.weights[r] = w
	}
	min := opts.MinAllocatable
	if min == nil {
		min = DefaultMinAllocatable
	}
	for _, m := range min {
		c.minAllocatable = append(c.minAllocatable, c.names.vecOfMap(m))
	}
	c.revoke = opts.Revoke != nil
	c.idleResvd = opts.OfferIdleReservations
	return c
}

func (c *core) weight(r string) float64 {
	if w, ok := c.weights[r]; ok && w > 0 {
		return w
	}
	return 1
}

// frameworkRoles is the set of roles a framework subscribes to: roles for
// MULTI_ROLE frameworks, otherwise role (default "*").
func frameworkRoles(info *mesos.FrameworkInfo) []string {
	multi := false
	for _, c := range info.GetCapabilities() {
		if c.GetType() == mesos.FrameworkInfo_Capability_MULTI_ROLE {
			multi = true
		}
	}
	var rs []string
	if multi {
		rs = append(rs, info.GetRoles()...)
	} else {
		rs = []string{info.GetRole()}
		if rs[0] == "" {
			rs[0] = "*"
		}
	}
	sort.Strings(rs)
	out := rs[:0]
	for i, r := range rs {
		if r != "" && (i == 0 || r != rs[i-1]) {
			out = append(out, r)
		}
	}
	return out
}

func hasCapability(info *mesos.FrameworkInfo, t mesos.FrameworkInfo_Capability_Type) bool {
	for _, c := range info.GetCapabilities() {
		if c.GetType() == t {
			return true
		}
	}
	return false
}

// --- roles and the role tree ---

// roleFor returns the role, creating it (and its path in the tree).
func (c *core) roleFor(name string) *role {
	if r := c.roles[name]; r != nil {
		return r
	}
	w := c.weight(name)
	r := &role{name: name}
	r.leaf = &drfNode{name: name + "/.", weight: w, role: r}
	r.fws = &drfNode{name: name, weight: 1}
	r.revLeaf = &drfNode{name: name, weight: w, role: r}
	r.revFws = &drfNode{name: name, weight: 1}
	c.treeNode(name).insertKid(r.leaf)
	c.revRoot.insertKid(r.revLeaf)
	c.roles[name] = r
	return r
}

// treeNode returns the internal node of a role path, creating ancestors.
func (c *core) treeNode(path string) *drfNode {
	if n := c.tree[path]; n != nil {
		return n
	}
	parent := ""
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		parent = path[:i]
	}
	p := c.treeNode(parent)
	n := &drfNode{name: path, weight: c.weight(path)}
	p.insertKid(n)
	c.tree[path] = n
	return n
}

// maybeDropRole forgets a role with no frameworks, allocations or quota.
func (c *core) maybeDropRole(r *role) {
	if r.nsub > 0 || len(r.fws.kids) > 0 || len(r.revFws.kids) > 0 || r.leaf.alloc.positive() || r.revLeaf.alloc.positive() {
		return
	}
	if _, ok := c.quotas[r.name]; ok {
		return
	}
	c.revRoot.removeKid(r.revLeaf)
	n := r.leaf.parent
	n.removeKid(r.leaf)
	for n != nil && n.name != "" && len(n.kids) == 0 {
		p := n.parent
		p.removeKid(n)
		delete(c.tree, n.name)
		n = p
	}
	delete(c.roles, r.name)
}

// fwNode returns f's node in role r's framework sorter, creating it.
func (c *core) fwNode(f *framework, r *role) *drfNode {
	if n := f.nodes[r.name]; n != nil {
		return n
	}
	n := &drfNode{name: f.id, weight: 1, fw: f, owner: r}
	r.fws.insertKid(n)
	f.nodes[r.name] = n
	setOfferable(f, n, r.name, &r.live)
	return n
}

func (c *core) fwRevNode(f *framework, r *role) *drfNode {
	if n := f.revNodes[r.name]; n != nil {
		return n
	}
	n := &drfNode{name: f.id, weight: 1, fw: f, owner: r}
	r.revFws.insertKid(n)
	f.revNodes[r.name] = n
	setOfferable(f, n, r.name, &r.revLive)
	return n
}

// maybeDropFwNode removes f from r's sorters when it neither subscribes to
// r nor holds anything there.
func (c *core) maybeDropFwNode(f *framework, r *role) {
	if f.roleSet[r.name] && f.known {
		return
	}
	if n := f.nodes[r.name]; n != nil && !n.alloc.positive() {
		if n.offerable {
			r.live--
		}
		r.fws.removeKid(n)
		delete(f.nodes, r.name)
	}
	if n := f.revNodes[r.name]; n != nil && !n.alloc.positive() {
		if n.offerable {
			r.revLive--
		}
		r.revFws.removeKid(n)
		delete(f.revNodes, r.name)
	}
	c.maybeDropRole(r)
}

// setOfferable recomputes whether framework node n (in role rn's regular
// or revocable sorter, with live counting the offerable nodes) may be
// offered to.
func setOfferable(f *framework, n *drfNode, rn string, live *int) {
	v := f.known && f.active && f.roleSet[rn] && !f.suppressed[rn]
	if v != n.offerable {
		if v {
			*live++
		} else {
			*live--
		}
		n.offerable = v
	}
}

// refreshOfferable recomputes the offerable flags of f's sorter nodes.
func refreshOfferable(f *framework) {
	for rn, n := range f.nodes {
		setOfferable(f, n, rn, &n.owner.live)
	}
	for rn, n := range f.revNodes {
		setOfferable(f, n, rn, &n.owner.revLive)
	}
}

// refreshCand keeps c.cands the set of agents that may have something to
// offer (free resources, or revocable ones to offer or rescind), so runs
// skip the rest without touching them.
func (c *core) refreshCand(a *agent) {
	want := a.freeQ.positive() || !a.oversub.IsEmpty() || !a.revAllocd.IsEmpty() || (c.idleResvd && a.reserved)
	if a.removed {
		want = false
	}
	switch {
	case want && a.candIdx < 0:
		a.candIdx = len(c.cands)
		c.cands = append(c.cands, a)
	case !want && a.candIdx >= 0:
		last := c.cands[len(c.cands)-1]
		c.cands[a.candIdx] = last
		last.candIdx = a.candIdx
		c.cands[len(c.cands)-1] = nil
		c.cands = c.cands[:len(c.cands)-1]
		a.candIdx = -1
	}
}

func (c *core) forgetRevoking(a *agent, fid string) {
	if q, ok := a.revoking[fid]; ok {
		c.revokingQ = c.revokingQ.sub(q).clampZero()
		delete(a.revoking, fid)
	}
}

// --- allocation bookkeeping ---

// track records res (quantities q) as allocated to framework f in role rn
// on agent a: the agent's free pool shrinks, the role tree and the
// framework sorter grow.
// whole says res is all of a.free (saves a subtraction in the hot loop).
// n, if not nil, is f's node in role rn's sorter (saves lookups).
func (c *core) track(a *agent, f *framework, rn string, n *drfNode, res resources.Resources, q qv, unresQ qv, whole bool) {
	if a.alloc.add(f.id, rn, res, q, unresQ) {
		f.nalloc++
	}
	if whole {
		a.free = resources.Resources{}
	} else {
		a.free = a.free.Subtract(res)
	}
	a.freeQ = a.freeQ.sub(q)
	a.freeUnresQ = a.freeUnresQ.sub(unresQ)
	c.refreshCand(a)
	if n == nil {
		n = c.fwNode(f, c.roleFor(rn))
	}
	c.roles[rn].leaf.change(q, +1, c.totalQ)
	n.change(q, +1, c.totalQ)
}

// untrack is the inverse of track for res ⊆ a.alloc[f][rn].
//
// When res is the whole entry, its stored quantities save recomputing them.
func (c *core) untrack(a *agent, f *framework, rn string, res resources.Resources) {
	var q, uq qv
	if i := a.alloc.find(f.id, rn); i >= 0 && a.alloc[i].q != nil && a.alloc[i].res.Equal(res) {
		q, uq = a.alloc[i].q, a.alloc[i].uq
		a.alloc.sub(f.id, rn, res, true)
		f.nalloc--
	} else {
		if a.alloc.sub(f.id, rn, res, false) {
			f.nalloc--
		}
		q = c.names.vecOf(res)
		uq = q
		if a.reserved {
			uq = c.names.vecOf(res.Unreserved())
		}
	}
	if a.free.IsEmpty() {
		a.free = res
	} else {
		a.free = a.free.Add(res)
	}
	a.freeQ = a.freeQ.add(q)
	a.freeUnresQ = a.freeUnresQ.add(uq)
	c.refreshCand(a)
	if len(a.revoking) > 0 {
		c.forgetRevoking(a, f.id)
	}
	if r := c.roles[rn]; r != nil {
		r.leaf.change(q, -1, c.totalQ)
		if n := f.nodes[rn]; n != nil {
			n.change(q, -1, c.totalQ)
		}
		c.maybeDropFwNode(f, r)
	}
}

func (c *core) trackRevocable(a *agent, f *framework, rn string, res resources.Resources, q qv) {
	if a.revAlloc.add(f.id, rn, res, nil, nil) {
		f.nalloc++
	}
	a.revAllocd = a.revAllocd.Add(res)
	c.refreshCand(a)
	r := c.roleFor(rn)
	r.revLeaf.change(q, +1, c.revTotalQ)
	c.fwRevNode(f, r).change(q, +1, c.revTotalQ)
}

func (c *core) untrackRevocable(a *agent, f *framework, rn string, res resources.Resources) {
	if a.revAlloc.sub(f.id, rn, res, false) {
		f.nalloc--
	}
	a.revAllocd = a.revAllocd.Subtract(res)
	c.refreshCand(a)
	if rs, ok := a.rescinding[f.id]; ok {
		rs = rs.Subtract(res)
		if rs.IsEmpty() {
			delete(a.rescinding, f.id)
		} else {
			a.rescinding[f.id] = rs
		}
	}
	q := c.names.vecOf(res)
	if r := c.roles[rn]; r != nil {
		r.revLeaf.change(q, -1, c.revTotalQ)
		if n := f.revNodes[rn]; n != nil {
			n.change(q, -1, c.revTotalQ)
		}
		c.maybeDropFwNode(f, r)
	}
}

// intersect is x ∩ y as multisets (min of quantities, common ranges).
func intersect(x, y resources.Resources) resources.Resources {
	return x.Subtract(x.Subtract(y))
}

// allocationRole is the role a resource's allocation info names ("" if none).
func allocationRole(r *mesos.Resource) string {
	return r.GetAllocationInfo().GetRole()
}

// recoverFrom hands res back from framework f on agent a: resources naming
// a role in their allocation info go back to that role, the rest to
// whichever roles hold them. It returns what was actually held (and is
// now free), by role.
func (c *core) recoverFrom(a *agent, f *framework, res resources.Resources, revocable bool) map[string]resources.Resources {
	if !revocable && !res.IsEmpty() && !hasAllocationInfo(res) {
		// Common case: everything of a single-entry allocation comes back
		// (a declined or rescinded offer).
		only := -1
		for i := range a.alloc {
			if a.alloc[i].fw == f.id {
				if only >= 0 {
					only = -2
					break
				}
				only = i
			}
		}
		if only >= 0 && a.alloc[only].res.Equal(res) {
			rn := a.alloc[only].role
			c.untrack(a, f, rn, res)
			return map[string]resources.Resources{rn: res}
		}
	}
	held := a.alloc.byRole(f.id)
	if revocable {
		held = a.revAlloc.byRole(f.id)
	}
	if len(held) == 0 || res.IsEmpty() {
		return nil
	}
	out := map[string]resources.Resources{}
	untagged := res
	if len(held) > 1 || hasAllocationInfo(res) {
		for rn := range held {
			tagged := res.Filter(func(r *mesos.Resource) bool { return allocationRole(r) == rn })
			if tagged.IsEmpty() {
				continue
			}
			out[rn] = tagged.WithoutAllocationInfo()
		}
		untagged = res.Filter(func(r *mesos.Resource) bool { return allocationRole(r) == "" })
	}
	roles := make([]string, 0, len(held))
	for rn := range held {
		roles = append(roles, rn)
	}
	sort.Strings(roles)
	for _, rn := range roles {
		h := held[rn]
		want := out[rn]
		var got resources.Resources
		if !want.IsEmpty() {
			got = intersect(h, want)
			h = h.Subtract(got)
		}
		if !untagged.IsEmpty() {
			var part resources.Resources
			if untagged.Equal(h) {
				part = h
			} else {
				part = intersect(h, untagged)
			}
			untagged = untagged.Subtract(part)
			got = got.Add(part)
		}
		if got.IsEmpty() {
			delete(out, rn)
			continue
		}
		out[rn] = got
	}
	for rn, got := range out {
		if revocable {
			c.untrackRevocable(a, f, rn, got)
		} else {
			c.untrack(a, f, rn, got)
		}
	}
	return out
}

func hasAllocationInfo(r resources.Resources) bool { return len(r.AllocationRoles()) > 0 }

// sortedAgents lists agent IDs sorted (for deterministic output).
func (c *core) sortedFrameworkIDs() []string {
	ids := make([]string, 0, len(c.frameworks))
	for id := range c.frameworks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
