package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v1Subsystem builds the containerd subsystem for v1 controller d, rooted
// at the hierarchy (the library joins the controller name to it).
func (m *Manager) v1Subsystem(d string) cgroup1.Subsystem {
	root := m.cfg.Hierarchy
	switch d {
	case "cpu":
		return cgroup1.NewCpu(root)
	case "cpuacct":
		return cgroup1.NewCpuacct(root)
	case "memory":
		return cgroup1.NewMemory(root, cgroup1.OptionalSwap(), cgroup1.IgnoreModules("kmem", "kmem.tcp"))
	case "freezer":
		return cgroup1.NewFreezer(root)
	}
	return nil
}

// v1Hierarchy is a containerd Hierarchy of the given mounted controllers.
func (m *Manager) v1Hierarchy(dirs ...string) cgroup1.InitOpts {
	return cgroup1.WithHierarchy(func() ([]cgroup1.Subsystem, error) {
		var out []cgroup1.Subsystem
		for _, d := range dirs {
			if m.v1[d] != "" {
				out = append(out, m.v1Subsystem(d))
			}
		}
		return out, nil
	})
}

// v1Resources is the OCI resources block for controller c.
func (m *Manager) v1Resources(c Controller, lim Limits) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	switch c {
	case CPU:
		shares := SharesFor(lim, m.cfg.RevocableCPULowPriority)
		r.CPU = &specs.LinuxCPU{Shares: &shares}
		if m.cfg.EnableCFS {
			period := uint64(CFSPeriodUs)
			quota := CFSQuotaUs(lim.CPUs)
			r.CPU.Period, r.CPU.Quota = &period, &quota
		}
	case Memory:
		limit := int64(MemLimitBytes(lim.MemBytes))
		r.Memory = &specs.LinuxMemory{Limit: &limit, Reservation: &limit}
		if m.cfg.LimitSwap {
			r.Memory.Swap = &limit
		}
	}
	return r
}

func (m *Manager) createV1(id string, c Controller, lim Limits) error {
	dirs := append(c.v1Dirs(), "freezer")
	_, err := cgroup1.New(cgroup1.StaticPath(m.relPath(id)), m.v1Resources(c, lim), m.v1Hierarchy(dirs...))
	if err != nil {
		return fmt.Errorf("creating %s cgroups: %w", c, err)
	}
	if c == Memory {
		// The kernel OOM killer must be on: a container over its limit is
		// killed and reported rather than left hanging (Mesos enables it too).
		p := filepath.Join(m.dir("memory", id), "memory.oom_control")
		if err := os.WriteFile(p, []byte("0"), 0o644); err != nil {
			return fmt.Errorf("enabling the OOM killer in %s: %w", p, err)
		}
	}
	return nil
}

// isolateV1 moves pid into every cgroup of the container, then any children
// it forked before the move. Go's os/exec cannot stop a process between
// fork and exec, so on v1 it is moved after it started; the isolators
// close that window by starting the program behind pidns's init step,
// which waits for the freezer placement, written last here.
func (m *Manager) isolateV1(id string, pid int) error {
	var dirs []string
	for _, d := range []string{"cpu", "cpuacct", "memory", "freezer"} {
		if dir := m.dir(d, id); dir != "" {
			if _, err := os.Stat(dir); err == nil {
				dirs = append(dirs, dir)
			}
		}
	}
	if len(dirs) == 0 {
		return fmt.Errorf("cgroups: container %s has no cgroups", id)
	}
	for _, p := range append([]int{pid}, descendants(pid)...) {
		for _, dir := range dirs {
			err := writeProcs(dir, p)
			if err != nil && p != pid && errors.Is(err, errNoProcess) {
				continue // a child that has exited meanwhile
			}
			if err != nil {
				return fmt.Errorf("cgroups: container %s: moving pid %d into %s: %w", id, p, dir, err)
			}
		}
	}
	return nil
}

// placeThread moves thread tid of this process into container id's v1
// cgroups (their `tasks` files), so that the process it forks next is
// born in them (LaunchSpec.OnForkThread), and returns how to move it back
// where it was. Each of the container's controllers does it all: the
// writes are idempotent.
func (m *Manager) placeThread(id string, tid int) (undo func(), err error) {
	self, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", tid))
	if err != nil {
		return nil, fmt.Errorf("cgroups: reading the launching thread's cgroups: %w", err)
	}
	var back []string
	undo = func() {
		// Best effort: the thread is terminated right after anyway.
		for _, dir := range back {
			_ = os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid)), 0o644)
		}
	}
	for _, d := range []string{"cpu", "cpuacct", "memory", "freezer"} {
		dir := m.dir(d, id)
		if dir == "" {
			continue
		}
		orig := threadCgroup(string(self), d)
		err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid)), 0o644)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a hierarchy this container does not use
		}
		if err != nil {
			undo()
			return nil, fmt.Errorf("cgroups: container %s: placing the launching thread in %s: %w", id, dir, err)
		}
		back = append(back, filepath.Join(m.v1[d], orig))
	}
	return undo, nil
}

// threadCgroup is the path, in the hierarchy of controller d, of the
// cgroup a /proc/<pid>/cgroup text lists ("/" if it lists none).
func threadCgroup(text, d string) string {
	for _, line := range strings.Split(text, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == d {
				return parts[2]
			}
		}
	}
	return "/"
}

// errNoProcess is ESRCH from a cgroup.procs write.
var errNoProcess = errors.New("no such process")

// writeProcs moves pid into the cgroup at dir.
func writeProcs(dir string, pid int) error {
	err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	if errors.Is(err, syscallESRCH) {
		return fmt.Errorf("%w: %d", errNoProcess, pid)
	}
	return err
}
