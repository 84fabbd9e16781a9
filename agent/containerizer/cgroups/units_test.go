package cgroups

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"mezzo/api/mesos"
)

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0B"},
		{1000, "1000B"},
		{1024, "1KB"},
		{1536 * 1024, "1536KB"},
		{32 << 20, "32MB"},
		{64 << 20, "64MB"},
		{(64 << 20) + 4096, "65540KB"},
		{3 << 30, "3GB"},
		{2 << 40, "2TB"},
		{2048 << 40, "2048TB"},
	}
	for _, tt := range tests {
		if got := FormatBytes(tt.in); got != tt.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// The cpu and memory arithmetic against naive oracles.
func TestLimitArithmetic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cpus := rapid.Float64Range(0, 512).Draw(t, "cpus")
		shares := CPUShares(cpus)
		want := uint64(math.Floor(cpus * 1024))
		if want < 2 {
			want = 2
		}
		if shares != want {
			t.Fatalf("CPUShares(%v) = %d, want %d", cpus, shares, want)
		}
		quota := CFSQuotaUs(cpus)
		wq := int64(math.Floor(cpus * 100000))
		if wq < 1000 {
			wq = 1000
		}
		if quota != wq {
			t.Fatalf("CFSQuotaUs(%v) = %d, want %d", cpus, quota, wq)
		}
		w := CPUWeight(shares)
		if w < 1 || w > 10000 {
			t.Fatalf("CPUWeight(%d) = %d out of 1..10000", shares, w)
		}
		if shares2 := CPUShares(cpus + 1); CPUWeight(shares2) < w {
			t.Fatalf("CPUWeight not monotonic at %d", shares)
		}
		mem := rapid.Uint64Range(0, 1<<40).Draw(t, "mem")
		lim := MemLimitBytes(mem)
		if lim != max(mem, 32<<20) {
			t.Fatalf("MemLimitBytes(%d) = %d", mem, lim)
		}
	})
	if CPUWeight(2) != 1 || CPUWeight(262144) != 10000 || CPUWeight(1024) != 39 {
		t.Errorf("CPUWeight endpoints: %d %d %d", CPUWeight(2), CPUWeight(262144), CPUWeight(1024))
	}
}

