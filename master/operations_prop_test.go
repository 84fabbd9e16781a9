package master

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Property: after any sequence of operator operations on an agent, valid
// or not, (1) the agent's total holds the same quantities as its flag
// resources (operations convert, never create or lose), (2) a refused
// operation changes nothing and tells the agent nothing, (3) the last set
// the agent was told to checkpoint is the total's checkpointed part, and
// (4) a new leader that learns the agent from a re-subscription with that
// set computes the same total (the failover promise).
func TestOperatorOperationsProperty(t *testing.T) {
	const flags = "cpus:4;mem:1024;disk:1000"
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		a := h.addAgent("a1", flags)
		want := resources.MustParse(flags).Quantities()
		roles := []string{"db", "web"}
		var told resources.Resources
		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			role := rapid.SampledFrom(roles).Draw(rt, "role")
			amount := rapid.IntRange(1, 600).Draw(rt, "amount")
			name := rapid.SampledFrom([]string{"cpus", "mem", "disk"}).Draw(rt, "name")
			id := fmt.Sprintf("v%d", rapid.IntRange(0, 3).Draw(rt, "id"))
			text := fmt.Sprintf("%s:%d", name, amount)
			var op *mesos.Offer_Operation
			switch rapid.IntRange(0, 3).Draw(rt, "kind") {
			case 0:
				op = reserveOp(dynRes(text, role, ""))
			case 1:
				op = unreserveOp(dynRes(text, role, ""))
			case 2:
				op = createOp(volume(id, role, float64(amount)))
			case 3:
				// Mostly a volume that exists, so that DESTROY also succeeds.
				v := volume(id, role, float64(amount))
				if vols := h.total(a).PersistentVolumes().Proto(); len(vols) > 0 && rapid.Bool().Draw(rt, "existing") {
					v = vols[rapid.IntRange(0, len(vols)-1).Draw(rt, "which")]
				}
				op = destroyOp(v)
			}
			before := h.total(a)
			err := h.s.operatorOperation(Principal{}, a.id, op, h.now)
			h.settle()
			sets, _ := a.checkpoints()
			if err != nil {
				if !h.total(a).Equal(before) || len(sets) != 0 {
					rt.Fatalf("refused %v (%v) changed the total to %v or checkpointed %v", op.GetType(), err, h.total(a), sets)
				}
				continue
			}
			if len(sets) != 1 {
				rt.Fatalf("applied %v, checkpoints %v", op.GetType(), sets)
			}
			told = sets[0]
			got := h.total(a).Quantities()
			for k, v := range want {
				if d := got[k] - v; d > 1e-9 || d < -1e-9 {
					rt.Fatalf("after %v the total holds %v, want %v", op.GetType(), got, want)
				}
			}
			if !told.Equal(h.total(a).Checkpointed()) {
				rt.Fatalf("told %v, total's checkpointed part %v", told, h.total(a).Checkpointed())
			}
		}
		h2 := newHarness(t)
		sub := agentSub("a1", flags)
		sub.AgentInfo.Id = agentID(a.id)
		sub.CheckpointedResources = told.Proto()
		a2 := h2.agentSubscribe(sub)
		if a2.id != a.id || !h2.total(a2).Equal(h.total(a)) {
			rt.Fatalf("new leader's total %v, want %v", h2.s.agents[a.id], h.total(a))
		}
	})
}

// Property: with the real allocator, after any sequence of ACCEPTs of
// operations on offered resources (each handed back at once), the
// allocator agrees with the master: it refuses none of the master's
// UpdateAllocation calls, and the next allocation offers the single
// framework exactly the agent's total in its new form.
func TestAcceptOperationsAllocatorAgrees(t *testing.T) {
	const flags = "cpus:4;mem:1024;disk:1000"
	rapid.Check(t, func(rt *rapid.T) {
		h, sa := syncHarness(t, false)
		a := h.addAgent("a1", flags)
		f := h.subscribe(roleInfo("db-fw", "db"))
		h.run(sa)
		offers := f.offers()
		steps := rapid.IntRange(1, 12).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			if got, want := offered(offers).WithoutAllocationInfo(), h.total(a); !got.Equal(want) {
				rt.Fatalf("step %d: offered %v, total %v", i, got, want)
			}
			var ops []*mesos.Offer_Operation
			for n := rapid.IntRange(1, 3).Draw(rt, "ops"); n > 0; n-- {
				amount := rapid.IntRange(1, 600).Draw(rt, "amount")
				name := rapid.SampledFrom([]string{"cpus", "mem", "disk"}).Draw(rt, "name")
				id := fmt.Sprintf("v%d", rapid.IntRange(0, 2).Draw(rt, "id"))
				text := fmt.Sprintf("%s:%d", name, amount)
				switch rapid.IntRange(0, 3).Draw(rt, "kind") {
				case 0:
					ops = append(ops, reserveOp(dynRes(text, "db", "")))
				case 1:
					ops = append(ops, unreserveOp(dynRes(text, "db", "")))
				case 2:
					ops = append(ops, createOp(volume(id, "db", float64(amount))))
				case 3:
					v := volume(id, "db", float64(amount))
					if vols := h.total(a).PersistentVolumes().Proto(); len(vols) > 0 && rapid.Bool().Draw(rt, "existing") {
						v = vols[rapid.IntRange(0, len(vols)-1).Draw(rt, "which")]
					}
					ops = append(ops, destroyOp(v))
				}
			}
			acc := acceptCall(offers, ops...)
			acc.Accept.Filters = &mesos.Filters{RefuseSeconds: proto.Float64(0)}
			f.mustCall(acc)
			if n := sa.Metrics()["allocator/mesos/allocation_updates_rejected"]; n != 0 {
				rt.Fatalf("step %d: the allocator refused %v of the master's allocation updates", i, n)
			}
			h.advance(time.Second)
			h.run(sa)
			offers = f.offers()
		}
		if got, want := offered(offers).WithoutAllocationInfo(), h.total(a); !got.Equal(want) {
			rt.Fatalf("finally offered %v, total %v", got, want)
		}
		if q := h.total(a).Quantities(); q["cpus"] != 4 || q["mem"] != 1024 || q["disk"] != 1000 {
			rt.Fatalf("total quantities %v", q)
		}
	})
}
