package cgroups

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A container grows with a second task and shrinks when it ends: cpu
// shares, CFS quota and the soft memory limit follow; the hard memory
// limit rises and never falls.
func TestUpdateV1(t *testing.T) {
	m := testV1(t, Config{EnableCFS: true, LimitSwap: true})
	for _, c := range []Controller{CPU, Memory} {
		if err := m.Prepare("grow", c, res(0.5, 64), nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Release("grow", c) })
	}
	cpu, mem := m.dir("cpu", "grow"), m.dir("memory", "grow")
	memsw := filepath.Join(mem, "memory.memsw.limit_in_bytes")
	check := func(step, shares, quota string, hard, soft int) {
		t.Helper()
		for file, want := range map[string]string{
			filepath.Join(cpu, "cpu.shares"):                 shares,
			filepath.Join(cpu, "cpu.cfs_quota_us"):           quota,
			filepath.Join(mem, "memory.limit_in_bytes"):      strconv.Itoa(hard << 20),
			filepath.Join(mem, "memory.soft_limit_in_bytes"): strconv.Itoa(soft << 20),
		} {
			if got := readTrim(t, file); got != want {
				t.Errorf("%s: %s = %s, want %s", step, filepath.Base(file), got, want)
			}
		}
		if _, err := os.Stat(memsw); err == nil { // swap accounting is on
			if got := readTrim(t, memsw); got != strconv.Itoa(hard<<20) {
				t.Errorf("%s: memory.memsw.limit_in_bytes = %s, want %d", step, got, hard<<20)
			}
		}
	}
	check("launched", "512", "50000", 64, 64)
	for _, c := range []Controller{CPU, Memory} {
		if err := m.Update("grow", c, res(1.5, 192)); err != nil {
			t.Fatal(err)
		}
	}
	check("grown", "1536", "150000", 192, 192)
	for _, c := range []Controller{CPU, Memory} {
		if err := m.Update("grow", c, res(0.5, 64)); err != nil {
			t.Fatal(err)
		}
	}
	check("shrunk", "512", "50000", 192, 64)

	if err := m.Update("never-made", CPU, res(1, 64)); err == nil {
		t.Error("updating a container that was never prepared: no error")
	}
	if err := m.Update("grow", CPU, res(0, 64)); err == nil {
		t.Error("no cpus: no error")
	}
}

func TestUpdateV2(t *testing.T) {
	m := testV2(t)
	if err := m.Check(CPU, Memory); err != nil {
		t.Skipf("skipping: %v", err)
	}
	for _, c := range []Controller{CPU, Memory} {
		if err := m.Prepare("grow", c, res(0.5, 64), nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Release("grow", c) })
	}
	dir := m.dir("", "grow")
	check := func(step string, weight uint64, hard, low int) {
		t.Helper()
		for file, want := range map[string]string{
			"cpu.weight": strconv.FormatUint(weight, 10),
			"memory.max": strconv.Itoa(hard << 20),
			"memory.low": strconv.Itoa(low << 20),
		} {
			if got := readTrim(t, filepath.Join(dir, file)); got != want {
				t.Errorf("%s: %s = %s, want %s", step, file, got, want)
			}
		}
	}
	check("launched", CPUWeight(512), 64, 64)
	for _, c := range []Controller{CPU, Memory} {
		if err := m.Update("grow", c, res(1.5, 192)); err != nil {
			t.Fatal(err)
		}
	}
	check("grown", CPUWeight(1536), 192, 192)
	for _, c := range []Controller{CPU, Memory} {
		if err := m.Update("grow", c, res(0.5, 64)); err != nil {
			t.Fatal(err)
		}
	}
	check("shrunk", CPUWeight(512), 192, 64)
}
