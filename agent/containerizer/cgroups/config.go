package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Mesos's constants for the cpu and memory controllers.
const (
	// SharesPerCPU is cpu.shares per cpu (Mesos CPU_SHARES_PER_CPU).
	SharesPerCPU = 1024
	// SharesPerCPURevocable is cpu.shares per revocable cpu with
	// --revocable_cpu_low_priority (Mesos CPU_SHARES_PER_CPU_REVOCABLE).
	SharesPerCPURevocable = 16
	// MinShares is the kernel's minimum cpu.shares (Mesos MIN_CPU_SHARES).
	MinShares = 2
	// CFSPeriodUs is the CFS period set with --cgroups_enable_cfs (100ms,
	// the Linux default, as Mesos).
	CFSPeriodUs = 100000
	// MinCFSQuotaUs is the smallest quota Mesos sets (1ms).
	MinCFSQuotaUs = 1000
	// MinMemoryBytes is the smallest memory limit Mesos sets (32MB).
	MinMemoryBytes = 32 << 20
)

// Version selects the cgroups interface.
type Version int

// Versions; Auto detects from the hierarchy's file system type.
const (
	Auto Version = 0
	V1   Version = 1
	V2   Version = 2
)

// Config is the cgroups configuration, from the agent's Mesos flags.
type Config struct {
	// Hierarchy is where cgroups are mounted (--cgroups_hierarchy,
	// default /sys/fs/cgroup). On v1 each controller is a directory below
	// it; on v2 it is the unified mount itself.
	Hierarchy string
	// Root is the cgroup under which container cgroups are created
	// (--cgroups_root; Mesos's default is "mesos", mezzo's "mezzo").
	Root string
	// EnableCFS sets a hard cpu limit (CFS quota = cpus × period) besides
	// the cpu shares (--cgroups_enable_cfs).
	EnableCFS bool
	// LimitSwap limits memory plus swap to the memory limit
	// (--cgroups_limit_swap).
	LimitSwap bool
	// RevocableCPULowPriority gives containers holding revocable cpus
	// SharesPerCPURevocable per cpu (--revocable_cpu_low_priority; the
	// agent passes Mesos's default, true).
	RevocableCPULowPriority bool
	// Version forces v1 or v2; Auto detects it.
	Version Version
}

// DefaultConfig is the configuration used when Configure is not called.
func DefaultConfig() Config {
	return Config{Hierarchy: "/sys/fs/cgroup", Root: "mezzo"}
}

var (
	cfgMu     sync.Mutex
	globalCfg = DefaultConfig()
)

// Configure sets the configuration the registered isolators are built with
// (the agent's --cgroups_hierarchy, --cgroups_root, --cgroups_enable_cfs and
// --cgroups_limit_swap). Call it before building the containerizer; empty
// fields take their defaults.
func Configure(c Config) error {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return err
	}
	cfgMu.Lock()
	globalCfg = c
	cfgMu.Unlock()
	return nil
}

func currentConfig() Config {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	return globalCfg
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Hierarchy == "" {
		c.Hierarchy = d.Hierarchy
	}
	if c.Root == "" {
		c.Root = d.Root
	}
	return c
}

func (c Config) validate() error {
	if !filepath.IsAbs(c.Hierarchy) {
		return fmt.Errorf("cgroups_hierarchy: %q is not an absolute path", c.Hierarchy)
	}
	root := strings.Trim(c.Root, "/")
	if root == "" {
		return errors.New("cgroups_root: must name a cgroup")
	}
	for _, part := range strings.Split(root, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("cgroups_root: %q is not a clean relative cgroup path", c.Root)
		}
	}
	switch c.Version {
	case Auto, V1, V2:
	default:
		return fmt.Errorf("cgroups version: %d is neither 1 nor 2", c.Version)
	}
	return nil
}

// cgroup2SuperMagic is CGROUP2_SUPER_MAGIC from linux/magic.h.
const cgroup2SuperMagic = 0x63677270

// detectVersion tells whether hierarchy is a cgroup2 mount (v2) or a
// directory of v1 controller mounts.
func detectVersion(hierarchy string) (Version, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(hierarchy, &st); err != nil {
		return 0, fmt.Errorf("cgroups_hierarchy %s: %w", hierarchy, err)
	}
	if st.Type == cgroup2SuperMagic {
		return V2, nil
	}
	return V1, nil
}

// mount is one cgroup mount from /proc/self/mountinfo.
type mount struct {
	Point   string
	FSType  string   // "cgroup" or "cgroup2"
	Options []string // super options: the v1 controllers ("cpu", "cpuacct", "name=systemd", ...)
}

// parseMountinfo returns the cgroup and cgroup2 mounts listed in a
// /proc/<pid>/mountinfo text.
func parseMountinfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(text, " - ")
		if !ok {
			return nil, fmt.Errorf("mountinfo line %d: no ' - ' separator", line)
		}
		fields := strings.Fields(pre)
		if len(fields) < 6 {
			return nil, fmt.Errorf("mountinfo line %d: %d fields before ' - ', want at least 6", line, len(fields))
		}
		tail := strings.Fields(post)
		if len(tail) < 3 {
			return nil, fmt.Errorf("mountinfo line %d: %d fields after ' - ', want 3", line, len(tail))
		}
		if tail[0] != "cgroup" && tail[0] != "cgroup2" {
			continue
		}
		out = append(out, mount{Point: unescapeMount(fields[4]), FSType: tail[0], Options: strings.Split(tail[2], ",")})
	}
	return out, sc.Err()
}

// unescapeMount undoes the octal escapes (\040 for a space, ...) the kernel
// writes in mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return s[0] <= '3'
}

// v1Controllers returns, for each v1 controller mounted at
// <hierarchy>/<controller> (directly, or through the symlink systemd makes
// for co-mounted controllers such as cpu -> cpu,cpuacct), its mount point.
// resolve maps a path to its symlink-free form (filepath.EvalSymlinks, or an
// identity in tests).
func v1Controllers(mounts []mount, hierarchy string, resolve func(string) (string, error)) map[string]string {
	out := map[string]string{}
	for _, m := range mounts {
		if m.FSType != "cgroup" {
			continue
		}
		for _, o := range m.Options {
			if !knownV1Controllers[o] {
				continue
			}
			p, err := resolve(filepath.Join(hierarchy, o))
			if err == nil && filepath.Clean(p) == filepath.Clean(m.Point) {
				out[o] = m.Point
			}
		}
	}
	return out
}

var knownV1Controllers = map[string]bool{
	"cpu": true, "cpuacct": true, "memory": true, "freezer": true, "pids": true, "cpuset": true,
	"blkio": true, "devices": true, "net_cls": true, "net_prio": true, "perf_event": true, "hugetlb": true,
}

func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}
