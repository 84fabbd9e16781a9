package allocator

import (
	"math/bits"
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
	// paused: no allocation runs (Allocator.Pause).
	paused bool

	agents    map[string]*agent
	agentList []*agent // insertion order
	// Agents by slot (a dense index, reused after removals), and the set of
	// agents that may have something to offer as a bitmap over slots (see
	// refreshCand).
	slots     []*agent
	freeSlots []int
	cand      slotSet // agents that may have something to offer (refreshCand)
	// offerCand ⊆ cand: those whose free pool also passes
	// --min_allocatable_resources, or that have shared, revocable or lent
	// resources. Without quotas (their headroom counts every free
	// resource) or frameworks' own minimums, the other candidates can be
	// offered nothing, and a run skips them without touching them: in a
	// cluster full of tasks, agents with only disk and ports left. At
	// 50,000 such agents every run visited them all (Fig. 10).
	offerCand  slotSet
	agentSeq   uint64
	nodeSeq    uint64 // framework sorter nodes created (filter bits)
	frameworks map[string]*framework
	lastFw     *framework // lookupFramework's cache
	roles      map[string]*role

	tree    map[string]*drfNode // role tree internal nodes by path; "" is the root
	revRoot *drfNode            // revocable stage: flat sorter of roles

	totalQ qv // sum of all agents' non-revocable totals
	// Agents whose total holds reservations (quota consumption counts
	// them all, every run that has quotas).
	resvAgents map[*agent]struct{}
	revTotalQ  qv   // sum of revocable totals at the last run
	totalDirty bool // shares must be recomputed before the next run

	weights map[string]float64
	quotas  map[string]Quota

	// maint holds agents' maintenance and inverse offers (maintenance.go),
	// by agent ID; nil until the first UpdateUnavailability.
	maint map[string]*agentMaint

	minAllocatable []qv
	interval       time.Duration

	order     orderPolicy
	shuffle   bool
	rng       *rand.Rand
	revoke    bool // revocation policy (Options.Revoke set)
	idleResvd bool // offer idle reservations as revocable

	agentBuf []*agent // reused per run
	// Buffers of buildOffers, reused per run (emptied after each).
	recBuf   []offerRec
	groupBuf []offerRec
	fwBuf    []*framework
	offBuf   []int
	recBufs  [2][]recovered // recoverResources' buffers

	revokingQ qv // sum of all agents' pending revocations
	// ownMin counts framework nodes with their own minimum allocatable
	// quantities: while zero, an agent below the cluster's minimum is
	// skipped without looking at frameworks.
	ownMin int
	// Offers to rescind because their resources left an agent's total
	// (fitAllocations), asked in the next run's result.
	pendingRescinds []request

	metrics runMetrics
	// UpdateAllocation calls refused as inconsistent (metric), and why
	// the last one was (golden transcripts show it).
	updatesRejected uint64
	lastRejected    string
	runSeq          uint64 // allocation runs started
}

type orderPolicy int

const (
	orderDRF      orderPolicy = iota // weighted DRF (HierarchicalDRF)
	orderPriority                    // strict priority by weight
	orderLottery                     // random, weight-proportional tickets
)

