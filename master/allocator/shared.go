package allocator

import (
	"fmt"

	"mezzo/resources"
)

// Shared resources (persistent volumes created with `shared {}` by a
// framework with SHARED_RESOURCES) are offered as Mesos's hierarchical
// allocator offers them:
//
//   - They are never part of an agent's free pool (agent.free): the agent
//     keeps its total's shared resources apart (agent.shared), one copy
//     each, and every run may offer each of them again, even while tasks
//     use it or an earlier offer holds it, so several tasks and frameworks
//     of the role use one volume at once.
//   - Within one run each is offered at most once per agent (Mesos's
//     offeredSharedResources: the quota and fair stages would otherwise
//     offer it twice), to the first framework that takes the agent for a
//     role the volume is allocatable to.
//   - Frameworks without SHARED_RESOURCES never get them (Mesos's
//     stripIncapableResources): the rest of the agent is offered to them
//     as if the volume were not there.
//   - An allocation entry may hold several copies (one per offer or task:
//     resources.Resources counts them); a copy comes back when an offer is
//     declined or a task ends. The master adds copies with UpdateAllocation
//     (nothing → copies) when tasks of one ACCEPT use more copies than its
//     offers held (as Mesos's master does).
//   - In shares, a shared resource counts once per holder and agent
//     however many copies it holds (Mesos's sorter): once for a framework
//     in a role, once for the role (even if several of its frameworks hold
//     it). Entries' stored quantities (allocation.q, uq) and the free
//     vectors are those of the non-shared part; track and untrack add the
//     shared part to the sorters through chargeShared.
//
// Mesos's quota stage offers them with a role's guarantees; mezzo's does
// the same. The revocable stage never offers them (idle reservations
// exclude volumes).

// sharedHeld is how much of agent a's shared resources a framework's
// allocation in a role (node) and the role as a whole (role) count in
// shares: each distinct shared resource once.
type sharedHeld struct {
	node, role qv
}

// sharedHeldBy returns what framework fid in role rn and role rn hold of
// shared resources on a, as counted in shares.
func (c *core) sharedHeldBy(a *agent, fid, rn string) sharedHeld {
	var mine, role resources.Resources
	for i := range a.alloc {
		e := &a.alloc[i]
		if e.role != rn || !e.res.HasShared() {
			continue
		}
		sh := e.res.Shared()
		role = role.Add(sh)
		if e.fw == fid {
			mine = sh
		}
	}
	// vecOf counts a shared resource once however many copies it holds.
	return sharedHeld{node: c.names.vecOf(mine), role: c.names.vecOf(role)}
}

// chargeShared brings the sorters up to date after a change of fid's
// allocation in role rn on a that involved shared resources: before is
// sharedHeldBy from before the change; n is fid's node in rn's sorter
// (nil if it has none).
func (c *core) chargeShared(a *agent, fid, rn string, n *drfNode, before sharedHeld) {
	after := c.sharedHeldBy(a, fid, rn)
	if r := c.roles[rn]; r != nil {
		if d := after.role.clone().sub(before.role); !d.isZero() {
			r.leaf.adjust(d, c.totalQ)
		}
	}
	if n != nil {
		if d := after.node.clone().sub(before.node); !d.isZero() {
			n.adjust(d, c.totalQ)
		}
	}
}

// setShared keeps a.shared the shared part of a's total.
func (a *agent) setShared(total resources.Resources) {
	a.shared, a.hasShared = resources.Resources{}, total.HasShared()
	if a.hasShared {
		a.shared = total.Shared()
	}
}

// sharedLeft is what of a's shared resources the current run has not
// offered yet.
func (rn *run) sharedLeft(a *agent) resources.Resources {
	if !a.hasShared || a.sharedRun != rn.c.runSeq {
		return a.shared
	}
	return a.shared.Subtract(a.sharedOff)
}

// offeredShared records that the current run offered res (shared) on a.
func (rn *run) offeredShared(a *agent, res resources.Resources) {
	if a.sharedRun != rn.c.runSeq {
		a.sharedRun, a.sharedOff = rn.c.runSeq, resources.Resources{}
	}
	a.sharedOff = a.sharedOff.Add(res)
}

// sharedOffer is what a SHARED_RESOURCES framework of a role is offered
// on an agent besides the role's part of the free pool: the shared
// resources left in this run that are allocatable to the role, and the
// quantities and minimum-allocatable verdict of the whole (free part plus
// these). res is empty for almost every agent.
type sharedOffer struct {
	res   resources.Resources
	q     qv // quantities of the free part plus res
	minOK bool
}

// sharedFor returns the shared part of an offer to role rn whose free part
// has quantities q, out of left (sharedLeft).
func (c *core) sharedFor(left resources.Resources, rn string, q qv) sharedOffer {
	if left.IsEmpty() {
		return sharedOffer{}
	}
	res := left.AllocatableTo(rn)
	if res.IsEmpty() {
		return sharedOffer{}
	}
	all := q.clone().add(c.names.vecOf(res))
	return sharedOffer{res: res, q: all, minOK: c.minAllocatableOK(all)}
}

// pick returns what framework node n is offered, given the role's free
// part (res, q, minOK) and the shared part s: the free part alone unless n's
// framework has SHARED_RESOURCES.
func (s *sharedOffer) pick(n *drfNode, res resources.Resources, q qv, minOK bool) (resources.Resources, qv, bool, bool) {
	if s.res.IsEmpty() || !n.fw.shared {
		return res, q, minOK, false
	}
	return res.Add(s.res), s.q, s.minOK, true
}

// addSharedCopies records that framework f holds more copies of shared
// resources it was offered on a (to, with allocation info naming the role
// or without: the role whose allocation holds them): tasks of one ACCEPT
// used more copies than its offers held. Each must exist in a's total and
// already be in f's allocation there.
func (c *core) addSharedCopies(a *agent, f *framework, to resources.Resources) error {
	if !to.NonShared().IsEmpty() {
		return fmt.Errorf("%s: only copies of shared resources can be added to an allocation", to)
	}
	roles := to.AllocationRoles()
	toU := to.WithoutAllocationInfo()
	var rn string
	switch {
	case len(roles) > 1 || (len(roles) == 1 && !to.ByAllocationRole("").IsEmpty()):
		return fmt.Errorf("%s is allocated to several roles", to)
	case len(roles) == 1:
		rn = roles[0]
	default:
		// The first role, by name, whose allocation holds them.
		for i := range a.alloc {
			e := &a.alloc[i]
			if e.fw == f.id && (rn == "" || e.role < rn) && toU.SharedIn(e.res).Equal(toU) {
				rn = e.role
			}
		}
	}
	held := a.alloc.get(f.id, rn)
	if rn == "" || held.IsEmpty() || !toU.SharedIn(held).Equal(toU) {
		return fmt.Errorf("framework %s does not hold %s on agent %s", f.id, toU, a.id)
	}
	if !toU.SharedIn(a.total).Equal(toU) {
		return fmt.Errorf("agent %s total %s does not hold %s", a.id, a.total, toU)
	}
	c.track(a, f, rn, f.nodes[rn], toU, nil, nil, false)
	return nil
}
