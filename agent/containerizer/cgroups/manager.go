package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
)

// Controller is an isolation concern a cgroups isolator enforces.
type Controller string

// Controllers.
const (
	// CPU is cpu shares and the optional CFS quota; on v1 it uses the cpu
	// and cpuacct controllers (cpuacct for the usage statistics).
	CPU Controller = "cpu"
	// Memory is the memory limit and OOM detection.
	Memory Controller = "memory"
)

// v1Dirs are the v1 controllers a Controller creates cgroups in.
func (c Controller) v1Dirs() []string {
	if c == CPU {
		return []string{"cpu", "cpuacct"}
	}
	return []string{string(c)}
}

// Manager owns the container cgroups of one Config: it creates them,
// places processes in them, kills what runs in them, watches them for OOM,
// reads their statistics and removes them. The cgroups isolators of one
// process share one Manager per Config. Safe for concurrent use.
type Manager struct {
	cfg     Config
	version Version
	// v1 maps each mounted v1 controller to its mount point.
	v1 map[string]string
	// v2 holds the controllers the v2 root offers (cgroup.controllers).
	v2 map[string]bool

	mu     sync.Mutex
	groups map[string]*group
}

// group is one container's cgroups as this process knows them.
type group struct {
	id     string
	held   map[Controller]bool // controllers prepared and not yet released
	limits Limits
	known  map[Controller]bool // controllers whose limits were set by Prepare
	cgfd   *os.File            // v2: the cgroup directory, for CLONE_INTO_CGROUP until Isolate
	oom    *oomWatch           // set while the memory controller is held
}

// NewManager inspects the hierarchy named by cfg (mounted controllers,
// cgroups version) and returns a Manager for it. It creates nothing.
func NewManager(cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, groups: map[string]*group{}}
	v := cfg.Version
	if v == Auto {
		var err error
		if v, err = detectVersion(cfg.Hierarchy); err != nil {
			return nil, err
		}
	}
	m.version = v
	switch v {
	case V1:
		mounts, err := readMounts()
		if err != nil {
			return nil, fmt.Errorf("cgroups: reading mounts: %w", err)
		}
		m.v1 = v1Controllers(mounts, cfg.Hierarchy, filepath.EvalSymlinks)
	case V2:
		data, err := os.ReadFile(filepath.Join(cfg.Hierarchy, "cgroup.controllers"))
		if err != nil {
			return nil, fmt.Errorf("cgroups: %s is not a cgroup2 mount: %w", cfg.Hierarchy, err)
		}
		m.v2 = map[string]bool{}
		for _, c := range strings.Fields(string(data)) {
			m.v2[c] = true
		}
	}
	return m, nil
}

// Version is the cgroups version the Manager uses.
func (m *Manager) Version() Version { return m.version }

// Config is the Manager's configuration.
func (m *Manager) Config() Config { return m.cfg }

// Check reports, with an error naming what is missing, whether the
// hierarchy supports the controllers (and the CFS and swap options that
// apply to them).
func (m *Manager) Check(ctrls ...Controller) error {
	for _, c := range ctrls {
		if c != CPU && c != Memory {
			return fmt.Errorf("cgroups: unknown controller %q", c)
		}
		if m.version == V2 {
			if !m.v2[string(c)] {
				return fmt.Errorf("cgroups: the %s controller is not available in %s (cgroup.controllers)", c, m.cfg.Hierarchy)
			}
			continue
		}
		for _, d := range c.v1Dirs() {
			if m.v1[d] == "" {
				return fmt.Errorf("cgroups: the %s controller is not mounted at %s", d, filepath.Join(m.cfg.Hierarchy, d))
			}
		}
		if c == CPU && m.cfg.EnableCFS {
			if _, err := os.Stat(filepath.Join(m.v1["cpu"], "cpu.cfs_quota_us")); err != nil {
				return errors.New("cgroups: 'cpu.cfs_quota_us' not found; the kernel may be too old for --cgroups_enable_cfs")
			}
		}
		if c == Memory && m.cfg.LimitSwap {
			if _, err := os.Stat(filepath.Join(m.v1["memory"], "memory.memsw.limit_in_bytes")); err != nil {
				return errors.New("cgroups: 'memory.memsw.limit_in_bytes' is not available for --cgroups_limit_swap")
			}
		}
	}
	return nil
}

// checkID rejects container IDs that are not a single path element.
func checkID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00\n") {
		return fmt.Errorf("cgroups: container id %q cannot name a cgroup", id)
	}
	return nil
}