// agent is one agent's resources as the allocator sees them.
//
// Runs visit agents in random order, so each visit starts with a cache
// miss; the fields a run reads and writes for every agent come first and
// the storage of their small vectors, of the first allocation entry and of
// its vectors is inline (the *Buf and *Vec arrays), so one visit touches one
// contiguous object instead of half a dozen scattered allocations. Slices
// outgrow their inline storage transparently (append/grow reallocate).
type agent struct {
	active   bool
	reserved bool // total holds reserved resources (slow path)
	gpu      bool
	removed  bool
	// hasShared: the total holds shared resources (shared below; read on
	// every visit, so kept with the hot flags, in their padding).
	hasShared bool
	slot      int // index in core.slots

	freeQ         qv
	freeQBuf      [4]int64 // storage of freeQ, next to active (read together first)
	freeUnresQ    qv       // unreserved part of freeQ
	freeUnresQBuf [4]int64
	free          resources.Resources // total minus allocated (non-revocable, non-shared)

	// alloc holds non-revocable allocations (offered or in use), by
	// framework ID and role, without allocation info.
	alloc allocSet

	oversub   resources.Resources // revocable estimate (UpdateOversubscribed)
	revAllocd resources.Resources // sum of revAlloc

	// filters are the offer filters on this agent (filters.go);
	// filterMask has the bit of every framework node with an entry, so
	// most checks need not read the entries.
	filters    []offerFilter
	filterMask uint64

	id string

	allocBuf [1]allocation // storage of alloc's first entry
	allocVec [2][4]int64   // storage of that entry's vectors

	seq    uint64 // insertion order
	info   *mesos.AgentInfo
	total  resources.Resources // non-revocable
	totalQ qv
	resvQ  map[string]qv // reserved scalars of total by reservation role (nil: none)

	// shared holds the total's shared resources (persistent volumes of
	// SHARED_RESOURCES frameworks), one copy each. As in Mesos they are
	// never part of free: they may be offered while in use, each at most
	// once per run (sharedOff holds what run sharedRun offered), and only
	// to frameworks with SHARED_RESOURCES (shared.go).
	shared    resources.Resources
	sharedRun uint64
	sharedOff resources.Resources

	revTotal   resources.Resources // oversub plus idle reservations, computed per run
	revAlloc   allocSet
	rescinding map[string]resources.Resources
	revoking   map[string]qv // revocations asked of frameworks here, until they give back
}

// setFree sets the agent's free vectors, copying them into its inline
// storage.
func (a *agent) setFree(q, uq qv) {
	a.freeQ = append(a.freeQBuf[:0], q...)
	a.freeUnresQ = append(a.freeUnresQBuf[:0], uq...)
}

// initAlloc points the agent's allocation set at its inline storage.
func (a *agent) initAlloc() {
	a.allocBuf[0] = allocation{q: a.allocVec[0][:0], uq: a.allocVec[1][:0]}
	a.alloc = a.allocBuf[:0]
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
	shared     bool // SHARED_RESOURCES: may be offered shared resources
	// constraints are its offer constraints (nil: none); minAlloc its
	// FrameworkInfo.offer_filters' minimum allocatable quantities by role
	// (a role present replaces --min_allocatable_resources for it).
	constraints *OfferConstraints
	minAlloc    map[string][]qv

	nodes    map[string]*drfNode // this framework in each role's sorter
	revNodes map[string]*drfNode // and in each role's revocable sorter
	nalloc   int                 // allocation entries it holds on agents

	lastOffer  time.Time // last time it was offered anything (explanations)
	offeredRun uint64    // the run that last offered it anything
	runOffers  int       // offers in that run
	runSlot    int       // its index among the frameworks offered to in that run

	// declinedWhole holds, by role, the quantities of declined offers that
	// held everything their agent could ever offer the role (at most
	// maxDeclinedWhole, none below another): what the framework waits for
	// fits no agent whose total is below one of them (explanations). A
	// REVIVE of the role forgets them: its demand may have changed.
	declinedWhole map[string][]qv
	// requested is, by role, what the framework's last REQUEST asked for
	// (explanations only: offers ignore it, as Mesos's allocator does).
	requested map[string][]requested
}

