package allocator

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// model is the naive oracle: what the master would know about offers and
// tasks, kept with plain resources.Resources arithmetic.
type model struct {
	total       map[string]resources.Resources
	active      map[string]bool
	fwActive    map[string]bool
	fwRoles     map[string][]string
	suppressed  map[string]map[string]bool
	outstanding map[string]map[offerKey]resources.Resources // fw → (agent, role) → offered (untagged)
	used        map[string]map[offerKey]resources.Resources
}

func newModel() *model {
	return &model{
		total: map[string]resources.Resources{}, active: map[string]bool{},
		fwActive: map[string]bool{}, fwRoles: map[string][]string{}, suppressed: map[string]map[string]bool{},
		outstanding: map[string]map[offerKey]resources.Resources{},
		used:        map[string]map[offerKey]resources.Resources{},
	}
}

type offerKey struct{ agent, role string }

func (m *model) held(agent string) resources.Resources {
	var r resources.Resources
	for _, byKey := range []map[string]map[offerKey]resources.Resources{m.outstanding, m.used} {
		for _, byAgent := range byKey {
			for k, x := range byAgent {
				if k.agent == agent {
					r = r.Add(x)
				}
			}
		}
	}
	return r
}

var propRoles = []string{"a", "b", "eng", "eng/web"}

func TestPropertyNeverOverAllocates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newCore(Options{Interval: time.Second})
		m := newModel()
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		nAgents, nFws := 0, 0
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			switch rapid.IntRange(0, 11).Draw(t, "op") {
			case 0, 1: // add agent, maybe with reservations
				id := fmt.Sprintf("a%d", nAgents)
				nAgents++
				text := fmt.Sprintf("cpus:%d;mem:%d;ports:[31000-31010]", rapid.IntRange(1, 8).Draw(t, "cpus"), 64*rapid.IntRange(1, 16).Draw(t, "mem"))
				if rapid.Bool().Draw(t, "reserved") {
					text += fmt.Sprintf(";cpus(%s):2;mem(%s):128", rapid.SampledFrom(propRoles).Draw(t, "rrole"), "eng")
				}
				total := resources.MustParse(text)
				c.addAgent(id, nil, total, nil)
				m.total[id], m.active[id] = total, true
			case 2: // add framework
				id := fmt.Sprintf("f%d", nFws)
				nFws++
				info := &mesos.FrameworkInfo{}
				roles := []string{rapid.SampledFrom(propRoles).Draw(t, "role")}
				if rapid.Bool().Draw(t, "multi") {
					r2 := rapid.SampledFrom(propRoles).Draw(t, "role2")
					if r2 != roles[0] {
						roles = append(roles, r2)
					}
					info.Roles = roles
					info.Capabilities = []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()}}
				} else {
					info.Role = proto.String(roles[0])
				}
				c.addFramework(id, info, nil, true, FrameworkOptions{})
				m.fwActive[id], m.fwRoles[id], m.suppressed[id] = true, roles, map[string]bool{}
			case 3, 4, 5: // allocate and check
				res := c.allocate(now)
				checkRun(t, c, m, res)
			case 6: // decline an outstanding offer, maybe with a filter
				fw, k, ok := pickOffer(t, m)
				if !ok {
					continue
				}
				var f *mesos.Filters
				if rapid.Bool().Draw(t, "filter") {
					f = &mesos.Filters{RefuseSeconds: proto.Float64(float64(rapid.IntRange(0, 10).Draw(t, "refuse")))}
				}
				c.recoverResources(fw, k.agent, tag(m, fw, k.role, m.outstanding[fw][k]), f, now)
				delete(m.outstanding[fw], k)
			case 7: // accept: launch a task with part of an offer
				fw, k, ok := pickOffer(t, m)
				if !ok {
					continue
				}
				offer := m.outstanding[fw][k]
				task := intersect(offer, resources.MustParse("cpus:1;mem:64"))
				if m.used[fw] == nil {
					m.used[fw] = map[offerKey]resources.Resources{}
				}
				m.used[fw][k] = m.used[fw][k].Add(task)
				c.recoverResources(fw, k.agent, tag(m, fw, k.role, offer.Subtract(task)), nil, now)
				delete(m.outstanding[fw], k)
			case 8: // a task finishes
				for _, fw := range sortedKeys(m.used) {
					for k, r := range m.used[fw] {
						c.recoverResources(fw, k.agent, tag(m, fw, k.role, r), nil, now)
						delete(m.used[fw], k)
						break
					}
					break
				}
			case 9:
				now = now.Add(time.Duration(rapid.IntRange(1, 6).Draw(t, "secs")) * time.Second)
			case 10: // suppress or revive
				if nFws == 0 {
					continue
				}
				fw := fmt.Sprintf("f%d", rapid.IntRange(0, nFws-1).Draw(t, "fw"))
				if _, ok := m.fwActive[fw]; !ok {
					continue
				}
				if rapid.Bool().Draw(t, "suppress") {
					c.suppressOffers(fw, nil)
					for _, r := range m.fwRoles[fw] {
						m.suppressed[fw][r] = true
					}
				} else {
					c.reviveOffers(fw, nil)
					m.suppressed[fw] = map[string]bool{}
				}
			case 11: // deactivate or activate an agent
				if nAgents == 0 {
					continue
				}
				id := fmt.Sprintf("a%d", rapid.IntRange(0, nAgents-1).Draw(t, "agent"))
				if rapid.Bool().Draw(t, "on") {
					c.activateAgent(id)
					m.active[id] = true
				} else {
					c.deactivateAgent(id)
					m.active[id] = false
				}
			}
			checkInternal(t, c)
		}
	})
}