// relPath is the container's cgroup below the hierarchy (v2) or below each
// controller's mount (v1): /<root>/<id>.
func (m *Manager) relPath(id string) string {
	return "/" + strings.Trim(m.cfg.Root, "/") + "/" + id
}

// Paths returns the container's cgroup directories, sorted: one per
// mounted v1 controller mezzo uses (cpu, cpuacct, freezer, memory), or the
// one v2 directory. They need not exist.
func (m *Manager) Paths(id string) []string {
	rel := m.relPath(id)
	if m.version == V2 {
		return []string{filepath.Join(m.cfg.Hierarchy, rel)}
	}
	var out []string
	for _, d := range []string{"cpu", "cpuacct", "freezer", "memory"} {
		if mp := m.v1[d]; mp != "" {
			out = append(out, filepath.Join(mp, rel))
		}
	}
	slices.Sort(out)
	return out
}

// dir is the container's directory for v1 controller d, "" if d is not
// mounted.
func (m *Manager) dir(d, id string) string {
	if m.version == V2 {
		return filepath.Join(m.cfg.Hierarchy, m.relPath(id))
	}
	mp := m.v1[d]
	if mp == "" {
		return ""
	}
	return filepath.Join(mp, m.relPath(id))
}

// Prepare creates the container's cgroups for controller c with the limits
// of its resources, before the process starts. On v2 it also sets
// spec.SysProcAttr so the process is born in its cgroup (clone3 with
// CLONE_INTO_CGROUP); on v1 the containerizer's Isolate call moves it.
func (m *Manager) Prepare(id string, c Controller, rs []*mesos.Resource, spec *containerizer.LaunchSpec) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := m.Check(c); err != nil {
		return err
	}
	lim, err := limitsFor(c, rs)
	if err != nil {
		return err
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[id]
	if g == nil {
		g = &group{id: id, held: map[Controller]bool{}, known: map[Controller]bool{}}
		m.groups[id] = g
	}
	if g.held[c] {
		return fmt.Errorf("cgroups: container %s: %s already prepared", id, c)
	}
	if err := m.createLocked(g, c, lim); err != nil {
		m.forgetIfUnusedLocked(g)
		return fmt.Errorf("cgroups: container %s: %w", id, err)
	}
	g.held[c] = true
	g.known[c] = true
	if c == CPU {
		g.limits.CPUs = lim.CPUs
	} else {
		g.limits.MemBytes = lim.MemBytes
	}
	if c == Memory {
		w, err := m.watchOOM(id)
		if err != nil {
			delete(g.held, c)
			m.removeControllerLocked(g, c)
			m.forgetIfUnusedLocked(g)
			return fmt.Errorf("cgroups: container %s: listening for OOM events: %w", id, err)
		}
		g.oom = w
	}
	if m.version == V2 && spec != nil {
		if g.cgfd == nil {
			f, err := os.Open(m.dir("", id))
			if err != nil {
				return fmt.Errorf("cgroups: container %s: %w", id, err)
			}
			g.cgfd = f
		}
		if spec.SysProcAttr == nil {
			spec.SysProcAttr = &syscall.SysProcAttr{}
		}
		spec.SysProcAttr.UseCgroupFD = true
		spec.SysProcAttr.CgroupFD = int(g.cgfd.Fd())
	}
	return nil
}

// limitsFor is LimitsOf for controller c, which needs its resource.
func limitsFor(c Controller, rs []*mesos.Resource) (Limits, error) {
	lim, err := LimitsOf(rs)
	if err != nil {
		return Limits{}, err
	}
	if c == CPU && lim.CPUs == 0 {
		return Limits{}, errors.New("cgroups: no 'cpus' resource given for the container")
	}
	if c == Memory && lim.MemBytes == 0 {
		return Limits{}, errors.New("cgroups: no 'mem' resource given for the container")
	}
	return lim, nil
}

// createLocked makes the cgroups of controller c (and on v1 the freezer
// cgroup used to kill the container) with the limits set.
func (m *Manager) createLocked(g *group, c Controller, lim Limits) error {
	if m.version == V2 {
		return m.createV2(g.id, c, lim)
	}
	return m.createV1(g.id, c, lim)
}

