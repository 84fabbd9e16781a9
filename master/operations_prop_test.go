package master

import (
	"fmt"
	"testing"

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