// tag adds allocation info as the master does for MULTI_ROLE frameworks.
func tag(m *model, fw, role string, r resources.Resources) resources.Resources {
	if len(m.fwRoles[fw]) > 1 {
		return r.AllocatedTo(role)
	}
	return r
}

type fwOffer struct {
	fw string
	k  offerKey
}

func pickOffer(t *rapid.T, m *model) (string, offerKey, bool) {
	var all []fwOffer
	for _, fw := range sortedKeys(m.outstanding) {
		for k := range m.outstanding[fw] {
			all = append(all, fwOffer{fw, k})
		}
	}
	if len(all) == 0 {
		return "", offerKey{}, false
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.fw != b.fw {
			return a.fw < b.fw
		}
		if a.k.agent != b.k.agent {
			return a.k.agent < b.k.agent
		}
		return a.k.role < b.k.role
	})
	p := all[rapid.IntRange(0, len(all)-1).Draw(t, "offer")]
	return p.fw, p.k, true
}

// checkRun checks one run's offers against the oracle.
func checkRun(t *rapid.T, c *core, m *model, res runResult) {
	for fw, byRole := range res.offers {
		for role, byAgent := range byRole {
			for agent, r := range byAgent {
				if !m.fwActive[fw] || m.suppressed[fw][role] || !contains(m.fwRoles[fw], role) {
					t.Fatalf("offer to %s for role %s: not eligible (roles %v suppressed %v)", fw, role, m.fwRoles[fw], m.suppressed[fw])
				}
				if !m.active[agent] {
					t.Fatalf("offer of deactivated agent %s", agent)
				}
				if !r.AllocatableTo(role).Equal(r) {
					t.Fatalf("offer %s for role %s holds resources reserved elsewhere", r, role)
				}
				k := offerKey{agent, role}
				// A second offer for the same agent and role while one is
				// outstanding is fine (newly freed resources); the
				// master keeps both, the model merges them.
				if m.outstanding[fw] == nil {
					m.outstanding[fw] = map[offerKey]resources.Resources{}
				}
				m.outstanding[fw][k] = m.outstanding[fw][k].Add(r)
			}
		}
	}
	for agent, total := range m.total {
		if held := m.held(agent); !total.Contains(held) {
			t.Fatalf("agent %s: offered plus used %s exceeds total %s", agent, held, total)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// checkInternal checks the core's own books: per agent, free plus
// allocated equals the total, nothing negative.
func checkInternal(t *rapid.T, c *core) {
	for _, a := range c.agentList {
		// Shared resources are kept apart from the free pool (one copy
		// each, offerable while in use); allocation entries may hold
		// several copies of them.
		sum := a.freeQ.clone().add(c.names.vecOf(a.shared))
		for _, x := range a.alloc {
			sum = sum.add(c.names.vecOf(x.res.NonShared()))
		}
		if !sameVec(sum, a.totalQ) {
			t.Fatalf("agent %s: free %v + shared %s + allocated != total %v", a.id, a.freeQ, a.shared, a.totalQ)
		}
		if a.free.HasShared() || !a.shared.Equal(a.total.Shared()) {
			t.Fatalf("agent %s: free %s, shared %s, total %s", a.id, a.free, a.shared, a.total)
		}
		for _, x := range a.freeQ {
			if x < 0 {
				t.Fatalf("agent %s: negative free %v", a.id, a.freeQ)
			}
		}
		if !sameVec(c.names.vecOf(a.free), a.freeQ) {
			t.Fatalf("agent %s: free %s but vector %v", a.id, a.free, a.freeQ)
		}
	}
	checkCachedBits(t, c)
	checkShares(t, c)
}

// checkShares checks the sorters' allocations against a naive sum of the
// allocation entries: a framework's node in a role holds the quantities of
// its entries in that role (vecOf counts a shared resource once per entry,
// however many copies), a role's leaf those of its frameworks' entries with
// each shared resource counted once per agent (Mesos's sorter: once per
// client and agent).
func checkShares(t *rapid.T, c *core) {
	node := map[*drfNode]qv{}
	leaf := map[*drfNode]qv{}
	for _, a := range c.agentList {
		roleShared := map[string]resources.Resources{}
		for _, x := range a.alloc {
			f := c.frameworks[x.fw]
			r := c.roles[x.role]
			if f == nil || r == nil {
				t.Fatalf("agent %s: entry of unknown framework %s or role %s", a.id, x.fw, x.role)
			}
			if n := f.nodes[x.role]; n != nil {
				node[n] = node[n].add(c.names.vecOf(x.res))
			}
			leaf[r.leaf] = leaf[r.leaf].add(c.names.vecOf(x.res.NonShared()))
			roleShared[x.role] = roleShared[x.role].Add(x.res.Shared())
		}
		for rn, sh := range roleShared {
			l := c.roles[rn].leaf
			leaf[l] = leaf[l].add(c.names.vecOf(sh))
		}
	}
	for _, f := range c.frameworks {
		for rn, n := range f.nodes {
			if !sameVec(n.alloc, node[n]) {
				t.Fatalf("framework %s role %s: node holds %v, its entries %v", f.id, rn, n.alloc, node[n])
			}
		}
	}
	for rn, r := range c.roles {
		if !sameVec(r.leaf.alloc, leaf[r.leaf]) {
			t.Fatalf("role %s: leaf holds %v, its entries %v", rn, r.leaf.alloc, leaf[r.leaf])
		}
	}
}

// checkCachedBits checks the summaries the core keeps beside the data
// they summarise (masks, counters, candidate bits), which are only
// hints if they over-approximate and a bug if they ever under-approximate:
//   - every filter entry's node bit is in its agent's filterMask;
//   - an allocation entry's cached quantities are those of its resources;
//   - a framework node's nfilters counts its live entries on all agents;
//   - a role's live (revLive) counts its offerable framework nodes;
//   - every agent with free resources is a candidate of the next run.
func checkCachedBits(t *rapid.T, c *core) {
	liveFilters := map[*drfNode]int{}
	for _, a := range c.agentList {
		for _, fl := range a.filters {
			if a.filterMask&fl.node.fbit == 0 {
				t.Fatalf("agent %s: filter of %s (bit %x) missing from mask %x", a.id, fl.node.name, fl.node.fbit, a.filterMask)
			}
			if fl.live() {
				liveFilters[fl.node]++
			}
		}
		for _, x := range a.alloc {
			own := x.res.NonShared() // entries keep the non-shared part's quantities
			if x.q != nil && (!sameVec(x.q, c.names.vecOf(own)) || !sameVec(x.uq, c.names.vecOf(own.Unreserved()))) {
				t.Fatalf("agent %s: %s in %s holds %s but keeps quantities %v, unreserved %v", a.id, x.fw, x.role, x.res, x.q, x.uq)
			}
		}
		cand, offerCand := c.cand.has(a.slot), c.offerCand.has(a.slot)
		if a.freeQ.positive() && !cand {
			t.Fatalf("agent %s: free %v but not a candidate", a.id, a.freeQ)
		}
		if a.freeQ.positive() && c.minAllocatableOK(a.freeQ) && !offerCand {
			t.Fatalf("agent %s: free %v passes the minimum but is not an offer candidate", a.id, a.freeQ)
		}
		if offerCand && !cand || c.slots[a.slot] != a {
			t.Fatalf("agent %s: candidate bits or slot %d out of step", a.id, a.slot)
		}
	}
	for _, f := range c.frameworks {
		for _, nodes := range []map[string]*drfNode{f.nodes, f.revNodes} {
			for rn, n := range nodes {
				if n.nfilters != liveFilters[n] {
					t.Fatalf("framework %s role %s: nfilters %d, live entries %d", f.id, rn, n.nfilters, liveFilters[n])
				}
			}
		}
	}
	for rn, r := range c.roles {
		live, revLive := 0, 0
		for _, n := range r.fws.kids {
			if n.offerable {
				live++
			}
		}
		for _, n := range r.revFws.kids {
			if n.offerable {
				revLive++
			}
		}
		if live != r.live || revLive != r.revLive {
			t.Fatalf("role %s: live %d/%d revLive %d/%d (counted/kept)", rn, live, r.live, revLive, r.revLive)
		}
	}
}

// TestPropertyWeightedFairAtQuiescence: frameworks (one per role, random
// weights) accept everything; after one run over many identical agents,
// no role's weighted share exceeds another's by more than one agent.
func TestPropertyWeightedFairAtQuiescence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nRoles := rapid.IntRange(2, 5).Draw(t, "roles")
		nAgents := rapid.IntRange(nRoles, 60).Draw(t, "agents")
		weights := map[string]float64{}
		for i := 0; i < nRoles; i++ {
			weights[fmt.Sprintf("r%d", i)] = float64(rapid.IntRange(1, 4).Draw(t, "w"))
		}
		c := newCore(Options{Weights: weights})
		for i := 0; i < nAgents; i++ {
			c.addAgent(fmt.Sprintf("a%03d", i), nil, resources.MustParse("cpus:1;mem:100"), nil)
		}
		for r := range weights {
			c.addFramework("f-"+r, &mesos.FrameworkInfo{Role: proto.String(r)}, nil, true, FrameworkOptions{})
		}
		c.allocate(time.Now())
		unit := 1 / float64(nAgents)
		for r, w := range weights {
			for r2, w2 := range weights {
				s, s2 := dominant(c.tree[r].alloc, c.totalQ)/w, dominant(c.tree[r2].alloc, c.totalQ)/w2
				// r got its last agent when its weighted share was not
				// above r2's.
				if s-unit/w > s2+1e-9 {
					t.Fatalf("role %s (w %v) share %.3f vs %s (w %v) %.3f: unfair beyond one agent", r, w, s*w, r2, w2, s2*w2)
				}
			}
		}
	})
}

