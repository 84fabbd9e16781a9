package cgroups

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"mezzo/api/mesos"
)

// revocableCPUs is cpus marked revocable (as the estimators' slack is).
func revocableCPUs(v float64) *mesos.Resource {
	r := scalar("cpus", v)
	r.Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
	return r
}

// Mesos's cgroups cpu isolator: with --revocable_cpu_low_priority a
// container holding revocable cpus gets 16 shares per cpu instead of 1024
// (at least 2), so a regular container always wins the CPU; without the
// flag, or without revocable cpus, 1024 per cpu.
func TestSharesFor(t *testing.T) {
	for _, tc := range []struct {
		rs   []*mesos.Resource
		low  bool
		want uint64
	}{
		{res(2, 64), true, 2048},
		{[]*mesos.Resource{revocableCPUs(2), scalar("mem", 64)}, true, 32},
		{[]*mesos.Resource{revocableCPUs(2), scalar("mem", 64)}, false, 2048},
		// A container mixing regular and revocable cpus is revocable whole.
		{[]*mesos.Resource{scalar("cpus", 0.1), revocableCPUs(1)}, true, 17},
		{[]*mesos.Resource{revocableCPUs(0.05)}, true, MinShares},
	} {
		lim, err := LimitsOf(tc.rs)
		if err != nil {
			t.Fatal(err)
		}
		if got := SharesFor(lim, tc.low); got != tc.want {
			t.Errorf("%v low=%v: %d shares, want %d", tc.rs, tc.low, got, tc.want)
		}
	}
}

// On a real cgroups v1 hierarchy the revocable container's cpu.shares is
// the low priority one, and a regular container beside it keeps 1024 per
// cpu.
func TestRevocableCPULowPriorityV1(t *testing.T) {
	m := testV1(t, Config{RevocableCPULowPriority: true})
	for _, c := range []struct {
		id   string
		rs   []*mesos.Resource
		want uint64
	}{
		{"regular", res(1, 64), 1024},
		{"revocable", []*mesos.Resource{revocableCPUs(2), scalar("mem", 64)}, 32},
	} {
		if err := m.Prepare(c.id, CPU, c.rs, nil); err != nil {
			t.Fatal(err)
		}
		id := c.id
		t.Cleanup(func() { _ = m.Release(id, CPU) }) // before the test root goes
		got := readTrim(t, filepath.Join(m.dir("cpu", c.id), "cpu.shares"))
		if got != strconv.FormatUint(c.want, 10) {
			t.Errorf("%s: cpu.shares = %s, want %d", c.id, got, c.want)
		}
	}
}

// The point of the low priority: a regular container and a revocable one,
// each with 1 cpu, spinning on the same CPU, the regular one gets nearly all
// of it (1024 against 16 shares: 98%; the test asks for 80%, leaving room
// for a loaded machine).
func TestRevocableLosesTheCPU(t *testing.T) {
	m := testV1(t, Config{RevocableCPULowPriority: true})
	until := strconv.FormatInt(time.Now().Add(1500*time.Millisecond).UnixNano(), 10)
	cpu := strconv.Itoa(runtime.NumCPU() - 1)
	dir := t.TempDir()
	for _, c := range []struct {
		id string
		rs []*mesos.Resource
	}{
		{"regular", res(1, 64)},
		{"revocable", []*mesos.Resource{revocableCPUs(1), scalar("mem", 64)}},
	} {
		startIn(t, m, c.id, c.rs, helper("spin", "MEZZO_CGTEST_CPU="+cpu, "MEZZO_CGTEST_UNTIL="+until,
			"MEZZO_CGTEST_DONE="+filepath.Join(dir, c.id)), CPU)
	}
	pollUntil(t, 30*time.Second, "both spinners done", func() bool {
		_, e1 := os.Stat(filepath.Join(dir, "regular"))
		_, e2 := os.Stat(filepath.Join(dir, "revocable"))
		return e1 == nil && e2 == nil
	})
	used := map[string]float64{}
	for _, id := range []string{"regular", "revocable"} {
		st, err := m.Stats(id, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		used[id] = st.CPUsUserTimeSecs + st.CPUsSystemTimeSecs
	}
	share := used["regular"] / (used["regular"] + used["revocable"])
	t.Logf("cpu seconds: regular %.3f, revocable %.3f (regular's share %.1f%%)", used["regular"], used["revocable"], 100*share)
	if used["regular"] < 0.1 || share < 0.8 {
		t.Errorf("the regular container got %.3f cpu seconds, %.1f%% of the contested CPU; want at least 80%%", used["regular"], 100*share)
	}
}

// A container about to be killed gets its CPU limits lifted (default
// shares, no CFS quota): a SIGKILLed process must still be scheduled to
// exit, and at 16 shares per cpu beside a busy service it waited seconds.
func TestUnthrottleV1(t *testing.T) {
	m := testV1(t, Config{RevocableCPULowPriority: true, EnableCFS: true})
	rs := []*mesos.Resource{revocableCPUs(0.25), scalar("mem", 64)}
	if err := m.Prepare("tenant", CPU, rs, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Release("tenant", CPU) })
	dir := m.dir("cpu", "tenant")
	if got := readTrim(t, filepath.Join(dir, "cpu.shares")); got != "4" {
		t.Fatalf("before: cpu.shares = %s, want 4 (16 per revocable cpu)", got)
	}
	if err := m.Unthrottle("tenant"); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(dir, "cpu.shares")); got != "1024" {
		t.Errorf("cpu.shares = %s, want 1024", got)
	}
	if got := readTrim(t, filepath.Join(dir, "cpu.cfs_quota_us")); got != "-1" {
		t.Errorf("cpu.cfs_quota_us = %s, want -1", got)
	}
	if err := m.Unthrottle("never-made"); err != nil {
		t.Errorf("a container without cgroups: %v", err)
	}
}
