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

// TestPropertySharedCopies: agents with shared volumes (two roles' worth),
// frameworks of those roles with and without SHARED_RESOURCES; random
// runs, declines (with and without filters), launches that take the
// offer's copy of a volume and sometimes more copies (the master's
// UpdateAllocation from nothing), task ends, framework removals and agent
// re-registrations with their tasks' usage. Against a naive model of
// what each framework holds (outstanding offers plus running tasks):
//
//   - a framework without SHARED_RESOURCES is never offered a shared
//     resource, and an offer holds only resources its role may have;
//   - one run offers each shared volume at most once per agent, whoever
//     already holds copies of it;
//   - every allocation entry holds exactly the model's copies (so a task's
//     copy comes back when it ends, and extra copies are counted);
//   - the books balance (checkInternal: free + shared + entries = total,
//     entries' cached quantities, sorters equal to the entries with a
//     shared volume counted once per framework and once per role).
func TestPropertySharedCopies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newCore(Options{Interval: time.Second, MinAllocatable: []map[string]float64{{"disk": 1}, {"cpus": 0.01}}})
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		nAgents := rapid.IntRange(1, 3).Draw(t, "agents")
		totals := map[string]resources.Resources{}
		for i := 0; i < nAgents; i++ {
			id := fmt.Sprintf("a%d", i)
			total := resources.MustParse(fmt.Sprintf("cpus:%d;mem:1024", rapid.IntRange(1, 4).Draw(t, "cpus")))
			for _, role := range []string{"db", "web"} {
				if rapid.Bool().Draw(t, "vol-"+role) {
					total = total.Add(sharedVol(t, role, "v-"+role))
				}
			}
			totals[id] = total
			c.addAgent(id, nil, total, nil)
		}
		fws := map[string]string{}
		for i := 0; i < 5; i++ {
			// db/sub may be offered db's volumes too (a sub-role).
			id := fmt.Sprintf("f%d", i)
			role := []string{"db", "web", "db/sub"}[i%3]
			fws[id] = role
			info := &mesos.FrameworkInfo{Role: proto.String(role)}
			if rapid.Bool().Draw(t, "capable") {
				info.Capabilities = []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_SHARED_RESOURCES.Enum()}}
			}
			c.addFramework(id, info, nil, true, FrameworkOptions{})
		}
		if rapid.Bool().Draw(t, "quota") {
			// The quota stage offers too (with guarantees, the volumes).
			c.updateQuota("db", Quota{Guarantees: map[string]float64{"cpus": 1}})
		}
		type key struct{ fw, agent string }
		offers := map[key]resources.Resources{}  // outstanding
		tasks := map[key][]resources.Resources{} // running tasks' resources
		held := func(k key) resources.Resources {
			out := offers[k]
			for _, r := range tasks[k] {
				out = out.Add(r)
			}
			return out
		}
		keys := func(m map[key]resources.Resources) []key {
			var out []key
			for fw := range fws {
				for a := range totals {
					if k := (key{fw, a}); !m[k].IsEmpty() {
						out = append(out, k)
					}
				}
			}
			sortKeys(out, func(k key) string { return k.fw + "/" + k.agent })
			return out
		}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			switch rapid.IntRange(0, 6).Draw(t, "op") {
			case 0, 1: // a run
				res := c.allocate(now)
				perAgent := map[string]resources.Resources{}
				for fw, byRole := range res.offers {
					for role, byAgent := range byRole {
						for agent, r := range byAgent {
							if !r.AllocatableTo(role).Equal(r) {
								t.Fatalf("offer %s to %s (%s) holds resources of another role", r, fw, role)
							}
							if r.HasShared() && !hasCapability(c.frameworks[fw].info, mesos.FrameworkInfo_Capability_SHARED_RESOURCES) {
								t.Fatalf("offer %s to %s, which lacks SHARED_RESOURCES", r, fw)
							}
							perAgent[agent] = perAgent[agent].Add(r.Shared())
							k := key{fw, agent}
							offers[k] = offers[k].Add(r)
						}
					}
				}
				for agent, sh := range perAgent {
					if once, _ := resources.New(sh.Proto()...); !once.Equal(sh) {
						t.Fatalf("one run offered shared volumes on %s more than once: %s", agent, sh)
					}
				}
			case 2: // decline
				ks := keys(offers)
				if len(ks) == 0 {
					continue
				}
				k := rapid.SampledFrom(ks).Draw(t, "decline")
				var f *mesos.Filters
				if rapid.Bool().Draw(t, "filter") {
					f = &mesos.Filters{RefuseSeconds: proto.Float64(2)}
				}
				c.recoverResources(k.fw, k.agent, offers[k], f, now)
				delete(offers, k)
			case 3: // launch: a task on cpus and, if offered, the volume's
				// copy plus extra copies for more tasks; the rest declined
				ks := keys(offers)
				if len(ks) == 0 {
					continue
				}
				k := rapid.SampledFrom(ks).Draw(t, "launch")
				offer := offers[k]
				use := intersect(offer.NonShared(), resources.MustParse("cpus:1"))
				if sh := offer.Shared(); !sh.IsEmpty() {
					one, _ := resources.New(sh.Proto()...)
					use = use.Add(one)
					tasks[k] = append(tasks[k], use)
					for extra := rapid.IntRange(0, 2).Draw(t, "extra"); extra > 0; extra-- {
						before := c.updatesRejected
						c.updateAllocation(k.fw, k.agent, resources.Resources{}, one)
						if c.updatesRejected != before {
							t.Fatalf("adding a copy of %s offered to %s refused: %s", one, k.fw, c.lastRejected)
						}
						tasks[k] = append(tasks[k], one)
					}
				} else if !use.IsEmpty() {
					tasks[k] = append(tasks[k], use)
				}
				if rest := offer.Subtract(use); !rest.IsEmpty() {
					c.recoverResources(k.fw, k.agent, rest, nil, now)
				}
				delete(offers, k)
			case 4: // a task ends
				var ks []key
				for fw := range fws {
					for a := range totals {
						if len(tasks[key{fw, a}]) > 0 {
							ks = append(ks, key{fw, a})
						}
					}
				}
				if len(ks) == 0 {
					continue
				}
				sortKeys(ks, func(k key) string { return k.fw + "/" + k.agent })
				k := rapid.SampledFrom(ks).Draw(t, "end")
				i := rapid.IntRange(0, len(tasks[k])-1).Draw(t, "task")
				c.recoverResources(k.fw, k.agent, tasks[k][i], nil, now)
				tasks[k] = append(tasks[k][:i], tasks[k][i+1:]...)
			case 5: // the agent re-registers (a master failover): its total
				// and what its tasks use, outstanding offers gone
				agent := fmt.Sprintf("a%d", rapid.IntRange(0, nAgents-1).Draw(t, "agent"))
				used := map[string]resources.Resources{}
				for fw := range fws {
					k := key{fw, agent}
					delete(offers, k)
					for _, r := range tasks[k] {
						used[fw] = used[fw].Add(r)
					}
				}
				c.removeAgent(agent)
				c.addAgent(agent, nil, totals[agent], used)
			case 6:
				now = now.Add(time.Second)
			}
			checkInternal(t, c)
			for fw := range fws {
				for agent := range totals {
					k := key{fw, agent}
					got := c.agents[agent].alloc.get(fw, fws[fw])
					if want := held(k); !got.Equal(want) {
						t.Fatalf("%s on %s holds %s, the model %s", fw, agent, got, want)
					}
				}
			}
		}
	})
}

// sharedVol is a shared volume of 64 MB on disk reserved to role.
func sharedVol(t *rapid.T, role, id string) resources.Resources {
	r, err := resources.New(&mesos.Resource{
		Name: proto.String("disk"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(64)},
		Reservations: []*mesos.Resource_ReservationInfo{{Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(), Role: proto.String(role)}},
		Disk: &mesos.Resource_DiskInfo{
			Persistence: &mesos.Resource_DiskInfo_Persistence{Id: proto.String(id)},
			Volume:      &mesos.Volume{ContainerPath: proto.String(id), Mode: mesos.Volume_RW.Enum()},
		},
		Shared: &mesos.Resource_SharedInfo{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sortKeys[K any](ks []K, name func(K) string) {
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && name(ks[j]) < name(ks[j-1]); j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
}
