package allocator

import (
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// The event handlers below apply one notification to the core. Each
// returns whether the change may free resources (and so should trigger an
// allocation run soon). Unknown IDs are ignored: notifications can race
// with removals in the master.

func (c *core) frameworkFor(id string) *framework {
	if f := c.frameworks[id]; f != nil {
		return f
	}
	f := &framework{
		id:         id,
		roleSet:    map[string]bool{},
		suppressed: map[string]bool{},
		nodes:      map[string]*drfNode{},
		revNodes:   map[string]*drfNode{},
	}
	c.frameworks[id] = f
	return f
}

func (c *core) addFramework(id string, info *mesos.FrameworkInfo, used map[string]resources.Resources, active bool, opts FrameworkOptions) bool {
	f := c.frameworkFor(id)
	f.known = true
	f.active = active
	c.setFrameworkInfo(f, info, opts)
	for aid, res := range used {
		a := c.agents[aid]
		if a == nil || a.alloc.has(id) || a.revAlloc.has(id) {
			// Unknown agent, or the agent already reported this
			// framework's usage when it was added.
			continue
		}
		c.trackUsed(a, f, res)
	}
	return active
}

// setFrameworkInfo applies a (new) FrameworkInfo and options: roles,
// capabilities, offer filters, suppressed roles and offer constraints.
func (c *core) setFrameworkInfo(f *framework, info *mesos.FrameworkInfo, opts FrameworkOptions) {
	f.info = info
	f.constraints = opts.OfferConstraints
	f.minAlloc = c.frameworkMinAllocatable(info)
	f.revocable = hasCapability(info, mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES)
	f.gpu = hasCapability(info, mesos.FrameworkInfo_Capability_GPU_RESOURCES)
	f.shared = hasCapability(info, mesos.FrameworkInfo_Capability_SHARED_RESOURCES)
	old := f.roleSet
	f.roles = frameworkRoles(info)
	f.roleSet = map[string]bool{}
	for _, rn := range f.roles {
		f.roleSet[rn] = true
		r := c.roleFor(rn)
		if !old[rn] {
			r.nsub++
		}
		c.fwNode(f, r)
		if f.revocable {
			c.fwRevNode(f, r)
		}
	}
	for rn := range old {
		if !f.roleSet[rn] {
			// Filters go with the role (as in Mesos): the node may outlive
			// the subscription while it holds resources, and a later
			// resubscription must not inherit them.
			clearFilters(f, rn)
			if r := c.roles[rn]; r != nil {
				r.nsub--
				c.maybeDropFwNode(f, r)
			}
		}
	}
	f.suppressed = map[string]bool{}
	for _, rn := range opts.SuppressedRoles {
		f.suppressed[rn] = true
	}
	refreshOfferable(f)
	for rn, n := range f.nodes {
		c.setNodeOptions(n, f.optionsFor(rn))
	}
	for rn, n := range f.revNodes {
		c.setNodeOptions(n, f.optionsFor(rn))
	}
}

// clearFilters drops f's filters for role rn (all roles if rn is "").
func clearFilters(f *framework, rn string) {
	for r, n := range f.nodes {
		if rn == "" || r == rn {
			clearNodeFilters(n)
		}
	}
	for r, n := range f.revNodes {
		if rn == "" || r == rn {
			clearNodeFilters(n)
		}
	}
}

// trackUsed records resources a framework already uses on an agent.
func (c *core) trackUsed(a *agent, f *framework, res resources.Resources) {
	nonRev := res.NonRevocable()
	for rn, part := range c.splitUsed(f, nonRev) {
		// Never more than exists: of non-shared resources what is free,
		// of shared ones (used by several at once) what the total has.
		own := intersect(a.free, part.NonShared())
		part = own.Add(part.SharedIn(a.total))
		if part.IsEmpty() {
			continue
		}
		q := c.names.vecOf(own)
		uq := q
		if a.reserved {
			uq = c.names.vecOf(own.Unreserved())
		}
		c.track(a, f, rn, nil, part, q, uq, false)
	}
	rev := res.Revocable()
	for rn, part := range c.splitUsed(f, rev) {
		if part.IsEmpty() {
			continue
		}
		c.trackRevocable(a, f, rn, part, c.names.vecOf(part))
	}
}

// splitUsed attributes used resources to roles: the allocation info's role,
// else the framework's first role, else the reservation role, else "*".
func (c *core) splitUsed(f *framework, res resources.Resources) map[string]resources.Resources {
	out := map[string]resources.Resources{}
	if res.IsEmpty() {
		return out
	}
	fallback := "*"
	if len(f.roles) > 0 {
		fallback = f.roles[0]
	}
	seen := map[string]bool{}
	for _, rn := range append(res.AllocationRoles(), "") {
		if seen[rn] {
			continue
		}
		seen[rn] = true
		part := res.ByAllocationRole(rn)
		if part.IsEmpty() {
			continue
		}
		if rn == "" {
			rn = fallback
		}
		out[rn] = out[rn].Add(part.WithoutAllocationInfo())
	}
	return out
}

func (c *core) removeFramework(id string) bool {
	f := c.frameworks[id]
	if f == nil {
		return false
	}
	freed := f.nalloc > 0
	for _, a := range c.agentList {
		if f.nalloc == 0 {
			break
		}
		for rn, res := range a.alloc.byRole(id) {
			c.untrack(a, f, rn, res)
		}
		for rn, res := range a.revAlloc.byRole(id) {
			c.untrackRevocable(a, f, rn, res)
		}
		delete(a.rescinding, id)
		c.forgetRevoking(a, id)
	}
	f.known = false
	refreshOfferable(f)
	for _, rn := range f.roles {
		if r := c.roles[rn]; r != nil {
			r.nsub--
		}
	}
	f.roleSet = map[string]bool{}
	for rn := range f.nodes {
		if r := c.roles[rn]; r != nil {
			c.maybeDropFwNode(f, r)
		}
	}
	for rn := range f.revNodes {
		if r := c.roles[rn]; r != nil {
			c.maybeDropFwNode(f, r)
		}
	}
	c.forgetFramework(id)
	return freed
}

func (c *core) activateFramework(id string) bool {
	f := c.frameworks[id]
	if f == nil || !f.known {
		return false
	}
	f.active = true
	refreshOfferable(f)
	return true
}

// deactivateFramework stops offers to the framework; as in Mesos its
// filters are dropped (a re-activated framework starts afresh).
func (c *core) deactivateFramework(id string) bool {
	f := c.frameworks[id]
	if f == nil {
		return false
	}
	f.active = false
	refreshOfferable(f)
	clearFilters(f, "")
	c.clearInverseFilters(id)
	return false
}

func (c *core) updateFramework(id string, info *mesos.FrameworkInfo, opts FrameworkOptions) bool {
	f := c.frameworks[id]
	if f == nil || !f.known {
		return false
	}
	c.setFrameworkInfo(f, info, opts)
	return true
}

func (c *core) addAgent(id string, info *mesos.AgentInfo, total resources.Resources, used map[string]resources.Resources) bool {
	if old := c.agents[id]; old != nil {
		c.removeAgent(id)
	}
	a := &agent{
		id:         id,
		info:       info,
		active:     true,
		rescinding: map[string]resources.Resources{},
		revoking:   map[string]qv{},
	}
	a.initAlloc()
	c.setTotal(a, total.NonRevocable())
	a.free = a.total
	a.setFree(a.totalQ, c.unreservedQ(a, a.total))
	if a.hasShared {
		a.free = a.total.NonShared()
		a.setFree(c.names.vecOf(a.free), c.unreservedQ(a, a.free))
	}
	c.agentSeq++
	a.seq = c.agentSeq
	c.addSlot(a)
	c.agents[id] = a
	c.agentList = append(c.agentList, a)
	c.refreshCand(a)
	for fid, res := range used {
		if res.IsEmpty() {
			continue
		}
		c.trackUsed(a, c.frameworkFor(fid), res)
	}
	return true
}

func (c *core) setTotal(a *agent, total resources.Resources) {
	c.totalQ = c.totalQ.sub(a.totalQ)
	a.total = total
	a.totalQ = c.names.vecOf(total)
	a.setShared(total)
	a.reserved = !total.Unreserved().Equal(total)
	a.resvQ = nil
	delete(c.resvAgents, a)
	if a.reserved {
		a.resvQ = c.reservedByRole(total)
		c.resvAgents[a] = struct{}{}
	}
	a.gpu = a.totalQ.at(c.names.index("gpus")) > 0
	c.totalQ = c.totalQ.add(a.totalQ)
	c.totalDirty = true
}

// reservedByRole sums r's reserved scalars by reservation role (the
// role of the top reservation: a refinement belongs to the sub-role).
func (c *core) reservedByRole(r resources.Resources) map[string]qv {
	out := map[string]qv{}
	for _, p := range r.Proto() {
		if !isReserved(p) || p.GetScalar() == nil {
			continue
		}
		rr := reservationRole(p)
		i := c.names.index(p.GetName())
		v := out[rr].grow(i + 1)
		v[i] += toMilli(p.GetScalar().GetValue())
		out[rr] = v
	}
	return out
}

func (c *core) unreservedQ(a *agent, r resources.Resources) qv {
	if !a.reserved {
		return c.names.vecOf(r)
	}
	return c.names.vecOf(r.Unreserved())
}

func (c *core) removeAgent(id string) bool {
	a := c.agents[id]
	if a == nil {
		return false
	}
	for _, x := range a.alloc.sorted() {
		c.untrack(a, c.frameworks[x.fw], x.role, x.res)
	}
	for _, x := range a.revAlloc.sorted() {
		c.untrackRevocable(a, c.frameworks[x.fw], x.role, x.res)
	}
	a.dropFilters()
	delete(c.resvAgents, a)
	for _, f := range c.frameworks {
		if !f.known && f.nalloc == 0 {
			c.forgetFramework(f.id)
		}
	}
	c.totalQ = c.totalQ.sub(a.totalQ)
	c.totalDirty = true
	delete(c.agents, id)
	a.removed = true
	c.refreshCand(a)
	c.dropSlot(a)
	for i, x := range c.agentList {
		if x == a {
			c.agentList = append(c.agentList[:i], c.agentList[i+1:]...)
			break
		}
	}
	return false
}

// updateAgent replaces the agent's total. The free pool becomes the new
// total minus what is allocated (never negative).
func (c *core) updateAgent(id string, info *mesos.AgentInfo, total resources.Resources) bool {
	a := c.agents[id]
	if a == nil {
		return false
	}
	if info != nil {
		a.info = info
	}
	c.setTotal(a, total.NonRevocable())
	c.fitAllocations(a)
	free := a.total.NonShared()
	for _, x := range a.alloc {
		free = free.Subtract(x.res)
	}
	a.free = free
	a.setFree(c.names.vecOf(free), c.unreservedQ(a, free))
	c.refreshCand(a)
	return true
}

// fitAllocations trims a's allocations to what its total still holds.
// The master changes an agent's total only with resources it believes
// free (an operator's operation on unallocated resources, after
// rescinding its offers), but an offer the allocator made may still be on
// its way to the master, holding resources in their old form; and an agent
// may re-register smaller than what runs on it. What no longer exists
// stops counting as allocated (so the books balance and nothing is freed
// twice: when the master hands the old form back, only what is still held
// is recovered), and the master is asked to rescind that framework's
// offers on the agent (Options.Rescind), which may hold the old form.
//
// Shared resources are held by several at once: an entry's copies fit
// while the total has the resource at all.
func (c *core) fitAllocations(a *agent) {
	left := a.total.NonShared()
	for _, x := range a.alloc.sorted() {
		fit := x.res
		if x.res.HasShared() {
			own := x.res.NonShared()
			if !left.Contains(own) {
				own = intersect(left, own)
			}
			left = left.Subtract(own)
			fit = own.Add(x.res.SharedIn(a.total))
		} else {
			if !left.Contains(x.res) {
				fit = intersect(left, x.res)
			}
			left = left.Subtract(fit)
		}
		if fit.Equal(x.res) {
			continue
		}
		excess := x.res.Subtract(fit)
		if f := c.frameworks[x.fw]; f != nil {
			c.untrack(a, f, x.role, excess)
		}
		c.pendingRescinds = append(c.pendingRescinds, request{framework: x.fw, agent: a.id, res: excess})
	}
}

func (c *core) updateOversubscribed(id string, oversub resources.Resources) bool {
	a := c.agents[id]
	if a == nil {
		return false
	}
	a.oversub = oversub.Revocable()
	c.refreshCand(a)
	return true
}

func (c *core) activateAgent(id string) bool {
	a := c.agents[id]
	if a == nil {
		return false
	}
	a.active = true
	return true
}

func (c *core) deactivateAgent(id string) bool {
	if a := c.agents[id]; a != nil {
		a.active = false
	}
	return false
}

// maxFilter caps refuse_seconds, as Mesos does (a year).
const maxFilter = 365 * 24 * time.Hour

// lookupFramework is c.frameworks[id] through a one-entry cache: the master
// passes back declined offers in bursts, framework by framework.
func (c *core) lookupFramework(id string) *framework {
	if f := c.lastFw; f != nil && f.id == id {
		return f
	}
	f := c.frameworks[id]
	c.lastFw = f
	return f
}

// forgetFramework deletes a framework (and drops it from the cache).
func (c *core) forgetFramework(id string) {
	delete(c.frameworks, id)
	if c.lastFw != nil && c.lastFw.id == id {
		c.lastFw = nil
	}
}

func (c *core) recoverResources(fid, aid string, res resources.Resources, filters *mesos.Filters, now time.Time) bool {
	f := c.lookupFramework(fid)
	a := c.agents[aid]
	if f == nil || a == nil || res.IsEmpty() {
		return false
	}
	// Offers are rarely revocable: split only when they are (Revocable
	// allocates nothing when it finds nothing).
	nonRev, rev := res, res.Revocable()
	if !rev.IsEmpty() {
		nonRev = res.NonRevocable()
	}
	got := c.recoverFrom(a, f, nonRev, false, c.recBufs[0][:0])
	gotRev := c.recoverFrom(a, f, rev, true, c.recBufs[1][:0])
	defer func() {
		clear(got)
		clear(gotRev)
		c.recBufs[0], c.recBufs[1] = got[:0], gotRev[:0]
	}()
	freed := len(got)+len(gotRev) > 0
	if filters == nil || !f.known {
		return freed
	}
	secs := filters.GetRefuseSeconds()
	if !(secs > 0) { // also NaN
		return freed
	}
	d := maxFilter
	if secs < maxFilter.Seconds() {
		d = time.Duration(secs * float64(time.Second))
	}
	// A filter shorter than the allocation interval would expire before the
	// next periodic run and be useless; Mesos stretches it likewise.
	if d < c.interval {
		d = c.interval
	}
	for _, g := range got {
		if !f.roleSet[g.role] {
			continue
		}
		// A subscribed framework's node stays in its role's sorter, so the
		// node untrack used is the one fwNode would return.
		n := g.node
		if n == nil {
			r := c.roles[g.role]
			if r == nil {
				continue
			}
			n = c.fwNode(f, r)
		}
		q := g.q
		if q == nil || g.res.HasShared() {
			// g.q leaves shared resources out; the filter must cover
			// what was offered, them included (Mesos's isFiltered).
			q = c.names.vecOf(g.res)
		}
		addFilter(n, a, q, now.Add(d))
		if c.totalFor(a, g.role).leq(q) {
			f.noteDeclinedWhole(g.role, q)
		}
	}
	for _, g := range gotRev {
		if r := c.roles[g.role]; r != nil && f.roleSet[g.role] {
			addFilter(c.fwRevNode(f, r), a, c.names.vecOf(g.res), now.Add(d))
		}
	}
	return freed
}

func rolesOrAll(f *framework, roles []string) []string {
	if len(roles) == 0 {
		return f.roles
	}
	return roles
}

func (c *core) suppressOffers(fid string, roles []string) bool {
	f := c.frameworks[fid]
	if f == nil {
		return false
	}
	for _, rn := range rolesOrAll(f, roles) {
		f.suppressed[rn] = true
	}
	refreshOfferable(f)
	return false
}

// requestResources replaces the framework's recorded requests; offers do
// not change, so no allocation run is needed.
func (c *core) requestResources(fid string, requests []Request) bool {
	f := c.frameworks[fid]
	if f == nil {
		return false
	}
	f.requested = nil
	for _, r := range requests {
		q := c.names.vecOf(r.Resources)
		if !q.positive() {
			continue
		}
		if f.requested == nil {
			f.requested = map[string][]requested{}
		}
		f.requested[r.Role] = append(f.requested[r.Role], requested{agent: r.AgentID, q: q})
	}
	return false
}

// reviveOffers unsuppresses the roles and drops their filters.
func (c *core) reviveOffers(fid string, roles []string) bool {
	f := c.frameworks[fid]
	if f == nil {
		return false
	}
	for _, rn := range rolesOrAll(f, roles) {
		delete(f.suppressed, rn)
		delete(f.declinedWhole, rn)
		clearFilters(f, rn)
	}
	c.clearInverseFilters(fid)
	refreshOfferable(f)
	return true
}

func (c *core) updateWeights(w map[string]float64) bool {
	for rn, x := range w {
		if x > 0 {
			c.weights[rn] = x
		} else {
			delete(c.weights, rn)
		}
	}
	for path, n := range c.tree {
		if path != "" {
			n.setWeight(c.weight(path), c.totalQ)
		}
	}
	for rn, r := range c.roles {
		r.leaf.setWeight(c.weight(rn), c.totalQ)
		r.revLeaf.setWeight(c.weight(rn), c.revTotalQ)
	}
	return true
}

func (c *core) updateQuota(rn string, q Quota) bool {
	if len(q.Guarantees) == 0 && len(q.Limits) == 0 {
		delete(c.quotas, rn)
		if r := c.roles[rn]; r != nil {
			c.maybeDropRole(r)
		}
		return true
	}
	c.quotas[rn] = q
	c.roleFor(rn)
	return true
}
