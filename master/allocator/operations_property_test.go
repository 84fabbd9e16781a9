package allocator

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// TestPropertyUpdateAllocationConserves: offers are converted by random
// operations (reserve to a role or refine to a sub-role, unreserve,
// create, destroy, grow and shrink volumes, and bogus conversions that create or lose
// resources or name resources not held), declined, accepted and
// re-offered. Against a naive oracle of each agent's total (plain
// resources arithmetic on the conversions the allocator accepted):
//
//   - a conversion never creates or loses a scalar: the cluster's and
//     each agent's quantities stay what the agents were added with, and
//     the role tree's and every framework node's allocations do not move;
//   - an accepted conversion makes the agent's total the oracle's, and the
//     framework's allocation hold to instead of from;
//   - a refused one changes nothing at all;
//   - the books balance after every step (checkInternal, including the
//     cached quantities of allocation entries), also when an agent's
//     total changes under offers (UpdateAgent: what it no longer holds
//     stops counting and those offers are rescinded);
//   - every offer holds only resources its role may be offered;
//   - each role's quota consumption is, as a naive sum says, every
//     reservation to its subtree plus the unreserved resources allocated
//     to its subtree.
func TestPropertyUpdateAllocationConserves(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newCore(Options{Interval: time.Second})
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		total := map[string]resources.Resources{}
		var totalQ qv
		nAgents := rapid.IntRange(1, 3).Draw(t, "agents")
		for i := 0; i < nAgents; i++ {
			id := fmt.Sprintf("a%d", i)
			text := fmt.Sprintf("cpus:%d;mem:%d;disk:%d;ports:[31000-31009]", rapid.IntRange(1, 8).Draw(t, "cpus"),
				128*rapid.IntRange(1, 8).Draw(t, "mem"), 256*rapid.IntRange(1, 8).Draw(t, "disk"))
			if rapid.Bool().Draw(t, "static") {
				text += ";cpus(db):1;disk(db):256"
			}
			r := resources.MustParse(text)
			c.addAgent(id, nil, r, nil)
			total[id] = r
			totalQ = totalQ.add(c.names.vecOf(r))
		}
		fws := map[string]string{} // framework → role
		for i, role := range []string{"db", "db/web", "other"} {
			id := fmt.Sprintf("f%d", i)
			fws[id] = role
			info := &mesos.FrameworkInfo{Role: proto.String(role)}
			if rapid.Bool().Draw(t, "sharedCapable") {
				info.Capabilities = []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_SHARED_RESOURCES.Enum()}}
			}
			c.addFramework(id, info, nil, true, FrameworkOptions{})
		}
		if rapid.Bool().Draw(t, "quota") {
			// The quota stage runs and allocates reserved and unreserved
			// resources; consumption is checked after every step.
			c.updateQuota("db", Quota{Guarantees: map[string]float64{"cpus": float64(rapid.IntRange(1, 6).Draw(t, "guarantee"))}})
		}
		// outstanding[fw][agent]: what fw was offered (single-role frameworks:
		// no allocation info).
		outstanding := map[string]map[string]resources.Resources{}
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			switch rapid.IntRange(0, 7).Draw(t, "op") {
			case 0, 1:
				res := c.allocate(now)
				for fw, byRole := range res.offers {
					for role, byAgent := range byRole {
						for agent, r := range byAgent {
							if !r.AllocatableTo(role).Equal(r) {
								t.Fatalf("offer %s to %s in role %s holds resources reserved elsewhere", r, fw, role)
							}
							if r.HasShared() && !c.frameworks[fw].shared {
								t.Fatalf("offer %s to %s holds shared resources but it lacks SHARED_RESOURCES", r, fw)
							}
							if outstanding[fw] == nil {
								outstanding[fw] = map[string]resources.Resources{}
							}
							outstanding[fw][agent] = outstanding[fw][agent].Add(r)
						}
					}
				}
			case 2: // decline (sometimes with a short filter)
				fw, agent, ok := pickHeld(t, outstanding)
				if !ok {
					continue
				}
				var f *mesos.Filters
				if rapid.Bool().Draw(t, "filter") {
					f = &mesos.Filters{RefuseSeconds: proto.Float64(1)}
				}
				c.recoverResources(fw, agent, outstanding[fw][agent], f, now)
				delete(outstanding[fw], agent)
			case 3:
				now = now.Add(time.Second)
			case 6: // the agent's total changes (operator RESERVE on what the
				// master believes free, or a re-registration with other
				// resources), possibly under offers the master has
				agent := fmt.Sprintf("a%d", rapid.IntRange(0, nAgents-1).Draw(t, "agent"))
				a := c.agents[agent]
				var next resources.Resources
				if rapid.Bool().Draw(t, "reregister") {
					next = resources.MustParse(fmt.Sprintf("cpus:%d;mem:%d;disk:%d;ports:[31000-31009]", rapid.IntRange(1, 8).Draw(t, "cpus"),
						128*rapid.IntRange(1, 8).Draw(t, "mem"), 256*rapid.IntRange(1, 8).Draw(t, "disk")))
				} else {
					// Part of the unreserved total, whether the allocator
					// has it free or not (an offer on its way).
					part := intersect(a.total.Unreserved(), resources.MustParse("cpus:1;mem:64"))
					to, err := part.PushReservation(dynamic(rapid.SampledFrom([]string{"db", "db/web", "other"}).Draw(t, "rrole")))
					if err != nil {
						t.Fatal(err)
					}
					next = a.total.Subtract(part).Add(to)
				}
				totalQ = totalQ.sub(c.names.vecOf(total[agent])).add(c.names.vecOf(next))
				total[agent] = next
				c.updateAgent(agent, nil, next)
				// The master rescinds the offers the allocator asks for.
				for _, rq := range c.pendingRescinds {
					if r, ok := outstanding[rq.framework][rq.agent]; ok {
						c.recoverResources(rq.framework, rq.agent, r, nil, now)
						delete(outstanding[rq.framework], rq.agent)
					}
				}
				c.pendingRescinds = nil
			default: // an operation on an outstanding offer (4, 5, 7)
				fw, agent, ok := pickHeld(t, outstanding)
				if !ok {
					continue
				}
				offer := outstanding[fw][agent]
				from, to, valid := drawConversion(t, offer, fws[fw], c.agents[agent].total)
				before := snapshot(c)
				rejected := c.updatesRejected
				c.updateAllocation(fw, agent, from, to)
				after := snapshot(c)
				if !sameVec(after.treeQ, before.treeQ) || !sameNodes(after.nodeQ, before.nodeQ) || !sameVec(c.totalQ, totalQ) {
					t.Fatalf("conversion %s -> %s moved quantities: tree %v -> %v, nodes %v -> %v, cluster %v (want %v)",
						from, to, before.treeQ, after.treeQ, before.nodeQ, after.nodeQ, c.totalQ, totalQ)
				}
				if c.updatesRejected != rejected {
					if valid {
						t.Fatalf("valid conversion %s -> %s of %s's offer %s refused: %s", from, to, fw, offer, c.lastRejected)
					}
					if !before.equal(after) {
						t.Fatalf("refused conversion %s -> %s changed the allocator's state", from, to)
					}
					continue
				}
				if !valid {
					t.Fatalf("invalid conversion %s -> %s of %s's offer %s accepted", from, to, fw, offer)
				}
				total[agent] = total[agent].Subtract(from).Add(to)
				outstanding[fw][agent] = offer.Subtract(from).Add(to)
				if a := c.agents[agent]; !a.total.Equal(total[agent]) {
					t.Fatalf("agent %s total %s, oracle %s", agent, a.total, total[agent])
				}
				if held := c.agents[agent].alloc.get(fw, fws[fw]); !held.Contains(to) {
					t.Fatalf("%s holds %s on %s, not the converted %s", fw, held, agent, to)
				}
			}
			checkInternal(t, c)
			checkConsumption(t, c)
			for id, r := range total {
				if !sameVec(c.names.vecOf(r), c.agents[id].totalQ) {
					t.Fatalf("agent %s: quantities %v, added with %v", id, c.agents[id].totalQ, c.names.vecOf(r))
				}
			}
		}
	})
}

