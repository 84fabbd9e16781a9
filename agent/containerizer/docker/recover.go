package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"mezzo/agent/containerizer"
)

// Recover implements containerizer.Recoverer: it re-attaches to every
// container of this agent (by its owner label) that a previous agent
// process left behind: running ones are followed again (output resumes
// from the checkpointed cursor) and waited on; those that stopped
// meanwhile are reported with Ended set and Wait returns their real exit
// status (the engine keeps it). Containers created but never started (a
// launch interrupted by the crash) are removed. Call it once, before
// Launch.
func (d *Docker) Recover(ctx context.Context) ([]containerizer.Recovered, error) {
	return d.recover(ctx, nil)
}

// RecoverKnown is Recover for an agent that knows which containers it
// expects (from its checkpointed executors): those are re-attached and
// returned; this agent's other containers are orphans and are killed and
// removed (unless Config.KeepOrphans), as Mesos's --docker_kill_orphans.
// The IDs removed are logged.
func (d *Docker) RecoverKnown(ctx context.Context, known []string) ([]containerizer.Recovered, error) {
	set := make(map[string]bool, len(known))
	for _, id := range known {
		set[id] = true
	}
	return d.recover(ctx, set)
}

func (d *Docker) recover(ctx context.Context, known map[string]bool) ([]containerizer.Recovered, error) {
	if err := d.engine.negotiate(ctx); err != nil {
		return nil, fmt.Errorf("recovering Docker containers: %w", err)
	}
	list, err := d.engine.list(ctx, labelOwner+"="+d.owner)
	if err != nil {
		return nil, fmt.Errorf("recovering Docker containers: %w", err)
	}
	var out []containerizer.Recovered
	var errs []error
	seen := map[string]bool{}
	for _, s := range list {
		id := s.Labels[labelContainer]
		if s.State == "removing" || s.State == "dead" {
			// Going away already (e.g. the previous process's removal of
			// an ended container); nothing to recover.
			continue
		}
		if id == "" || s.State == "created" || (known != nil && !known[id]) {
			if s.State != "created" && id != "" && d.keepOrphans {
				continue
			}
			d.log.Info("removing orphan Docker container", "container", id, "docker_id", s.ID, "state", s.State)
			err := d.engine.remove(ctx, s.ID)
			if err != nil && !isNotFound(err) && !isConflict(err) {
				// An orphan that cannot be removed does not stop the
				// agent's recovery (its own containers are fine).
				d.log.Warn("removing orphan Docker container", "container", id, "docker_id", s.ID, "err", err)
			}
			continue
		}
		r, err := d.reattach(ctx, id, s.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seen[id] = true
		out = append(out, r)
	}
	d.pruneCursors(seen)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errors.Join(errs...)
}

// reattach adopts one container left by a previous agent process.
func (d *Docker) reattach(ctx context.Context, id, dockerID string) (containerizer.Recovered, error) {
	info, err := d.engine.inspect(ctx, dockerID)
	if err != nil {
		return containerizer.Recovered{}, fmt.Errorf("recovering container %s: %w", id, err)
	}
	sandbox := info.Config.Labels[labelSandbox]
	c := &ctr{
		id: id, name: info.Name, sandbox: sandbox, dockerID: dockerID,
		pid: info.State.Pid, started: parseTime(info.State.StartedAt),
		cpus: float64(info.HostConfig.CPUShares) / cpuSharesPerCPU, memLimit: info.HostConfig.Memory,
		cpuCapped:  cpuCapped(info.HostConfig.Resources),
		stopSignal: info.Config.StopSignal, recovered: true,
		done: make(chan struct{}), logsDone: make(chan struct{}),
	}
	if len(c.name) > 0 && c.name[0] == '/' {
		c.name = c.name[1:]
	}
	d.mu.Lock()
	if d.live[id] != nil || d.terminated.Has(id) {
		d.mu.Unlock()
		return containerizer.Recovered{}, fmt.Errorf("recovering container %s: %w", id, containerizer.ErrDuplicate)
	}
	d.live[id] = c
	d.mu.Unlock()

	if st, err := os.Stat(sandbox); err == nil && st.IsDir() {
		d.goBG(func() { d.follow(d.bg, c) })
	} else {
		d.log.Warn("the recovered container's sandbox is gone; its output is not copied", "container", id, "sandbox", sandbox)
		close(c.logsDone)
	}
	d.goBG(func() { d.reap(c) })
	d.log.Info("recovered Docker container", "container", id, "docker_id", dockerID, "running", info.State.Running)
	return containerizer.Recovered{
		Container: containerizer.Container{ID: id, Pid: c.pid, Started: c.started},
		Ended:     !info.State.Running,
	}, nil
}

// pruneCursors removes log cursors of containers that no longer exist.
func (d *Docker) pruneCursors(keep map[string]bool) {
	if d.runtimeDir == "" {
		return
	}
	dir := filepath.Join(d.runtimeDir, "docker")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}
