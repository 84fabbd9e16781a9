package paper

import (
	"context"
	"testing"
	"time"
)

// A small Fig. 10 (smoke: 100 agents, 10 frameworks of 2 s tasks)
// through a real master: the agents come busy, and probes subscribe, get
// an offer and see their task run while the load churns.
func TestOverheadSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real masters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Overhead(ctx, testEnv(t), OverheadConfig{Agents: []int{100}, Frameworks: 10,
		TaskMean: 2 * time.Second, TaskStdDev: 500 * time.Millisecond, Probes: 5, Steady: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Points[0]
	t.Logf("%+v", p)
	if p.Slots != 200 || p.Allocated < 0.9 || p.Probes != 5 || p.TimedOut != 0 {
		t.Fatalf("slots %d, %.0f%% allocated, %d probes (%d timed out)", p.Slots, 100*p.Allocated, p.Probes, p.TimedOut)
	}
	if p.P50MS <= 0 || p.P99MS < p.P50MS || p.MaxMS < p.P99MS || p.LaunchP50MS <= 0 {
		t.Fatalf("latencies %+v", p)
	}
}
