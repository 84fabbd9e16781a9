package allocator

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Tests of the representation behind the performance work: agent-side
// offer filters, the candidate bitmap, and the lazy walk of the role tree.

func filterMetric(c *core, role string) float64 {
	return c.metricsMap(0)["allocator/mesos/offer_filters/roles/"+role+"/active"]
}

// TestOfferFilterBookkeeping: filters live on agents, counted per framework
// node; replacing, expiring, reviving, deactivating and removing the
// agent keep the count right.
func TestOfferFilterBookkeeping(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCore(Options{Interval: time.Second})
	for i := 0; i < 3; i++ {
		c.addAgent(fmt.Sprintf("a%d", i), nil, resources.MustParse("cpus:1;mem:64"), nil)
	}
	c.addFramework("f1", &mesos.FrameworkInfo{Role: proto.String("r")}, nil, true, FrameworkOptions{})
	c.addFramework("f2", &mesos.FrameworkInfo{Role: proto.String("r")}, nil, true, FrameworkOptions{})
	decline := func(secs float64) {
		t.Helper()
		res := c.allocate(now)
		for fw, o := range res.offers {
			for _, byAgent := range o {
				for aid, r := range byAgent {
					c.recoverResources(fw, aid, r, &mesos.Filters{RefuseSeconds: proto.Float64(secs)}, now)
				}
			}
		}
	}
	steps := []struct {
		name string
		do   func()
		want float64
	}{
		{"three declines", func() { decline(10) }, 3},
		{"the other framework declines too", func() { decline(10) }, 6},
		{"all filtered: nothing offered", func() {
			if res := c.allocate(now); len(res.offers) != 0 {
				t.Fatalf("offers while filtered: %v", res.offers)
			}
		}, 6},
		{"f1 revives", func() { c.reviveOffers("f1", nil) }, 3},
		{"f1 declines again, replacing nothing", func() { decline(10) }, 6},
		{"f1 declines on an agent it already filtered (replace)", func() {
			n := c.frameworks["f1"].nodes["r"]
			addFilter(n, c.agents["a0"], qv{1000}, now.Add(time.Hour))
		}, 6},
		{"f2 deactivated", func() { c.deactivateFramework("f2") }, 3},
		{"agent a1 removed", func() { c.removeAgent("a1") }, 2},
		{"expired filters are dropped when checked", func() {
			now = now.Add(11 * time.Second)
			c.allocate(now)
		}, 1}, // a0's replaced filter (an hour) is left
	}
	for _, s := range steps {
		s.do()
		if got := filterMetric(c, "r"); got != s.want {
			t.Fatalf("%s: %v active filters, want %v", s.name, got, s.want)
		}
	}
}

// TestCandidatesBitmap: after adds, removals (slots reused), allocations
// and recoveries, the candidates are exactly the agents with something
// free.
func TestCandidatesBitmap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newCore(Options{Interval: time.Second})
		c.addFramework("f", &mesos.FrameworkInfo{Role: proto.String("r")}, nil, true, FrameworkOptions{})
		now := time.Now()
		next := 0
		live := map[string]bool{}
		held := map[string]resources.Resources{}
		for s := rapid.IntRange(1, 60).Draw(t, "steps"); s > 0; s-- {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				id := fmt.Sprintf("a%03d", next)
				next++
				c.addAgent(id, nil, resources.MustParse("cpus:1;mem:64"), nil)
				live[id] = true
			case 1:
				for id := range live {
					c.removeAgent(id)
					delete(live, id)
					delete(held, id)
					break
				}
			case 2:
				for _, byAgent := range c.allocate(now).offers["f"] {
					for id, r := range byAgent {
						held[id] = r
					}
				}
			case 3:
				for id, r := range held {
					c.recoverResources("f", id, r, nil, now)
					delete(held, id)
					break
				}
			}
			var got, want []string
			for _, a := range c.candidates(nil, nil) {
				got = append(got, a.id)
			}
			for id := range live {
				if _, offered := held[id]; !offered {
					want = append(want, id)
				}
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("candidates %v, want %v", got, want)
			}
		}
	})
}

