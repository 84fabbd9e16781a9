package cgroups

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// v2Resources is the cgroup2 resources block for controller c.
func (m *Manager) v2Resources(c Controller, lim Limits) *cgroup2.Resources {
	r := &cgroup2.Resources{}
	switch c {
	case CPU:
		w := CPUWeight(SharesFor(lim, m.cfg.RevocableCPULowPriority))
		r.CPU = &cgroup2.CPU{Weight: &w}
		if m.cfg.EnableCFS {
			period := uint64(CFSPeriodUs)
			quota := CFSQuotaUs(lim.CPUs)
			r.CPU.Max = cgroup2.NewCPUMax(&quota, &period)
		}
	case Memory:
		limit := int64(MemLimitBytes(lim.MemBytes))
		r.Memory = &cgroup2.Memory{Max: &limit, Low: &limit}
		if m.cfg.LimitSwap {
			// memory.swap.max counts swap alone: no swap beyond the limit.
			zero := int64(0)
			r.Memory.Swap = &zero
		}
	}
	return r
}

func (m *Manager) createV2(id string, c Controller, lim Limits) error {
	if _, err := cgroup2.NewManager(m.cfg.Hierarchy, m.relPath(id), m.v2Resources(c, lim)); err != nil {
		return fmt.Errorf("creating the %s cgroup: %w", c, err)
	}
	return nil
}

// isolateV2 checks that pid is in the container's cgroup, moving it there
// (and any children it forked) if it was started without CLONE_INTO_CGROUP.
func (m *Manager) isolateV2(id string, pid int) error {
	dir := m.dir("", id)
	procs, err := readProcs(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return fmt.Errorf("cgroups: container %s: %w", id, err)
	}
	if slices.Contains(procs, pid) {
		return nil
	}
	for _, p := range append([]int{pid}, descendants(pid)...) {
		if err := writeProcs(dir, p); err != nil && p == pid {
			return fmt.Errorf("cgroups: container %s: moving pid %d into %s: %w", id, p, dir, err)
		}
	}
	return nil
}
