package oversub

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"mezzo/resources"

	"pgregory.net/rapid"
)

func tenant(id, res string, startedSecs int, evicting bool) Holder {
	return Holder{ContainerID: id, Resources: rev(res), Tenant: true, Evicting: evicting, Started: t0.Add(time.Duration(startedSecs) * time.Second)}
}

func regularHolder(id, res string) Holder {
	return Holder{ContainerID: id, Resources: resources.MustParse(res), Started: t0}
}

func evictedIDs(e Eviction) []string {
	var ids []string
	for _, h := range e.Evict {
		ids = append(ids, h.ContainerID)
	}
	return ids
}

// Seed (oversubscription-for-reservation): "When the resources are
// requested back by the Lender Framework, some of the Tenant Framework's
// tasks are evicted and the original resource offer guarantee is
// preserved."
func TestPlanEviction(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      EvictionRequest
		want     []string
		startNow bool
		err      error
	}{
		{name: "room to spare evicts nobody", req: EvictionRequest{Total: resources.MustParse("cpus:4"),
			Holders: []Holder{tenant("a", "cpus:1", 1, false)}, Launch: resources.MustParse("cpus:2")},
			startNow: true},
		{name: "the newest tenant goes first", req: EvictionRequest{Total: resources.MustParse("cpus:4"),
			Holders: []Holder{tenant("old", "cpus:2", 1, false), tenant("new", "cpus:2", 2, false)}, Launch: resources.MustParse("cpus:2")},
			want: []string{"new"}},
		{name: "fewer evictions beat newer ones", req: EvictionRequest{Total: resources.MustParse("cpus:6"),
			Holders: []Holder{tenant("big", "cpus:3", 1, false), tenant("n1", "cpus:1", 5, false), tenant("n2", "cpus:1", 6, false), tenant("n3", "cpus:1", 7, false)},
			Launch:  resources.MustParse("cpus:3")},
			want: []string{"big"}},
		{name: "every dimension must fit", req: EvictionRequest{Total: resources.MustParse("cpus:4;mem:4096"),
			Holders: []Holder{tenant("cpu-heavy", "cpus:2;mem:256", 3, false), tenant("mem-heavy", "cpus:0.5;mem:3072", 1, false)},
			Launch:  resources.MustParse("cpus:1;mem:2048")},
			want: []string{"mem-heavy"}},
		{name: "regular containers are never chosen", req: EvictionRequest{Total: resources.MustParse("cpus:4"),
			Holders: []Holder{regularHolder("svc", "cpus:2"), tenant("t", "cpus:2", 9, false)}, Launch: resources.MustParse("cpus:1")},
			want: []string{"t"}},
		{name: "a launch that cannot fit evicts nobody", req: EvictionRequest{Total: resources.MustParse("cpus:4"),
			Holders: []Holder{regularHolder("svc", "cpus:3"), tenant("t", "cpus:1", 9, false)}, Launch: resources.MustParse("cpus:2")},
			err: ErrLaunchDoesNotFit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanEviction(tc.req)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if ids := evictedIDs(got); !reflect.DeepEqual(ids, tc.want) || got.StartNow != tc.startNow {
				t.Fatalf("evict %v startNow %v; want %v %v", ids, got.StartNow, tc.want, tc.startNow)
			}
		})
	}
	if _, err := PlanEviction(EvictionRequest{Holders: []Holder{tenant("x", "cpus:1", 0, false), tenant("x", "cpus:1", 0, false)}}); err == nil {
		t.Error("a container listed twice was accepted")
	}
}