// naiveLeaves lists role leaves depth first, children in sorted order.
func naiveLeaves(n *drfNode, out []*drfNode) []*drfNode {
	kids := append([]*drfNode(nil), n.kids...)
	sort.SliceStable(kids, func(i, j int) bool { return kids[i].less(kids[j]) })
	for _, k := range kids {
		if len(k.kids) == 0 {
			if k.role != nil {
				out = append(out, k)
			}
			continue
		}
		out = naiveLeaves(k, out)
	}
	return out
}

// TestPropertyRoleWalk: the lazy walk of the role tree yields the same
// order as listing every leaf; frozen midway, it keeps yielding the order
// of before later allocations change the tree; a completed walk is reused
// until the next allocation.
func TestPropertyRoleWalk(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newCore(Options{Weights: map[string]float64{"a": 2, "b/y": 3}})
		names := []string{"a", "b", "b/x", "b/y", "b/y/z", "c", "c/w", "d"}
		var roles []*role
		for _, n := range names {
			if rapid.Bool().Draw(t, "has-"+n) {
				roles = append(roles, c.roleFor(n))
			}
		}
		if len(roles) == 0 {
			return
		}
		c.totalQ = qv{100000, 100000}
		grow := func(label string) {
			r := roles[rapid.IntRange(0, len(roles)-1).Draw(t, label)]
			r.leaf.change(qv{int64(rapid.IntRange(1, 4).Draw(t, label+"-q")) * 1000, 500}, +1, c.totalQ)
		}
		for i := rapid.IntRange(0, 10).Draw(t, "allocs"); i > 0; i-- {
			grow("pre")
		}
		rn := &run{c: c}
		want := naiveLeaves(c.tree[""], nil)
		it := rn.roles()
		var got []*drfNode
		stop := rapid.IntRange(0, len(want)).Draw(t, "freeze-at")
		for l := it.next(); l != nil; l = it.next() {
			got = append(got, l)
			if len(got) == stop {
				it.freeze()
				grow("mid") // the tree changes; the walk must not see it
				rn.gives++
				rn.drfOrderOK = false
			}
		}
		if fmt.Sprint(leafNames(got)) != fmt.Sprint(leafNames(want)) {
			t.Fatalf("walk %v, want %v", leafNames(got), leafNames(want))
		}
		// Once a walk completes without allocations, it is reused.
		rn2 := &run{c: c}
		first := leafNames(collect(rn2.roles()))
		if !rn2.drfOrderOK {
			t.Fatalf("a completed walk was not kept")
		}
		if again := leafNames(collect(rn2.roles())); fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("reused order %v, walked %v", again, first)
		}
	})
}

func collect(it *roleIter) []*drfNode {
	var out []*drfNode
	for l := it.next(); l != nil; l = it.next() {
		out = append(out, l)
	}
	return out
}

func leafNames(ns []*drfNode) []string {
	var s []string
	for _, n := range ns {
		s = append(s, n.role.name)
	}
	return s
}

// TestVecGrowZeroes: growing a vector into storage an earlier, longer
// vector used reads zeros, not the old values (allocation entries reuse
// the vectors of removed ones).
func TestVecGrowZeroes(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    qv
		n    int
		want qv
	}{
		{"nil", nil, 2, qv{0, 0}},
		{"longer already", qv{1, 2, 3}, 2, qv{1, 2, 3}},
		{"room with stale values", append(qv{7, 8, 9}[:0], 5), 3, qv{5, 0, 0}},
		{"no room", qv{1}, 3, qv{1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.grow(tc.n); !sameVec(got, tc.want) || len(got) != len(tc.want) {
				t.Fatalf("grow(%v, %d) = %v, want %v", tc.v, tc.n, got, tc.want)
			}
		})
	}
	// The case the filter state machine found: an entry reuses the
	// storage of a removed cpus+mem entry for cpus alone, then grows.
	stale := qv{1000, 128000}
	e := append(stale[:0], 1000)
	if got := e.add(qv{1000, 128000}); !sameVec(got, qv{2000, 128000}) {
		t.Fatalf("add after reuse = %v, want [2000 128000]", got)
	}
}