// requested is one Request as quantities, for explanations.
type requested struct {
	agent string // "" for any agent
	q     qv
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

func newCore(opts Options) *core {
	c := &core{
		names:      newNameTable(),
		agents:     map[string]*agent{},
		frameworks: map[string]*framework{},
		roles:      map[string]*role{},
		resvAgents: map[*agent]struct{}{},
		tree:       map[string]*drfNode{"": {name: "", weight: 1, sortedKids: true}},
		revRoot:    &drfNode{name: "", weight: 1, sortedKids: true},
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
	n := &drfNode{name: path, weight: c.weight(path), sortedKids: true}
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
	n := &drfNode{name: f.id, weight: 1, fw: f, owner: r, fbit: c.nextFilterBit()}
	r.fws.insertKid(n)
	f.nodes[r.name] = n
	setOfferable(f, n, r.name, &r.live)
	c.setNodeOptions(n, f.optionsFor(r.name))
	return n
}

func (c *core) fwRevNode(f *framework, r *role) *drfNode {
	if n := f.revNodes[r.name]; n != nil {
		return n
	}
	n := &drfNode{name: f.id, weight: 1, fw: f, owner: r, fbit: c.nextFilterBit()}
	r.revFws.insertKid(n)
	f.revNodes[r.name] = n
	setOfferable(f, n, r.name, &r.revLive)
	c.setNodeOptions(n, f.optionsFor(r.name))
	return n
}

// nextFilterBit hands out framework nodes' filter mask bits in turn, so
// up to 64 nodes created together have distinct bits.
func (c *core) nextFilterBit() uint64 {
	c.nodeSeq++
	return 1 << (c.nodeSeq % 64)
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
		clearNodeFilters(n)
		c.setNodeOptions(n, nil)
		r.fws.removeKid(n)
		delete(f.nodes, r.name)
	}
	if n := f.revNodes[r.name]; n != nil && !n.alloc.positive() {
		if n.offerable {
			r.revLive--
		}
		clearNodeFilters(n)
		c.setNodeOptions(n, nil)
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

// refreshCand keeps c.cand the set of agents that may have something to
// offer (free resources, or revocable ones to offer or rescind), and
// c.offerCand the part of it worth visiting when nothing below the minimum
// can be offered, so runs skip the rest without touching them.
func (c *core) refreshCand(a *agent) {
	// Shared resources may be offered every run, even while in use.
	other := a.hasShared || !a.oversub.IsEmpty() || !a.revAllocd.IsEmpty() || (c.idleResvd && a.reserved)
	free := a.freeQ.positive()
	// Allocatable quantities are never more than the free pool, and the
	// minimum is monotone: a free pool below it leaves every role below it.
	offer := other || (free && c.minAllocatableOK(a.freeQ))
	if a.removed {
		free, other, offer = false, false, false
	}
	c.cand.set(a.slot, free || other)
	c.offerCand.set(a.slot, offer)
}

// runAgents is the set a run visits: the candidates worth visiting when no
// quota's headroom needs every free resource counted and no framework has
// a minimum of its own (which may admit what the cluster's does not).
func (c *core) runAgents() *slotSet {
	if len(c.quotas) == 0 && c.ownMin == 0 {
		return &c.offerCand
	}
	return &c.cand
}

// addSlot gives a a slot.
func (c *core) addSlot(a *agent) {
	if n := len(c.freeSlots); n > 0 {
		a.slot = c.freeSlots[n-1]
		c.freeSlots = c.freeSlots[:n-1]
		c.slots[a.slot] = a
		return
	}
	a.slot = len(c.slots)
	c.slots = append(c.slots, a)
	c.cand.grow(a.slot)
	c.offerCand.grow(a.slot)
}

// dropSlot frees a's slot (a is removed and no longer a candidate).
func (c *core) dropSlot(a *agent) {
	c.slots[a.slot] = nil
	c.freeSlots = append(c.freeSlots, a.slot)
}

// candidates appends the agents of set (c.cand if nil), in slot order.
func (c *core) candidates(out []*agent, set *slotSet) []*agent {
	if set == nil {
		set = &c.cand
	}
	if set.n == 0 {
		return out
	}
	for w, word := range set.bits {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			out = append(out, c.slots[w*64+b])
		}
	}
	return out
}

// slotSet is a set of agent slots as a bitmap. A bitmap rather than a
// list: taking an agent out touches no other agent (a swap-remove would
// move another, a cache miss in the middle of a run).
type slotSet struct {
	bits []uint64
	n    int // bits set
}

// grow makes room for slot.
func (s *slotSet) grow(slot int) {
	for slot/64 >= len(s.bits) {
		s.bits = append(s.bits, 0)
	}
}

// has reports whether slot is in the set.
func (s *slotSet) has(slot int) bool { return s.bits[slot/64]&(1<<(slot%64)) != 0 }

// set puts slot in the set or takes it out.
func (s *slotSet) set(slot int, in bool) {
	if s.has(slot) == in {
		return
	}
	s.bits[slot/64] ^= 1 << (slot % 64)
	if in {
		s.n++
	} else {
		s.n--
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
//
// q and unresQ are the quantities of res's non-shared part: shared
// resources never leave the free pool (it does not hold them), and they
// count in shares once per holder (chargeShared).
func (c *core) track(a *agent, f *framework, rn string, n *drfNode, res resources.Resources, q qv, unresQ qv, whole bool) {
	var before sharedHeld
	shared := res.HasShared()
	if shared {
		before = c.sharedHeldBy(a, f.id, rn)
	}
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
	n.owner.leaf.change(q, +1, c.totalQ)
	n.change(q, +1, c.totalQ)
	if shared {
		c.chargeShared(a, f.id, rn, n, before)
	}
}

// untrack is the inverse of track for res ⊆ a.alloc[f][rn].
//
// When res is the whole entry, its stored quantities save recomputing them.
// It returns the quantities of res; they may live in a's allocation set's
// spare storage, valid until the next allocation on a.
//
// Shared resources in res leave the allocation but are not added to the
// free pool (they are never in it); the quantities returned are those of
// res's non-shared part.
func (c *core) untrack(a *agent, f *framework, rn string, res resources.Resources) (qv, *drfNode) {
	var q, uq qv
	var before sharedHeld
	shared := res.HasShared()
	freed := res
	if shared {
		before = c.sharedHeldBy(a, f.id, rn)
		freed = res.NonShared()
	}
	if i := a.alloc.find(f.id, rn); i >= 0 && a.alloc[i].q != nil && a.alloc[i].res.Equal(res) {
		q, uq = a.alloc[i].q, a.alloc[i].uq
		a.alloc.sub(f.id, rn, res, true)
		f.nalloc--
	} else {
		if a.alloc.sub(f.id, rn, res, false) {
			f.nalloc--
		}
		q = c.names.vecOf(freed)
		uq = q
		if a.reserved {
			uq = c.names.vecOf(freed.Unreserved())
		}
	}
	if a.free.IsEmpty() {
		a.free = freed
	} else {
		a.free = a.free.Add(freed)
	}
	a.freeQ = a.freeQ.add(q)
	a.freeUnresQ = a.freeUnresQ.add(uq)
	c.refreshCand(a)
	if len(a.revoking) > 0 {
		c.forgetRevoking(a, f.id)
	}
	var r *role
	n := f.nodes[rn]
	if n != nil {
		r = n.owner // the same role, without a lookup
	} else {
		r = c.roles[rn]
	}
	if r != nil {
		r.leaf.change(q, -1, c.totalQ)
		if n != nil {
			n.change(q, -1, c.totalQ)
		}
		if shared {
			c.chargeShared(a, f.id, rn, n, before)
		}
		c.maybeDropFwNode(f, r)
	}
	return q, n
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

// recovered is what recoverFrom freed for one role: the resources and,
// when known, their quantities (valid until the next allocation on the
// agent; nil: compute them) and the framework's node in the role's sorter
// as it was before (nil: look it up).
type recovered struct {
	role string
	res  resources.Resources
	q    qv
	node *drfNode
}

// recoverFrom hands res back from framework f on agent a: resources naming
// a role in their allocation info go back to that role, the rest to
// whichever roles hold them. It appends to out what was actually held (and
// is now free), by role.
func (c *core) recoverFrom(a *agent, f *framework, res resources.Resources, revocable bool, out []recovered) []recovered {
	if !revocable && !res.IsEmpty() {
		// Common case: everything of a single-entry allocation comes back
		// (a declined or rescinded offer), as allocated or in the
		// master's allocated form.
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
		if only >= 0 {
			e := &a.alloc[only]
			if e.res.Equal(res) || e.taggedRes().Equal(res) {
				rn, whole := e.role, e.res
				q, n := c.untrack(a, f, rn, whole)
				return append(out, recovered{rn, whole, q, n})
			}
		}
	}
	held := a.alloc.byRole(f.id)
	if revocable {
		held = a.revAlloc.byRole(f.id)
	}
	if len(held) == 0 || res.IsEmpty() {
		return out
	}
	byRole := map[string]resources.Resources{}
	untagged := res
	if len(held) > 1 || hasAllocationInfo(res) {
		for rn := range held {
			tagged := res.ByAllocationRole(rn)
			if tagged.IsEmpty() {
				continue
			}
			byRole[rn] = tagged.WithoutAllocationInfo()
		}
		untagged = res.ByAllocationRole("")
	}
	roles := make([]string, 0, len(held))
	for rn := range held {
		roles = append(roles, rn)
	}
	sort.Strings(roles)
	for _, rn := range roles {
		h := held[rn]
		want := byRole[rn]
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
			continue
		}
		if revocable {
			c.untrackRevocable(a, f, rn, got)
		} else {
			c.untrack(a, f, rn, got)
		}
		out = append(out, recovered{role: rn, res: got})
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
