package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"

	"mezzo/api/mesos"
)

// Update sizes controller c of a live container for rs, when an executor
// gets more tasks or one of its tasks ends. The cpu shares (v2: weight)
// and the CFS quota follow rs up and down; so does the memory soft limit
// (v2: memory.low). The memory hard limit only rises: lowered below what
// the processes hold, the kernel would reclaim or OOM-kill at once, while
// the executor may still be giving back the memory of a task that ended.
// Mesos's memory isolator never lowers it either.
//
// The container must be held (prepared or recovered by this process);
// its cgroups are the conventional ones, so a container recovered after
// an agent restart is updated like one launched by this process.
func (m *Manager) Update(id string, c Controller, rs []*mesos.Resource) error {
	if err := checkID(id); err != nil {
		return err
	}
	if c != CPU && c != Memory {
		return fmt.Errorf("cgroups: unknown controller %q", c)
	}
	lim, err := limitsFor(c, rs)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[id]
	if g == nil || !g.held[c] {
		return fmt.Errorf("cgroups: container %s: %s is not held", id, c)
	}
	var hard int64
	if c == Memory {
		cur, err := m.memLimitLocked(id)
		if err != nil {
			return fmt.Errorf("cgroups: container %s: %w", id, err)
		}
		hard = max(int64(MemLimitBytes(lim.MemBytes)), cur)
	}
	if m.version == V2 {
		err = m.updateV2(id, c, lim, hard)
	} else {
		err = m.updateV1(id, c, lim, hard)
	}
	if err != nil {
		return fmt.Errorf("cgroups: container %s: updating %s: %w", id, c, err)
	}
	if c == CPU {
		g.limits.CPUs, g.limits.RevocableCPUs = lim.CPUs, lim.RevocableCPUs
	} else {
		g.limits.MemBytes = uint64(hard)
	}
	return nil
}

// memLimitLocked reads the container's memory hard limit; an unlimited
// cgroup reads as 0 (every limit is higher).
func (m *Manager) memLimitLocked(id string) (int64, error) {
	path := filepath.Join(m.dir("", id), "memory.max")
	if m.version == V1 {
		path = filepath.Join(m.dir("memory", id), "memory.limit_in_bytes")
	}
	v, err := readUintFile(path)
	if errors.Is(err, errUnlimited) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int64(min(v, 1<<62)), nil
}

func (m *Manager) updateV1(id string, c Controller, lim Limits, hard int64) error {
	if c == Memory {
		return m.updateMemV1(id, lim, hard)
	}
	cg, err := cgroup1.Load(cgroup1.StaticPath(m.relPath(id)), m.v1Hierarchy(c.v1Dirs()...))
	if err != nil {
		return err
	}
	return cg.Update(m.v1Resources(c, lim))
}

// updateMemV1 writes the memory files itself: the kernel refuses a
// memory.limit_in_bytes above memory.memsw.limit_in_bytes, so a rising
// limit with --cgroups_limit_swap needs memsw written first, and
// containerd's cgroup1 reorders the wrong pair of its settings for that
// (the hard and soft limits), failing with EINVAL.
func (m *Manager) updateMemV1(id string, lim Limits, hard int64) error {
	dir := m.dir("memory", id)
	h := strconv.FormatInt(hard, 10)
	var writes [][2]string // file, value, in order
	if m.cfg.LimitSwap {
		if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
			writes = append(writes, [2]string{"memory.memsw.limit_in_bytes", h})
		}
	}
	writes = append(writes, [2]string{"memory.limit_in_bytes", h},
		[2]string{"memory.soft_limit_in_bytes", strconv.FormatUint(MemLimitBytes(lim.MemBytes), 10)})
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) updateV2(id string, c Controller, lim Limits, hard int64) error {
	mgr, err := cgroup2.Load(m.relPath(id), cgroup2.WithMountpoint(m.cfg.Hierarchy))
	if err != nil {
		return err
	}
	r := m.v2Resources(c, lim)
	if c == Memory {
		r.Memory.Max = &hard
	}
	return mgr.Update(r)
}