// Seed (oversubscription-for-reservation), "Case 1: Over evicting (1)": a
// normal launchTask arrives while a revocable task is terminating. The
// terminating tenant's resources are on their way back, so nobody else is
// evicted; the launch waits for them ("Target: Avoid over evicting").
func TestEvictionDesignCase1(t *testing.T) {
	total := resources.MustParse("cpus:4")
	holders := []Holder{tenant("ending", "cpus:2", 1, true), tenant("other", "cpus:2", 2, false)}
	got, err := PlanEviction(EvictionRequest{Total: total, Holders: holders, Launch: resources.MustParse("cpus:2")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Evict) != 0 || got.StartNow {
		t.Fatalf("evict %v startNow %v; want nobody evicted and the launch waiting", evictedIDs(got), got.StartNow)
	}
	// The terminating tenant is gone: total >= occupied + occupiedRev + evicting holds.
	got, err = PlanEviction(EvictionRequest{Total: total, Holders: holders[1:], Launch: resources.MustParse("cpus:2")})
	if err != nil || len(got.Evict) != 0 || !got.StartNow {
		t.Fatalf("after the tenant ended: evict %v startNow %v err %v; want the launch to start", evictedIDs(got), got.StartNow, err)
	}
}

// Seed (oversubscription-for-reservation), "Case 2: Over evicting (2)": two
// normal launchTasks arrive while the first one's victims are still being
// evicted. The second picks only what it needs on top of the first; a third
// that cannot fit evicts nobody. The agent's view after each step is what it
// would pass next: admitted launches count as regular holders, victims as
// evicting.
func TestEvictionDesignCase2(t *testing.T) {
	total := resources.MustParse("cpus:4")
	holders := []Holder{tenant("A", "cpus:2", 1, false), tenant("B", "cpus:2", 2, false)}
	step := func(launch string) Eviction {
		t.Helper()
		got, err := PlanEviction(EvictionRequest{Total: total, Holders: holders, Launch: resources.MustParse(launch)})
		if err != nil {
			t.Fatalf("launch %s: %v", launch, err)
		}
		for _, v := range got.Evict {
			for i := range holders {
				if holders[i].ContainerID == v.ContainerID {
					holders[i].Evicting = true
				}
			}
		}
		holders = append(holders, regularHolder(fmt.Sprintf("L%d", len(holders)), launch))
		return got
	}
	if got := step("cpus:2"); !reflect.DeepEqual(evictedIDs(got), []string{"B"}) || got.StartNow {
		t.Fatalf("first launch: evict %v startNow %v; want [B], waiting", evictedIDs(got), got.StartNow)
	}
	if got := step("cpus:1"); !reflect.DeepEqual(evictedIDs(got), []string{"A"}) || got.StartNow {
		t.Fatalf("second launch: evict %v startNow %v; want [A] only, waiting", evictedIDs(got), got.StartNow)
	}
	// One cpu is still free once A and B have ended: a launch of one more
	// needs no victim; a launch of two cannot fit at all.
	if got, err := PlanEviction(EvictionRequest{Total: total, Holders: holders, Launch: resources.MustParse("cpus:1")}); err != nil || len(got.Evict) != 0 {
		t.Fatalf("third launch: evict %v err %v; want no victim", evictedIDs(got), err)
	}
	if got, err := PlanEviction(EvictionRequest{Total: total, Holders: holders, Launch: resources.MustParse("cpus:2")}); !errors.Is(err, ErrLaunchDoesNotFit) || len(got.Evict) != 0 {
		t.Fatalf("oversized launch: evict %v err %v; want ErrLaunchDoesNotFit and no victim", evictedIDs(got), err)
	}
}

// genRequest draws an agent with up to 3 regular containers and up to 7
// tenants (some already evicting), cpus in halves and mem in 256 MB steps
// so that the arithmetic is exact.
func genRequest(t *rapid.T) EvictionRequest {
	amount := func(label string) string {
		return fmt.Sprintf("cpus:%g;mem:%d", float64(rapid.IntRange(0, 6).Draw(t, label+"-cpus"))/2, 256*rapid.IntRange(0, 6).Draw(t, label+"-mem"))
	}
	req := EvictionRequest{
		Total:  resources.MustParse(fmt.Sprintf("cpus:%d;mem:%d", rapid.IntRange(1, 12).Draw(t, "total-cpus"), 1024*rapid.IntRange(1, 8).Draw(t, "total-gb"))),
		Launch: resources.MustParse(amount("launch")),
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "regular") {
		req.Holders = append(req.Holders, regularHolder(fmt.Sprintf("r%d", i), amount("regular")))
	}
	for i := range rapid.IntRange(0, 7).Draw(t, "tenants") {
		req.Holders = append(req.Holders, tenant(fmt.Sprintf("t%d", i), amount("tenant"),
			rapid.IntRange(0, 4).Draw(t, "started"), rapid.Float64Range(0, 1).Draw(t, "evicting") < 0.2))
	}
	return req
}

// accounts sums the request the slow, obvious way, in floats of exact
// halves and 256s.
type accounts struct{ total, occupied, occupiedRev, evicting map[string]float64 }

func account(req EvictionRequest, evicted map[string]bool) accounts {
	a := accounts{total: req.Total.Quantities(), occupied: req.Launch.Quantities(),
		occupiedRev: map[string]float64{}, evicting: map[string]float64{}}
	for _, h := range req.Holders {
		into := a.occupied
		switch {
		case h.Evicting || evicted[h.ContainerID]:
			into = a.evicting
		case h.Tenant:
			into = a.occupiedRev
		}
		for n, v := range h.Resources.Quantities() {
			into[n] += v
		}
	}
	return a
}

// fits reports total >= the sum of parts, name by name.
func fits(total map[string]float64, parts ...map[string]float64) bool {
	need := map[string]float64{}
	for _, p := range parts {
		for n, v := range p {
			need[n] += v
		}
	}
	for n, v := range need {
		if total[n] < v-1e-9 {
			return false
		}
	}
	return true
}

// oracle enumerates every subset of the evictable tenants and returns the
// best: fewest members, then newest (members sorted newest first compared
// position by position, start time then container id).
func oracle(req EvictionRequest) ([]string, bool) {
	var cands []Holder
	for _, h := range req.Holders {
		if h.Tenant && !h.Evicting {
			cands = append(cands, h)
		}
	}
	newer := func(a, b Holder) bool {
		if !a.Started.Equal(b.Started) {
			return a.Started.After(b.Started)
		}
		return a.ContainerID < b.ContainerID
	}
	sort.Slice(cands, func(i, j int) bool { return newer(cands[i], cands[j]) })
	var best []int
	found := false
	for mask := 0; mask < 1<<len(cands); mask++ {
		evicted := map[string]bool{}
		var idx []int
		for i := range cands {
			if mask&(1<<i) != 0 {
				evicted[cands[i].ContainerID] = true
				idx = append(idx, i)
			}
		}
		a := account(req, evicted)
		if !fits(a.total, a.occupied, a.occupiedRev) {
			continue
		}
		if !found || len(idx) < len(best) || len(idx) == len(best) && lexLess(idx, best) {
			best, found = idx, true
		}
	}
	var ids []string
	for _, i := range best {
		ids = append(ids, cands[i].ContainerID)
	}
	return ids, found
}

func lexLess(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Properties of the eviction arithmetic against the naive oracle: after
// eviction the design's inequality holds once the evicting drain, no
// regular or already-evicting container is chosen, the choice is minimal in
// count and, among minimal sets, the newest; StartNow is the inequality
// itself; and a launch that cannot fit evicts nobody.
func TestPlanEvictionProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		got, err := PlanEviction(req)
		base := account(req, nil)
		if !fits(base.total, base.occupied) {
			if !errors.Is(err, ErrLaunchDoesNotFit) || len(got.Evict) != 0 {
				t.Fatalf("regular demand over the total: evict %v err %v", evictedIDs(got), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if got.StartNow != fits(base.total, base.occupied, base.occupiedRev, base.evicting) {
			t.Fatalf("StartNow %v disagrees with total >= occupied + occupiedRev + evicting", got.StartNow)
		}
		chosen := map[string]bool{}
		for _, h := range got.Evict {
			if !h.Tenant || h.Evicting {
				t.Fatalf("chose %+v: not an evictable tenant", h)
			}
			chosen[h.ContainerID] = true
		}
		after := account(req, chosen)
		if !fits(after.total, after.occupied, after.occupiedRev) {
			t.Fatalf("after evicting %v: total %v < occupied %v + occupiedRev %v", evictedIDs(got), after.total, after.occupied, after.occupiedRev)
		}
		want, ok := oracle(req)
		if !ok {
			t.Fatal("oracle found no set; every tenant together must suffice")
		}
		if ids := evictedIDs(got); !reflect.DeepEqual(ids, want) {
			t.Fatalf("evict %v, oracle %v", ids, want)
		}
	})
}

// The greedy fallback (used past the search budget) still makes the launch
// fit and keeps no victim it could spare.
func TestGreedyFallbackIsSufficientAndIrreducible(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		vs := make([]vec, n)
		all := make(vec, 2)
		for i := range vs {
			vs[i] = vec{int64(rapid.IntRange(0, 8).Draw(t, "a")), int64(rapid.IntRange(0, 8).Draw(t, "b"))}
			all.add(vs[i])
		}
		need := vec{int64(rapid.IntRange(0, int(all[0])).Draw(t, "na")), int64(rapid.IntRange(0, int(all[1])).Draw(t, "nb"))}
		idx := greedy(vs, need)
		got := make(vec, 2)
		for _, i := range idx {
			got.add(vs[i])
		}
		if !got.covers(need) {
			t.Fatalf("greedy %v covers %v < need %v", idx, got, need)
		}
		for _, i := range idx {
			if got.minus(vs[i]).covers(need) {
				t.Fatalf("greedy %v keeps %d although the rest cover %v", idx, i, need)
			}
		}
		if exact, ok := minimalNewest(vs, need); ok && len(exact) > len(idx) {
			t.Fatalf("exact search %v larger than greedy %v", exact, idx)
		}
	})
}