// drawConversion draws an operation on offer by a framework of role:
// valid ones convert part of it in place; invalid ones do not conserve
// quantities or name what is not held.
//
// Volumes may be shared; a shared volume is created only under a
// persistence ID the agent does not have (the master refuses duplicates:
// two identical shared volumes would be one resource held twice).
func drawConversion(t *rapid.T, offer resources.Resources, role string, total resources.Resources) (from, to resources.Resources, valid bool) {
	switch rapid.IntRange(0, 8).Draw(t, "kind") {
	case 7, 8: // GROW_VOLUME or SHRINK_VOLUME of some volume
		for _, p := range offer.Proto() {
			if id := p.GetDisk().GetPersistence().GetId(); id != "" {
				from, to = resize(offer, id, float64(32*rapid.IntRange(1, 4).Draw(t, "by")), rapid.Bool().Draw(t, "grow"))
				return from, to, true
			}
		}
		return from, to, true
	case 0, 1: // RESERVE some unreserved scalars to role (or refine to it)
		part := intersect(offer.Filter(func(p *mesos.Resource) bool { return reservationRole(p) != role && p.GetDisk() == nil }),
			resources.MustParse(fmt.Sprintf("cpus:%d;mem:%d;disk:%d", rapid.IntRange(1, 2).Draw(t, "c"), 64*rapid.IntRange(1, 2).Draw(t, "m"), 128)))
		if part.IsEmpty() {
			return part, part, true
		}
		to, err := part.PushReservation(dynamic(role))
		if err != nil {
			return part, part, true
		}
		return part, to, true
	case 2: // UNRESERVE the role's dynamic reservations (not volumes)
		from = offer.Filter(func(p *mesos.Resource) bool { return topDynamic(p, role) && p.GetDisk().GetPersistence() == nil })
		return from, from.PopReservation(), true
	case 3: // CREATE a volume on reserved disk
		id := fmt.Sprintf("v%d", rapid.IntRange(0, 9).Draw(t, "vid"))
		shared := rapid.Bool().Draw(t, "shared") &&
			total.Filter(func(p *mesos.Resource) bool { return p.GetDisk().GetPersistence().GetId() == id }).IsEmpty()
		from, to = volume(offer, role, id, 64, shared)
		return from, to, true
	case 4: // DESTROY a volume
		from = offer.Filter(func(p *mesos.Resource) bool { return p.GetDisk().GetPersistence() != nil })
		// Several copies of a shared volume (offered in several runs)
		// are not one volume to destroy: the agent has it once.
		once, _ := resources.New(from.Proto()...)
		return from, withoutDisk(from), once.Equal(from)
	case 5: // creates resources
		from = intersect(offer, resources.MustParse("cpus:1"))
		if from.IsEmpty() {
			from = intersect(offer, resources.MustParse("mem:32"))
		}
		return from, from.Add(resources.MustParse("cpus:1")), false
	default: // not held
		return resources.MustParse("cpus:1000"), resources.MustParse("cpus(db):1000"), false
	}
}

