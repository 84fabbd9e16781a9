package oversub

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// genLooks draws a sequence of looks at up to 6 containers on an agent of
// 1-16 cpus: each look advances 1-30 s and every container's cpu time by a
// rate in [0, 2×allocation]; containers may be unmeasured in a look.
type genContainer struct {
	id        string
	cpus      float64
	revocable bool
	used      float64
}

func genLooks(t *rapid.T) (capacity float64, looks [][]ContainerUsage, nows []float64) {
	capacity = float64(rapid.IntRange(1, 16).Draw(t, "capacity"))
	var cs []*genContainer
	for i := range rapid.IntRange(0, 6).Draw(t, "containers") {
		cs = append(cs, &genContainer{id: fmt.Sprintf("c%d", i),
			cpus:      float64(rapid.IntRange(1, 8).Draw(t, "cpus")) / 2,
			revocable: rapid.Bool().Draw(t, "revocable")})
	}
	now := 0.0
	for range rapid.IntRange(1, 8).Draw(t, "looks") {
		now += float64(rapid.IntRange(1, 30).Draw(t, "dt"))
		var look []ContainerUsage
		for _, c := range cs {
			c.used += rapid.Float64Range(0, 2*c.cpus).Draw(t, "rate") * 10
			st := cpu(now, c.used)
			if rapid.IntRange(0, 9).Draw(t, "unmeasured") == 0 {
				st = nil
			}
			look = append(look, ctr(c.id, fmt.Sprintf("cpus:%g", c.cpus), c.revocable, st))
		}
		looks, nows = append(looks, look), append(nows, now)
	}
	return capacity, looks, nows
}

// Whatever the usage, the slack estimate is revocable unreserved cpus only,
// never more than the regular containers' allocations less the margin and
// less what revocable containers hold.
func TestSlackEstimateBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity, looks, nows := genLooks(t)
		src := &script{}
		for _, l := range looks {
			src.snaps = append(src.snaps, Snapshot{Total: snap(fmt.Sprintf("cpus:%g", capacity)).Total, Containers: l})
		}
		e, err := NewEstimator(Config{ResourceEstimator: "slack"}, src)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range looks {
			got, err := e.Oversubscribable(context.Background(), at(nows[i]))
			if err != nil {
				t.Fatal(err)
			}
			bound := 0.0
			for _, c := range l {
				if c.Revocable() {
					bound -= c.Allocated.Scalar("cpus")
				} else {
					bound += c.Allocated.Scalar("cpus") * (1 - DefaultSlackMargin)
				}
			}
			if v := got.Scalar("cpus"); v < 0 || v > bound+1e-9 && v > 0 {
				t.Fatalf("look %d: estimate %v cpus, bound %v", i, v, bound)
			}
			if !got.NonRevocable().IsEmpty() || !got.Reserved().IsEmpty() || len(got.Names()) > 1 ||
				len(got.Names()) == 1 && got.Names()[0] != "cpus" {
				t.Fatalf("look %d: estimate %v is not revocable cpus only", i, got)
			}
		}
	})
}

// Whatever the usage, the interference controller names only revocable
// containers, each at most once; it kills when, and only when, demand
// exceeds the agent's cpus, and then the fewest that cover the excess (or
// all of them when even that is not enough). The oracle recomputes rates
// from the scripted counters.
func TestInterferenceKillsOnlyRevocable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity, looks, nows := genLooks(t)
		src := &script{}
		for _, l := range looks {
			src.snaps = append(src.snaps, Snapshot{Total: snap(fmt.Sprintf("cpus:%g", capacity)).Total, Containers: l})
		}
		q, err := NewController(Config{QoSController: "interference"}, src)
		if err != nil {
			t.Fatal(err)
		}
		type sample struct{ ts, used float64 }
		last := map[string]sample{}
		for i, l := range looks {
			cs, err := q.Corrections(context.Background(), at(nows[i]))
			if err != nil {
				t.Fatal(err)
			}
			// The oracle: regular demand from the last measured sample of
			// each, revocable containers' allocations.
			rates := map[string]float64{}
			demand := 0.0
			var revAllocs []float64
			for _, c := range l {
				r := 0.0
				if c.Statistics != nil {
					s := sample{c.Statistics.GetTimestamp(), c.Statistics.GetCpusUserTimeSecs() + c.Statistics.GetCpusSystemTimeSecs()}
					if p, ok := last[c.ContainerID]; ok {
						r = (s.used - p.used) / (s.ts - p.ts)
					}
					last[c.ContainerID] = s
				}
				if c.Revocable() {
					// A revocable container claims what it was lent.
					r = c.Allocated.Revocable().Scalar("cpus")
					revAllocs = append(revAllocs, r)
				}
				rates[c.ContainerID] = r
				demand += r
			}
			excess := demand - capacity
			sort.Sort(sort.Reverse(sort.Float64Slice(revAllocs)))
			want := 0
			for covered := 0.0; want < len(revAllocs) && covered < excess-1e-9; want++ {
				covered += revAllocs[want]
			}
			if len(cs) != want {
				t.Fatalf("look %d: %d kills, want %d (demand %v of %v cpus, revocable allocations %v)", i, len(cs), want, demand, capacity, revAllocs)
			}
			byID := map[string]ContainerUsage{}
			for _, c := range l {
				byID[c.ContainerID] = c
			}
			seen := map[string]bool{}
			for _, c := range cs {
				u, ok := byID[c.ContainerID]
				if !ok || !u.Revocable() || seen[c.ContainerID] {
					t.Fatalf("look %d: correction %+v names a regular, unknown or repeated container", i, c)
				}
				seen[c.ContainerID] = true
				if c.FrameworkID != u.FrameworkID || c.ExecutorID != u.ExecutorID || c.Type != Kill {
					t.Fatalf("look %d: correction %+v does not match its container", i, c)
				}
			}
		}
	})
}
