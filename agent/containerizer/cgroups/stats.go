package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	v1stats "github.com/containerd/cgroups/v3/cgroup1/stats"
	"github.com/containerd/cgroups/v3/cgroup2"
	v2stats "github.com/containerd/cgroups/v3/cgroup2/stats"
)

// Statistics is Mesos's ResourceStatistics (mesos.v1) for one container,
// with its field names as JSON keys, measured from the container's cgroups.
// It stands in for the generated message, which api/mesos does not carry
// yet; each field maps 1:1 to the proto field of the same name.
type Statistics struct {
	Timestamp             float64 `json:"timestamp"`
	Processes             uint32  `json:"processes,omitempty"`
	Threads               uint32  `json:"threads,omitempty"`
	CPUsUserTimeSecs      float64 `json:"cpus_user_time_secs"`
	CPUsSystemTimeSecs    float64 `json:"cpus_system_time_secs"`
	CPUsLimit             float64 `json:"cpus_limit,omitempty"`
	CPUsNrPeriods         uint32  `json:"cpus_nr_periods,omitempty"`
	CPUsNrThrottled       uint32  `json:"cpus_nr_throttled,omitempty"`
	CPUsThrottledTimeSecs float64 `json:"cpus_throttled_time_secs,omitempty"`
	MemTotalBytes         uint64  `json:"mem_total_bytes,omitempty"`
	MemTotalMemswBytes    uint64  `json:"mem_total_memsw_bytes,omitempty"`
	MemLimitBytes         uint64  `json:"mem_limit_bytes,omitempty"`
	MemSoftLimitBytes     uint64  `json:"mem_soft_limit_bytes,omitempty"`
	MemFileBytes          uint64  `json:"mem_file_bytes,omitempty"`
	MemAnonBytes          uint64  `json:"mem_anon_bytes,omitempty"`
	MemCacheBytes         uint64  `json:"mem_cache_bytes,omitempty"`
	MemRSSBytes           uint64  `json:"mem_rss_bytes,omitempty"`
	MemMappedFileBytes    uint64  `json:"mem_mapped_file_bytes,omitempty"`
	MemSwapBytes          uint64  `json:"mem_swap_bytes,omitempty"`
	MemUnevictableBytes   uint64  `json:"mem_unevictable_bytes,omitempty"`
}

// ErrNoCgroups is returned by Stats for a container that has no cgroups.
var ErrNoCgroups = errors.New("cgroups: container has no cgroups")

// Stats measures the container's usage from its cgroups at now. cpus_limit
// is the cpus the container was prepared with (or, for a container this
// process did not prepare, derived from its CFS quota or cpu shares);
// mem_limit_bytes is the cgroup's hard limit.
func (m *Manager) Stats(id string, now time.Time) (*Statistics, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	var lim Limits
	var known map[Controller]bool
	if g := m.groups[id]; g != nil {
		lim, known = g.limits, g.known
	}
	m.mu.Unlock()

	s := &Statistics{Timestamp: float64(now.UnixNano()) / 1e9}
	var err error
	if m.version == V2 {
		err = m.statsV2(id, s)
	} else {
		err = m.statsV1(id, s)
	}
	if err != nil {
		return nil, err
	}
	if known[CPU] {
		s.CPUsLimit = lim.CPUs
	}
	return s, nil
}

func (m *Manager) statsV1(id string, s *Statistics) error {
	dirs := []string{"cpu", "cpuacct", "memory"}
	cg, err := cgroup1.Load(cgroup1.StaticPath(m.relPath(id)), m.v1Hierarchy(dirs...))
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return fmt.Errorf("%w: %s", ErrNoCgroups, id)
	}
	if err != nil {
		return fmt.Errorf("cgroups: container %s: %w", id, err)
	}
	metrics, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return fmt.Errorf("cgroups: container %s: statistics: %w", id, err)
	}
	fromV1(metrics, s)
	if d := m.dir("cpu", id); d != "" {
		if s.CPUsLimit == 0 {
			s.CPUsLimit = cpusFromV1(d)
		}
	}
	if d := m.dir("memory", id); d != "" {
		if v, err := readUintFile(filepath.Join(d, "memory.soft_limit_in_bytes")); err == nil && v < 1<<62 {
			s.MemSoftLimitBytes = v
		}
	}
	m.countTasks(id, s)
	return nil
}

// fromV1 copies the v1 metrics Mesos reports. cpuacct's user and system
// times come in nanoseconds (from USER_HZ ticks); rss is total_rss of
// memory.stat and the total is memory.usage_in_bytes, as Mesos.
func fromV1(mt *v1stats.Metrics, s *Statistics) {
	if c := mt.GetCPU(); c != nil {
		s.CPUsUserTimeSecs = float64(c.GetUsage().GetUser()) / 1e9
		s.CPUsSystemTimeSecs = float64(c.GetUsage().GetKernel()) / 1e9
		if t := c.GetThrottling(); t != nil && t.GetPeriods() > 0 {
			s.CPUsNrPeriods = uint32(t.GetPeriods())
			s.CPUsNrThrottled = uint32(t.GetThrottledPeriods())
			s.CPUsThrottledTimeSecs = float64(t.GetThrottledTime()) / 1e9
		}
	}
	if mem := mt.GetMemory(); mem != nil {
		s.MemTotalBytes = mem.GetUsage().GetUsage()
		if l := mem.GetUsage().GetLimit(); l < 1<<62 { // "unlimited" is a huge page-aligned number
			s.MemLimitBytes = l
		}
		s.MemTotalMemswBytes = mem.GetSwap().GetUsage()
		s.MemRSSBytes = mem.GetTotalRSS()
		s.MemAnonBytes = mem.GetTotalRSS()
		s.MemCacheBytes = mem.GetTotalCache()
		s.MemFileBytes = mem.GetTotalCache()
		s.MemMappedFileBytes = mem.GetTotalMappedFile()
		s.MemUnevictableBytes = mem.GetTotalUnevictable()
	}
}

