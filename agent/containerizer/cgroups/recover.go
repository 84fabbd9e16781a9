package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// Recovery after an agent restart. A restarted agent's containerizer
// re-attaches to the containers it checkpointed; their cgroups were made by
// the previous agent process. Recover adopts them so that the container's
// OOM is detected as for a container launched by this process, and Sweep
// kills and removes the container cgroups nobody checkpointed (a launch cut
// short by the crash, or a container whose checkpoint was lost), as Mesos's
// cgroups isolators destroy orphans at recovery.

// Recover adopts the cgroups of controller c that a previous process made
// for container id: they are held as if Prepare had made them (so Release
// ends them normally), and for Memory the OOM watch starts again, so Watch
// reports an OOM kill of the re-attached container. A controller whose
// cgroup does not exist is not held (nothing to adopt) and is not an
// error. Recovering a controller this process holds already does nothing.
func (m *Manager) Recover(id string, c Controller) error {
	if err := checkID(id); err != nil {
		return err
	}
	if c != CPU && c != Memory {
		return fmt.Errorf("cgroups: unknown controller %q", c)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[id]
	if g != nil && g.held[c] {
		return nil
	}
	if !m.existsLocked(id, c) {
		return nil
	}
	if g == nil {
		g = &group{id: id, held: map[Controller]bool{}, known: map[Controller]bool{}}
		m.groups[id] = g
	}
	if c == Memory {
		w, err := m.watchOOM(id)
		if err != nil {
			m.forgetIfHeldNoneLocked(g)
			return fmt.Errorf("cgroups: container %s: listening for OOM events after recovery: %w", id, err)
		}
		g.oom = w
	}
	g.held[c] = true
	return nil
}

// forgetIfHeldNoneLocked drops a group that holds nothing without touching
// its cgroups (Recover's failure path: they are not ours to remove yet).
func (m *Manager) forgetIfHeldNoneLocked(g *group) {
	if len(g.held) == 0 {
		delete(m.groups, g.id)
	}
}

// existsLocked tells whether the container has a cgroup for c.
func (m *Manager) existsLocked(id string, c Controller) bool {
	if m.version == V2 {
		_, err := os.Stat(m.dir("", id))
		return err == nil
	}
	for _, d := range c.v1Dirs() {
		if dir := m.dir(d, id); dir != "" {
			if _, err := os.Stat(dir); err == nil {
				return true
			}
		}
	}
	return false
}

// containerName matches the container IDs the agent gives its containers
// (UUIDs). Only such directories under the root are swept, so that a root
// nested in this one (another agent's --cgroups_root=mezzo/other) is never
// taken for an orphan container.
var containerName = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Containers lists the container cgroups under the root, in every
// controller mezzo uses, sorted: directories named like container IDs.
func (m *Manager) Containers() ([]string, error) {
	var bases []string
	if m.version == V2 {
		bases = []string{filepath.Join(m.cfg.Hierarchy, m.relPath(""))}
	} else {
		for _, d := range []string{"cpu", "cpuacct", "freezer", "memory"} {
			if mp := m.v1[d]; mp != "" {
				bases = append(bases, filepath.Join(mp, m.relPath("")))
			}
		}
	}
	seen := map[string]bool{}
	var errs []error
	for _, b := range bases {
		entries, err := os.ReadDir(b)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if e.IsDir() && containerName.MatchString(e.Name()) {
				seen[e.Name()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, errors.Join(errs...)
}

// Sweep kills every process of, and removes, the container cgroups under
// the root that are neither in known nor held by this process (orphans),
// and returns their IDs. Call it at recovery, with the IDs of the
// containers the agent checkpointed. Agents on one host that share a
// --cgroups_root must not both sweep (give each its own root, as with
// Mesos); agents in one process share the Manager and never sweep each
// other's containers.
func (m *Manager) Sweep(ctx context.Context, known []string) ([]string, error) {
	ids, err := m.Containers()
	keep := map[string]bool{}
	for _, id := range known {
		keep[id] = true
	}
	var swept []string
	errs := []error{err}
	for _, id := range ids {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		m.mu.Lock()
		_, held := m.groups[id]
		m.mu.Unlock()
		if keep[id] || held {
			continue
		}
		// Release of a container this process does not hold kills and
		// removes it by its conventional paths.
		if err := m.Release(id, CPU); err != nil {
			errs = append(errs, fmt.Errorf("cgroups: sweeping orphan container %s: %w", id, err))
			continue
		}
		swept = append(swept, id)
	}
	return swept, errors.Join(errs...)
}

// Recover implements containerizer.RecoveringIsolator: it adopts the
// cgroups of the recovered containers (restarting OOM detection for
// cgroups/mem and cgroups/all) and sweeps the orphan container cgroups.
func (i *Isolator) Recover(ctx context.Context, containerIDs []string) error {
	var errs []error
	for _, id := range containerIDs {
		for _, c := range i.ctrls {
			if err := i.m.Recover(id, c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := i.m.Sweep(ctx, containerIDs); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
