package cgroups

import (
	"path/filepath"
	"strconv"
	"testing"

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