// cpusFromV1 derives a cpu limit from a v1 cpu cgroup: the CFS quota if
// set, else the shares.
func cpusFromV1(dir string) float64 {
	quota, qerr := readIntFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	period, perr := readUintFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if qerr == nil && perr == nil && quota > 0 && period > 0 {
		return float64(quota) / float64(period)
	}
	if shares, err := readUintFile(filepath.Join(dir, "cpu.shares")); err == nil {
		return float64(shares) / SharesPerCPU
	}
	return 0
}

func readIntFile(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var v int64
	if _, err := fmt.Sscan(string(data), &v); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func (m *Manager) statsV2(id string, s *Statistics) error {
	dir := m.dir("", id)
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrNoCgroups, id)
		}
		return err
	}
	mgr, err := cgroup2.Load(m.relPath(id), cgroup2.WithMountpoint(m.cfg.Hierarchy))
	if err != nil {
		return fmt.Errorf("cgroups: container %s: %w", id, err)
	}
	metrics, err := mgr.StatFiltered(cgroup2.StatCPU | cgroup2.StatMemory)
	if err != nil {
		return fmt.Errorf("cgroups: container %s: statistics: %w", id, err)
	}
	fromV2(metrics, s)
	if s.CPUsLimit == 0 {
		s.CPUsLimit = cpusFromV2(dir)
	}
	if v, err := readUintFile(filepath.Join(dir, "memory.low")); err == nil {
		s.MemSoftLimitBytes = v
	}
	m.countTasks(id, s)
	return nil
}

// fromV2 maps v2 metrics onto Mesos's fields: cpu.stat's user and system
// microseconds; memory.current as the total, anon as rss, file as cache.
func fromV2(mt *v2stats.Metrics, s *Statistics) {
	if c := mt.GetCPU(); c != nil {
		s.CPUsUserTimeSecs = float64(c.GetUserUsec()) / 1e6
		s.CPUsSystemTimeSecs = float64(c.GetSystemUsec()) / 1e6
		if c.GetNrPeriods() > 0 {
			s.CPUsNrPeriods = uint32(c.GetNrPeriods())
			s.CPUsNrThrottled = uint32(c.GetNrThrottled())
			s.CPUsThrottledTimeSecs = float64(c.GetThrottledUsec()) / 1e6
		}
	}
	if mem := mt.GetMemory(); mem != nil {
		s.MemTotalBytes = mem.GetUsage()
		if l := mem.GetUsageLimit(); l < 1<<62 { // "max" reads as MaxUint64
			s.MemLimitBytes = l
		}
		s.MemRSSBytes = mem.GetAnon()
		s.MemAnonBytes = mem.GetAnon()
		s.MemCacheBytes = mem.GetFile()
		s.MemFileBytes = mem.GetFile()
		s.MemMappedFileBytes = mem.GetFileMapped()
		s.MemSwapBytes = mem.GetSwapUsage()
		s.MemUnevictableBytes = mem.GetUnevictable()
		if mem.GetSwapUsage() > 0 {
			s.MemTotalMemswBytes = mem.GetUsage() + mem.GetSwapUsage()
		}
	}
}

// cpusFromV2 derives a cpu limit from cpu.max ("quota period"), if set.
func cpusFromV2(dir string) float64 {
	data, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return 0
	}
	q, p, ok := parseCPUMax(string(data))
	if !ok {
		return 0
	}
	return float64(q) / float64(p)
}

// parseCPUMax parses cpu.max: "<quota|max> <period>"; ok is false when
// there is no quota or the text is malformed.
func parseCPUMax(s string) (quota, period uint64, ok bool) {
	var qs string
	if n, err := fmt.Sscan(s, &qs, &period); n != 2 || err != nil || period == 0 {
		return 0, 0, false
	}
	q, err := parseUint(qs)
	if err != nil {
		return 0, 0, false
	}
	return q, period, true
}

// countTasks fills processes and threads from cgroup.procs and tasks
// (v1) or cgroup.threads (v2).
func (m *Manager) countTasks(id string, s *Statistics) {
	pids, err := m.pids(id)
	if err != nil {
		return
	}
	s.Processes = uint32(len(pids))
	var file string
	if m.version == V2 {
		file = filepath.Join(m.dir("", id), "cgroup.threads")
	} else if d := m.dir("cpuacct", id); d != "" {
		file = filepath.Join(d, "tasks")
	} else if d := m.dir("memory", id); d != "" {
		file = filepath.Join(d, "tasks")
	}
	if file == "" {
		return
	}
	if tids, err := readProcs(file); err == nil {
		s.Threads = uint32(len(tids))
	}
}
