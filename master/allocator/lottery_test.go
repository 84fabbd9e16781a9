package allocator

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// TestLotteryProportionalToWeights: over many single-agent runs, a role
// with three times the tickets wins about three times as often.
func TestLotteryProportionalToWeights(t *testing.T) {
	c := newCore(Options{Weights: map[string]float64{"heavy": 3, "light": 1}})
	c.order = orderLottery
	c.addAgent("a1", nil, resources.MustParse("cpus:1;mem:64"), nil)
	for _, r := range []string{"heavy", "light"} {
		c.addFramework("f-"+r, &mesos.FrameworkInfo{Role: proto.String(r)}, nil, true, FrameworkOptions{})
	}
	wins := map[string]int{}
	now := time.Now()
	const runs = 4000
	for i := 0; i < runs; i++ {
		res := c.allocate(now)
		for fid, o := range res.offers {
			for role, byAgent := range o {
				wins[role]++
				c.recoverResources(fid, "a1", byAgent["a1"], nil, now)
			}
		}
	}
	frac := float64(wins["heavy"]) / runs
	if frac < 0.70 || frac > 0.80 {
		t.Fatalf("heavy won %.3f of runs (%v), want about 0.75", frac, wins)
	}
}

// TestMetricsKeys checks the Mesos metric names after a run with quota.
func TestMetricsKeys(t *testing.T) {
	s, err := NewSync(Default, Options{Offer: func(string, Offers) {}})
	if err != nil {
		t.Fatal(err)
	}
	s.AddAgent("a1", nil, resources.MustParse("cpus:4;mem:1024"), nil)
	s.UpdateQuota("q", Quota{Guarantees: map[string]float64{"cpus": 2}, Limits: map[string]float64{"cpus": 3}})
	s.AddFramework("f", &mesos.FrameworkInfo{Role: proto.String("q")}, nil, true, FrameworkOptions{})
	s.Run(time.Now())
	m := s.Metrics()
	for k, want := range map[string]float64{
		"allocator/mesos/allocation_runs":                                   1,
		"allocator/mesos/roles/q/shares/dominant":                           1, // all the memory
		"allocator/mesos/quota/roles/q/resources/cpus/guarantee":            2,
		"allocator/mesos/quota/roles/q/resources/cpus/limit":                3,
		"allocator/mesos/quota/roles/q/resources/cpus/offered_or_allocated": 3,
		"allocator/mesos/resources/cpus/total":                              4,
		"allocator/mesos/resources/mem/offered_or_allocated":                1024,
		"allocator/mesos/allocation_run_ms/count":                           1,
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	for _, k := range []string{"allocator/mesos/allocation_run_ms", "allocator/mesos/allocation_run_ms/p50", "allocator/mesos/allocation_run_ms/p99"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}

}