// Isolate places pid, and on v1 every descendant it already forked, in all
// the container's cgroups. On v2 a process launched with the Prepare'd
// SysProcAttr is there already and Isolate only verifies it.
func (m *Manager) Isolate(id string, pid int) error {
	if err := checkID(id); err != nil {
		return err
	}
	if pid <= 0 {
		return fmt.Errorf("cgroups: container %s: invalid pid %d", id, pid)
	}
	m.mu.Lock()
	g := m.groups[id]
	if g != nil && g.cgfd != nil {
		g.cgfd.Close()
		g.cgfd = nil
	}
	m.mu.Unlock()
	if g == nil {
		return fmt.Errorf("cgroups: container %s was not prepared", id)
	}
	if m.version == V2 {
		return m.isolateV2(id, pid)
	}
	return m.isolateV1(id, pid)
}

// Release ends controller c's part in the container after it terminated:
// it kills every process left in the container's cgroups, reports an OOM
// kill that the watcher has not seen yet, closes the Watch channel (memory),
// and removes c's cgroups; the last Release removes the rest. Releasing a
// container this process did not prepare (after an agent restart) kills
// and removes its cgroups by their conventional paths.
func (m *Manager) Release(id string, c Controller) error {
	if err := checkID(id); err != nil {
		return err
	}
	killErr := m.Kill(id)

	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[id]
	if g == nil {
		// Unknown here: remove whatever exists under the conventional paths.
		g = &group{id: id, held: map[Controller]bool{}, known: map[Controller]bool{}}
		return errors.Join(killErr, m.removeAllLocked(g))
	}
	if c == Memory && g.oom != nil {
		g.oom.finish(m)
		g.oom = nil
	}
	delete(g.held, c)
	var errs []error
	if killErr == nil {
		errs = append(errs, m.removeControllerLocked(g, c))
		if len(g.held) == 0 {
			errs = append(errs, m.removeAllLocked(g))
		}
	} else {
		errs = append(errs, killErr)
	}
	if len(g.held) == 0 {
		if g.cgfd != nil {
			g.cgfd.Close()
			g.cgfd = nil
		}
		delete(m.groups, id)
	}
	return errors.Join(errs...)
}

func (m *Manager) forgetIfUnusedLocked(g *group) {
	if len(g.held) == 0 {
		if g.cgfd != nil {
			g.cgfd.Close()
		}
		m.removeAllLocked(g)
		delete(m.groups, g.id)
	}
}

// removeControllerLocked removes the v1 cgroups only controller c uses (the
// freezer and the v2 directory go with the last controller).
func (m *Manager) removeControllerLocked(g *group, c Controller) error {
	if m.version == V2 {
		return nil
	}
	var errs []error
	for _, d := range c.v1Dirs() {
		if dir := m.dir(d, g.id); dir != "" {
			errs = append(errs, removeCgroup(dir))
		}
	}
	return errors.Join(errs...)
}

// removeAllLocked removes every cgroup directory of the container.
func (m *Manager) removeAllLocked(g *group) error {
	var errs []error
	for _, p := range m.Paths(g.id) {
		errs = append(errs, removeCgroup(p))
	}
	return errors.Join(errs...)
}

// Watch returns a channel that receives the container's memory limitation
// (an OOM) at most once; it is closed when the memory controller is
// released, after any OOM found then has been sent. For a container
// without a memory cgroup the channel is closed at once.
func (m *Manager) Watch(id string) <-chan Limitation {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[id]; g != nil && g.oom != nil {
		return g.oom.ch
	}
	ch := make(chan Limitation)
	close(ch)
	return ch
}

// Pids lists the processes in the container's cgroups, sorted.
func (m *Manager) Pids(id string) ([]int, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return m.pids(id)
}

func (m *Manager) pids(id string) ([]int, error) {
	seen := map[int]bool{}
	var errs []error
	found := false
	for _, p := range m.Paths(id) {
		ps, err := readProcs(filepath.Join(p, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found = true
		for _, pid := range ps {
			seen[pid] = true
		}
	}
	if !found && len(errs) == 0 {
		return nil, nil
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out, errors.Join(errs...)
}

var (
	sharedMu       sync.Mutex
	sharedManagers = map[Config]*Manager{}
)

// shared returns the process-wide Manager for cfg, so that the cpu and
// memory isolators of a container agree on its freezer and v2 directory.
func shared(cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if m := sharedManagers[cfg]; m != nil {
		return m, nil
	}
	m, err := NewManager(cfg)
	if err != nil {
		return nil, err
	}
	sharedManagers[cfg] = m
	return m, nil
}