func TestLimitsOf(t *testing.T) {
	got, err := LimitsOf([]*mesos.Resource{scalar("cpus", 1), scalar("cpus", 0.5), scalar("mem", 64), scalar("mem", 32), scalar("disk", 1000)})
	if err != nil || got.CPUs != 1.5 || got.MemBytes != 96<<20 {
		t.Errorf("LimitsOf = %+v, %v", got, err)
	}
	bad := []struct {
		r    *mesos.Resource
		want string
	}{
		{scalar("cpus", -1), `"cpus"`},
		{scalar("mem", math.NaN()), `"mem"`},
		{scalar("mem", math.Inf(1)), `"mem"`},
		{&mesos.Resource{Name: ptr("mem"), Type: mesos.Value_RANGES.Enum()}, `"mem": not a scalar`},
		{scalar("mem", 1e300), `"mem"`},
	}
	for _, b := range bad {
		if _, err := LimitsOf([]*mesos.Resource{b.r}); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("LimitsOf(%v) error = %v, want one naming %s", b.r, err, b.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, ""},
		{Config{Hierarchy: "/sys/fs/cgroup", Root: "mezzo/agents/a1"}, ""},
		{Config{Hierarchy: "relative"}, "cgroups_hierarchy"},
		{Config{Root: "../escape"}, "cgroups_root"},
		{Config{Root: "a//b"}, "cgroups_root"},
		{Config{Root: "/"}, "cgroups_root"},
		{Config{Version: 3}, "version"},
	}
	for _, tt := range tests {
		err := tt.cfg.withDefaults().validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("validate(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if err := Configure(Config{Hierarchy: "x"}); err == nil {
		t.Error("Configure accepted a relative hierarchy")
	}
}

func TestCheckID(t *testing.T) {
	for _, id := range []string{"", ".", "..", "a/b", "a\x00", "x\ny"} {
		if checkID(id) == nil {
			t.Errorf("checkID(%q) accepted", id)
		}
	}
	if err := checkID("5f0b2d2e-4c5e-4d2a-9d54-0a8c1f8d8e11"); err != nil {
		t.Error(err)
	}
}

const mountinfoV1 = `22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw
25 22 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
27 25 0:25 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
28 25 0:26 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
29 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
30 25 0:28 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
31 1 0:29 / /mnt/with\040space rw - cgroup cgroup rw,pids
`

func TestParseMountinfo(t *testing.T) {
	mounts, err := parseMountinfo(strings.NewReader(mountinfoV1))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 6 {
		t.Fatalf("got %d cgroup mounts, want 6: %+v", len(mounts), mounts)
	}
	if mounts[5].Point != "/mnt/with space" {
		t.Errorf("unescaped point = %q", mounts[5].Point)
	}
	// cpu and cpuacct are co-mounted and reached through symlinks.
	links := map[string]string{
		"/sys/fs/cgroup/cpu":     "/sys/fs/cgroup/cpu,cpuacct",
		"/sys/fs/cgroup/cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
	}
	resolve := func(p string) (string, error) {
		if l, ok := links[p]; ok {
			return l, nil
		}
		return p, nil
	}
	got := v1Controllers(mounts, "/sys/fs/cgroup", resolve)
	want := map[string]string{
		"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
		"memory": "/sys/fs/cgroup/memory", "freezer": "/sys/fs/cgroup/freezer",
	}
	if len(got) != len(want) {
		t.Fatalf("v1Controllers = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("controller %s at %q, want %q", k, got[k], v)
		}
	}
	for _, bad := range []string{"1 2 3\n", "1 2 3 4 5 6 - cgroup\n", "1 2 - cgroup cgroup rw\n"} {
		if _, err := parseMountinfo(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMountinfo(%q) accepted", bad)
		}
	}
}

func TestParseProcsAndKV(t *testing.T) {
	pids, err := parseProcs(strings.NewReader("12\n345\n\n"))
	if err != nil || len(pids) != 2 || pids[1] != 345 {
		t.Errorf("parseProcs = %v, %v", pids, err)
	}
	for _, bad := range []string{"x\n", "-1\n", "0\n"} {
		if _, err := parseProcs(strings.NewReader(bad)); err == nil {
			t.Errorf("parseProcs(%q) accepted", bad)
		}
	}
	kv, err := parseKV(strings.NewReader("low 0\nhigh 3\noom 1\noom_kill 1\n"))
	if err != nil || kv["oom_kill"] != 1 || kv["high"] != 3 {
		t.Errorf("parseKV = %v, %v", kv, err)
	}
	for _, bad := range []string{"a\n", "a b\n", "a 1 2\n", "a -1\n"} {
		if _, err := parseKV(strings.NewReader(bad)); err == nil {
			t.Errorf("parseKV(%q) accepted", bad)
		}
	}
	for _, tt := range []struct {
		in     string
		q, p   uint64
		wantOK bool
	}{
		{"50000 100000\n", 50000, 100000, true},
		{"max 100000\n", 0, 0, false},
		{"garbage", 0, 0, false},
		{"5 0", 0, 0, false},
	} {
		q, p, ok := parseCPUMax(tt.in)
		if ok != tt.wantOK || q != tt.q || p != tt.p {
			t.Errorf("parseCPUMax(%q) = %d %d %v", tt.in, q, p, ok)
		}
	}
}

func writeFixture(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const v2MemoryStat = "anon 10485760\nfile 4194304\nfile_mapped 1048576\nunevictable 0\nshmem 0\n"

// The v2 statistics and OOM report read through the same code as on a
// real cgroup2 mount, from fixture files.
func TestV2StatsFromFixture(t *testing.T) {
	hier := t.TempDir()
	m := &Manager{cfg: Config{Hierarchy: hier, Root: "mezzo"}, version: V2, v2: map[string]bool{"cpu": true, "memory": true}, groups: map[string]*group{}}
	writeFixture(t, filepath.Join(hier, "mezzo", "c1"), map[string]string{
		"cgroup.procs":   "100\n101\n",
		"cgroup.threads": "100\n101\n102\n",
		"cpu.stat":       "usage_usec 3500000\nuser_usec 2500000\nsystem_usec 1000000\nnr_periods 40\nnr_throttled 7\nthrottled_usec 250000\n",
		"cpu.max":        "150000 100000\n",
		"memory.stat":    v2MemoryStat,
		"memory.current": "16777216\n",
		"memory.max":     "67108864\n",
		"memory.low":     "67108864\n",
		"memory.peak":    "67108864\n",
		"memory.events":  "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n",
	})
	s, err := m.Stats("c1", time.Unix(10, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := Statistics{
		Timestamp: 10, Processes: 2, Threads: 3,
		CPUsUserTimeSecs: 2.5, CPUsSystemTimeSecs: 1, CPUsLimit: 1.5,
		CPUsNrPeriods: 40, CPUsNrThrottled: 7, CPUsThrottledTimeSecs: 0.25,
		MemTotalBytes: 16 << 20, MemLimitBytes: 64 << 20, MemSoftLimitBytes: 64 << 20,
		MemRSSBytes: 10 << 20, MemAnonBytes: 10 << 20, MemCacheBytes: 4 << 20, MemFileBytes: 4 << 20,
		MemMappedFileBytes: 1 << 20,
	}
	if *s != want {
		t.Errorf("Stats =\n%+v\nwant\n%+v", *s, want)
	}
	if !m.oomKilled("c1") {
		t.Error("oom_kill 1 in memory.events not seen")
	}
	l := m.limitation("c1")
	wantMsg := "Memory limit exceeded: Requested: 64MB Maximum Used: 64MB\n\nMEMORY STATISTICS: \n" + v2MemoryStat + "\n"
	if l.Message != wantMsg || l.Resources[0].GetScalar().GetValue() != 64 {
		t.Errorf("limitation = %q %v, want %q", l.Message, l.Resources, wantMsg)
	}
	// Paths and unlimited memory.
	if p := m.Paths("c1"); len(p) != 1 || p[0] != filepath.Join(hier, "mezzo", "c1") {
		t.Errorf("Paths = %v", p)
	}
	writeFixture(t, filepath.Join(hier, "mezzo", "c1"), map[string]string{"memory.max": "max\n", "cpu.max": "max 100000\n"})
	s, err = m.Stats("c1", time.Unix(10, 0))
	if err != nil || s.MemLimitBytes != 0 || s.CPUsLimit != 0 {
		t.Errorf("unlimited: %+v, %v", s, err)
	}
}

func TestV1StatsFromFixture(t *testing.T) {
	hier := t.TempDir()
	m := &Manager{cfg: Config{Hierarchy: hier, Root: "mezzo"}, version: V1, groups: map[string]*group{},
		v1: map[string]string{"cpu": filepath.Join(hier, "cpu"), "cpuacct": filepath.Join(hier, "cpuacct"), "memory": filepath.Join(hier, "memory")}}
	writeFixture(t, filepath.Join(hier, "cpu", "mezzo", "c1"), map[string]string{
		"cgroup.procs": "7\n", "cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		"cpu.shares": "2048\n", "cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n",
	})
	writeFixture(t, filepath.Join(hier, "cpuacct", "mezzo", "c1"), map[string]string{
		"cgroup.procs": "7\n8\n", "tasks": "7\n8\n9\n", "cpuacct.stat": "user 250\nsystem 50\n",
		"cpuacct.usage": "3000000000\n", "cpuacct.usage_percpu": "1500000000 1500000000\n",
	})
	writeFixture(t, filepath.Join(hier, "memory", "mezzo", "c1"), map[string]string{
		"cgroup.procs":               "7\n8\n",
		"memory.stat":                "cache 0\nrss 0\ntotal_cache 2097152\ntotal_rss 8388608\ntotal_mapped_file 1048576\ntotal_unevictable 4096\n",
		"memory.oom_control":         "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
		"memory.usage_in_bytes":      "12582912\n",
		"memory.max_usage_in_bytes":  "13631488\n",
		"memory.failcnt":             "0\n",
		"memory.limit_in_bytes":      "134217728\n",
		"memory.soft_limit_in_bytes": "134217728\n",
	})
	s, err := m.Stats("c1", time.Unix(20, 250000000))
	if err != nil {
		t.Fatal(err)
	}
	want := Statistics{
		Timestamp: 20.25, Processes: 2, Threads: 3,
		CPUsUserTimeSecs: 2.5, CPUsSystemTimeSecs: 0.5, CPUsLimit: 2,
		MemTotalBytes: 12 << 20, MemLimitBytes: 128 << 20, MemSoftLimitBytes: 128 << 20,
		MemRSSBytes: 8 << 20, MemAnonBytes: 8 << 20, MemCacheBytes: 2 << 20, MemFileBytes: 2 << 20,
		MemMappedFileBytes: 1 << 20, MemUnevictableBytes: 4096,
	}
	if *s != want {
		t.Errorf("Stats =\n%+v\nwant\n%+v", *s, want)
	}
	if m.oomKilled("c1") {
		t.Error("oomKilled with oom_kill 0")
	}
	if !strings.HasPrefix(m.limitation("c1").Message, "Memory limit exceeded: Requested: 128MB Maximum Used: 13MB\n\nMEMORY STATISTICS: \ncache 0\n") {
		t.Errorf("limitation message = %q", m.limitation("c1").Message)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add(mountinfoV1)
	f.Add("1 2 3:4 / /x rw - cgroup2 cgroup2 rw\n")
	f.Fuzz(func(t *testing.T, s string) {
		mounts, err := parseMountinfo(strings.NewReader(s))
		if err == nil {
			_ = v1Controllers(mounts, "/sys/fs/cgroup", func(p string) (string, error) { return p, nil })
		}
	})
}

func FuzzParseKV(f *testing.F) {
	f.Add("low 0\nhigh 3\noom_kill 1\n")
	f.Add("user 250\nsystem 50\n")
	f.Fuzz(func(t *testing.T, s string) {
		kv, err := parseKV(strings.NewReader(s))
		if err == nil {
			for k := range kv {
				if strings.ContainsAny(k, " \t\n") {
					t.Fatalf("key %q has blanks", k)
				}
			}
		}
		_, _ = parseProcs(bytes.NewReader([]byte(s)))
		_, _, _ = parseCPUMax(s)
	})
}

// The values written to v2 and v1 cgroups for a container's limits.
func TestResourceBlocks(t *testing.T) {
	m := &Manager{cfg: Config{EnableCFS: true, LimitSwap: true}}
	lim := Limits{CPUs: 2, MemBytes: 16 << 20}
	cpu := m.v2Resources(CPU, lim).CPU
	if *cpu.Weight != CPUWeight(2048) || cpu.Max != "200000 100000" {
		t.Errorf("v2 cpu = weight %d max %q", *cpu.Weight, cpu.Max)
	}
	mem := m.v2Resources(Memory, lim).Memory
	if *mem.Max != 32<<20 || *mem.Low != 32<<20 || *mem.Swap != 0 {
		t.Errorf("v2 memory = max %d low %d swap %d", *mem.Max, *mem.Low, *mem.Swap)
	}
	c1 := m.v1Resources(CPU, lim).CPU
	if *c1.Shares != 2048 || *c1.Quota != 200000 || *c1.Period != 100000 {
		t.Errorf("v1 cpu = %d %d %d", *c1.Shares, *c1.Quota, *c1.Period)
	}
	m1 := m.v1Resources(Memory, lim).Memory
	if *m1.Limit != 32<<20 || *m1.Reservation != 32<<20 || *m1.Swap != 32<<20 {
		t.Errorf("v1 memory = %d %d %d", *m1.Limit, *m1.Reservation, *m1.Swap)
	}
	plain := &Manager{cfg: Config{}}
	if r := plain.v2Resources(CPU, lim); r.CPU.Max != "" {
		t.Errorf("v2 cpu.max %q without CFS", r.CPU.Max)
	}
	if r := plain.v1Resources(Memory, lim); r.Memory.Swap != nil {
		t.Error("memsw limit without LimitSwap")
	}
}
