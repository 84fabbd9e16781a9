package bench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestTargets runs bench.Run for the configurations of the performance
// targets in docs/benchmarks-allocator.md and logs the results as JSON
// lines. It only runs when MEZZO_BENCH_TARGETS is set (it takes tens of
// seconds on the shared machine) and never asserts timing: the numbers
// are read by a human, with the load in mind. MEZZO_BENCH_TARGETS=all runs
// them all; a comma-separated list of names (10k,20k,50k,quota) some.
//
//	MEZZO_BENCH_TARGETS=all go test -run TestTargets -v ./master/allocator/bench
func TestTargets(t *testing.T) {
	sel := os.Getenv("MEZZO_BENCH_TARGETS")
	if sel == "" {
		t.Skip("set MEZZO_BENCH_TARGETS=all to run the target configurations")
	}
	cfgs := []struct {
		name string
		cfg  Config
	}{
		{"10k", Config{Agents: 10000, Frameworks: 1000}},
		{"20k", Config{Agents: 20000, Frameworks: 2000}},
		{"50k", Config{Agents: 50000, Frameworks: 1000}},
		{"quota", Config{Agents: 3000, Frameworks: 3000, Roles: 3000, Quota: true}},
	}
	want := map[string]bool{}
	for _, s := range strings.Split(sel, ",") {
		want[strings.TrimSpace(s)] = true
	}
	for _, c := range cfgs {
		if !want["all"] && !want[c.name] {
			continue
		}
		r, err := Run(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.Machine = Machine{} // the same on every line
		b, _ := json.Marshal(r)
		t.Logf("%s %s", c.name, b)
	}
}
