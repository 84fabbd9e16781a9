package paper

import (
	"context"
	"testing"
	"time"
)

// A small Fig. 8 (smoke: 20 agents, 4 frameworks of 12 tasks) through a
// real master: every task runs, static partitions see the locality their
// share of the replicas allows, and a delay raises locality over none.
func TestLocalitySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real masters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Locality(ctx, testEnv(t), LocalityConfig{Agents: 20, AgentResources: "cpus:2;mem:8192",
		Frameworks: 4, Tasks: 12, LocalTask: 300 * time.Millisecond, Delays: []time.Duration{0, 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scenarios) != 3 {
		t.Fatalf("%d scenarios", len(res.Scenarios))
	}
	for _, s := range res.Scenarios {
		t.Logf("%-30s locality %5.1f%%  job %.2fs  (%d tasks)", s.Name, 100*s.Locality, s.JobSeconds, s.Tasks)
		if s.Tasks != 4*12 || len(s.JobSecondsEach) != 4 {
			t.Fatalf("%s: %d tasks, %d jobs", s.Name, s.Tasks, len(s.JobSecondsEach))
		}
	}
	static, none, delayed := res.Scenarios[0], res.Scenarios[1], res.Scenarios[2]
	// With 5 agents of 20 per partition and 3 replicas, a block has a
	// copy in a partition with probability 1-(15/20)^3 = 58%.
	if static.Locality > 0.8 {
		t.Errorf("static partitions %.0f%% local: more than their replicas allow", 100*static.Locality)
	}
	if delayed.Locality < none.Locality || delayed.Locality < 0.8 {
		t.Errorf("a 2 s delay gave %.0f%% locality (none: %.0f%%)", 100*delayed.Locality, 100*none.Locality)
	}
}
