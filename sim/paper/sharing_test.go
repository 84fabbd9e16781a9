package paper

import (
	"context"
	"testing"
	"time"
)

// A small Table 4 (smoke: 16 agents, a twentieth of the time, a tenth of the jobs)
// through a real master: every kind completes its work in both
// scenarios, the samples cover the run, and the speedups are computed.
func TestSharingSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real masters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Sharing(ctx, testEnv(t), SharingConfig{Agents: 16, TimeScale: 0.05, BatchJobs: 0.1, BatchSize: 0.05,
		GangRanks: 4, ElasticPeak: 4, ShortRate: 2, SampleEvery: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]SharingRun{"static": res.Static, "shared": res.Shared} {
		for _, k := range Kinds {
			o := r.Kinds[k]
			t.Logf("%s %-8s jobs %3d sum %6.1fs failed %d demand met %.2f", name, k, o.Jobs, o.SumSeconds, o.Failed, o.DemandMet)
			if o.Jobs == 0 || o.Failed > 0 {
				t.Errorf("%s: %s ran %d jobs, %d failed", name, k, o.Jobs, o.Failed)
			}
		}
		if r.Kinds[KindBatch].Jobs != 12 || r.Kinds[KindGang].Jobs != 8 {
			t.Errorf("%s: %d batch and %d gang jobs, want 12 and 8", name, r.Kinds[KindBatch].Jobs, r.Kinds[KindGang].Jobs)
		}
		if len(r.Samples) < 5 || r.Utilization <= 0 || r.Utilization > 1 {
			t.Errorf("%s: %d samples, utilization %.2f", name, len(r.Samples), r.Utilization)
		}
	}
	for _, k := range Kinds {
		if res.Speedup[k] <= 0 {
			t.Errorf("no speedup for %s: %v", k, res.Speedup)
		}
	}
	t.Logf("speedups %v", res.Speedup)
}