// TestFilterBitReuse: the 64 filter mask bits go round; a framework node
// created after 64 others shares its bit with an earlier node, on an
// agent where that earlier node has a live filter and a removed node a
// stale one. The shared bit only sends checks to the entries (it must
// not filter the new node), and dropping the other entries (stale, then
// expired) keeps the new node's filter in force.
func TestFilterBitReuse(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCore(Options{Interval: time.Second})
	c.addAgent("a1", nil, resources.MustParse("cpus:1;mem:64"), nil)
	a := c.agents["a1"]
	node := func(id string) *drfNode {
		c.addFramework(id, &mesos.FrameworkInfo{Role: proto.String("r")}, nil, true, FrameworkOptions{})
		return c.frameworks[id].nodes["r"]
	}
	q := c.names.vecOf(resources.MustParse("cpus:1;mem:64"))
	old := node("old")
	addFilter(old, a, q, now.Add(10*time.Second))
	gone := node("gone")
	addFilter(gone, a, q, now.Add(time.Hour))
	c.removeFramework("gone") // its entry goes stale
	var fresh *drfNode
	for i := 0; fresh == nil; i++ {
		if i > 200 {
			t.Fatal("no node got old's bit")
		}
		id := fmt.Sprintf("f%d", i)
		if n := node(id); n.fbit == old.fbit {
			fresh = n
		} else {
			c.removeFramework(id)
		}
	}
	if filtered(fresh, a, q, now) {
		t.Fatal("a node sharing a filtered node's bit is filtered")
	}
	addFilter(fresh, a, q, now.Add(time.Minute)) // drops gone's stale entry
	if !filtered(fresh, a, q, now) || !filtered(old, a, q, now) {
		t.Fatal("filters lost when a stale entry was dropped")
	}
	now = now.Add(20 * time.Second)
	if filtered(old, a, q, now) { // expired: dropped, mask rebuilt
		t.Fatal("expired filter in force")
	}
	if !filtered(fresh, a, q, now) {
		t.Fatal("the filter sharing the expired one's bit was lost")
	}
	if a.filterMask&fresh.fbit == 0 || len(a.filters) != 1 || fresh.nfilters != 1 || old.nfilters != 0 {
		t.Fatalf("after expiry: mask %x, %d entries, nfilters fresh %d old %d", a.filterMask, len(a.filters), fresh.nfilters, old.nfilters)
	}
}

// TestOfferCandidates: an agent whose free pool is below
// --min_allocatable_resources (disk only, as in a cluster full of tasks)
// stays a candidate but is not visited by a run, unless a quota (its
// headroom counts every free resource) or a framework's own minimum
// (which may admit it) needs it.
func TestOfferCandidates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCore(Options{Interval: time.Second})
	c.addAgent("a0", nil, resources.MustParse("cpus:1;mem:64;disk:100"), nil)
	c.addFramework("f", &mesos.FrameworkInfo{Role: proto.String("r")}, nil, true, FrameworkOptions{})
	offered := c.allocate(now).offers["f"]["r"]["a0"]
	if offered.Scalar("disk") != 100 {
		t.Fatalf("offered %v, want the whole agent", offered)
	}
	// The framework keeps the cpus and mem, and gives the disk back.
	c.recoverResources("f", "a0", resources.MustParse("disk:100"), nil, now)
	slot := c.agents["a0"].slot
	if !c.cand.has(slot) || c.offerCand.has(slot) {
		t.Fatalf("disk only free: candidate %v, offer candidate %v; want true, false", c.cand.has(slot), c.offerCand.has(slot))
	}
	if got := c.runAgents(); got != &c.offerCand {
		t.Error("no quota and no framework minimum: the run does not visit the offer candidates only")
	}
	if res := c.allocate(now); len(res.offers) != 0 {
		t.Errorf("offered %v below the minimum", res.offers)
	}
	c.updateQuota("r", Quota{Guarantees: map[string]float64{"disk": 50}})
	if got := c.runAgents(); got != &c.cand {
		t.Error("with a quota the run does not visit every candidate")
	}
	c.updateQuota("r", Quota{})
	// What the framework gives back passes the minimum again.
	c.recoverResources("f", "a0", resources.MustParse("cpus:1;mem:64"), nil, now)
	if !c.offerCand.has(slot) {
		t.Error("cpus and mem free again, but not an offer candidate")
	}
}