// TestPropertyQuotaBeforeFairShare: roles with guarantees (that fit) get
// them in full in one run, whatever the weights of the other roles.
func TestPropertyQuotaBeforeFairShare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nAgents := rapid.IntRange(4, 40).Draw(t, "agents")
		c := newCore(Options{Weights: map[string]float64{"greedy": 100}})
		for i := 0; i < nAgents; i++ {
			c.addAgent(fmt.Sprintf("a%03d", i), nil, resources.MustParse("cpus:1;mem:100"), nil)
		}
		left := nAgents
		guar := map[string]int{}
		for i := 0; i < 3 && left > 0; i++ {
			g := rapid.IntRange(0, left).Draw(t, "g")
			left -= g
			rn := fmt.Sprintf("q%d", i)
			guar[rn] = g
			if g > 0 {
				c.updateQuota(rn, Quota{Guarantees: map[string]float64{"cpus": float64(g)}})
			}
			c.addFramework("f-"+rn, &mesos.FrameworkInfo{Role: proto.String(rn)}, nil, true, FrameworkOptions{})
		}
		c.addFramework("f-greedy", &mesos.FrameworkInfo{Role: proto.String("greedy")}, nil, true, FrameworkOptions{})
		c.allocate(time.Now())
		for rn, g := range guar {
			got := fromMilli(c.tree[rn].alloc.at(0))
			if got+1e-9 < float64(g) {
				t.Fatalf("role %s got cpus %v below its guarantee %d", rn, got, g)
			}
		}
	})
}