func pickHeld(t *rapid.T, m map[string]map[string]resources.Resources) (string, string, bool) {
	var fws, agents []string
	for _, fw := range sortedKeys(m) {
		for _, a := range sortedKeys(m[fw]) {
			fws, agents = append(fws, fw), append(agents, a)
		}
	}
	if len(fws) == 0 {
		return "", "", false
	}
	i := rapid.IntRange(0, len(fws)-1).Draw(t, "held")
	return fws[i], agents[i], true
}

// state is what a conversion may or may not change, copied.
type state struct {
	treeQ qv
	nodeQ map[string]qv // framework/role → node allocation
	total map[string]resources.Resources
	alloc map[string]resources.Resources // agent/framework/role → held
}

func snapshot(c *core) state {
	s := state{treeQ: c.tree[""].alloc.clone(), nodeQ: map[string]qv{}, total: map[string]resources.Resources{}, alloc: map[string]resources.Resources{}}
	for id, f := range c.frameworks {
		for rn, n := range f.nodes {
			s.nodeQ[id+"/"+rn] = n.alloc.clone()
		}
	}
	for id, a := range c.agents {
		s.total[id] = a.total
		for _, x := range a.alloc {
			s.alloc[id+"/"+x.fw+"/"+x.role] = x.res
		}
	}
	return s
}

func (s state) equal(o state) bool {
	if !sameVec(s.treeQ, o.treeQ) || !sameNodes(s.nodeQ, o.nodeQ) || len(s.total) != len(o.total) || len(s.alloc) != len(o.alloc) {
		return false
	}
	for k, r := range s.total {
		if !r.Equal(o.total[k]) {
			return false
		}
	}
	for k, r := range s.alloc {
		if !r.Equal(o.alloc[k]) {
			return false
		}
	}
	return true
}

func sameNodes(a, b map[string]qv) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !sameVec(v, b[k]) {
			return false
		}
	}
	return true
}

// TestUpdateAllocationIgnoresUnknown: notifications racing with removals
// are ignored like every other, and not counted as refused.
func TestUpdateAllocationIgnoresUnknown(t *testing.T) {
	c := newCore(Options{})
	c.addAgent("a1", nil, resources.MustParse("cpus:1;mem:64"), nil)
	c.updateAllocation("gone", "a1", resources.MustParse("cpus:1"), resources.MustParse("cpus(r):1"))
	c.updateAllocation("gone", "nowhere", resources.MustParse("cpus:1"), resources.MustParse("cpus(r):1"))
	if c.updatesRejected != 0 || !c.agents["a1"].total.Equal(resources.MustParse("cpus:1;mem:64")) {
		t.Fatalf("unknown IDs: rejected %d, total %s", c.updatesRejected, c.agents["a1"].total)
	}
}

// checkConsumption compares the quota consumption of every role with a
// naive sum over the agents (Mesos 1.9+: reservations of the subtree,
// allocated or not, plus unreserved allocations of the subtree).
func checkConsumption(t *rapid.T, c *core) {
	qr := c.newQuotaRun(c.agentList)
	for _, rn := range []string{"db", "db/web", "other", "eng"} {
		want := map[string]float64{}
		for _, a := range c.agents {
			for _, p := range a.total.Proto() {
				if isReserved(p) && inSubtree(reservationRole(p), rn) {
					want[p.GetName()] += p.GetScalar().GetValue()
				}
			}
			for _, x := range a.alloc {
				if inSubtree(x.role, rn) {
					for name, v := range x.res.Unreserved().Quantities() {
						want[name] += v
					}
				}
			}
		}
		got := c.names.mapOf(qr.consumption(rn))
		for name := range want {
			if want[name] == 0 {
				delete(want, name)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("role %s consumes %v, naive sum %v", rn, got, want)
		}
	}
}
