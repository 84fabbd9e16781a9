package agent

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/resources"
)

// The agent's side of dynamic reservations and persistent volumes: the
// checkpointed set (checkpointed.go) and the volume directories
// (volumes.go), driven by CHECKPOINT_RESOURCES from the master and
// recovered when the agent starts.

// recoverCheckpointedResources runs in New: it reads meta/resources and
// computes the agent's total. Flags that cannot hold the checkpointed
// reservations and volumes stop the agent from starting: running with
// them would offer the master resources the reservations already hold.
func (a *Agent) recoverCheckpointedResources() error {
	files, err := readCheckpointedResources(a.meta)
	if err != nil {
		return fmt.Errorf("recovering agent: %w", err)
	}
	set := files.info
	if files.hasTarget {
		// The master's last set, not yet applied when the previous agent
		// process stopped: it wins (finishCheckpointedResources applies it).
		set = files.target
	}
	cp, total, err := checkpointedTotal(a.flagsTotal, set, a.cfg.WorkDir)
	if err != nil {
		return conflictError(a.meta, a.flagsTotal, err)
	}
	a.checkpointed, a.total = cp, total
	a.cpFiles = files
	return nil
}

// finishCheckpointedResources runs in New once the checkpoint of the
// previous agent process is read (rec): it creates the directories of
// the checkpointed volumes that are missing and, when a set was being
// applied, completes it (removing the volumes it dropped unless a
// recovered executor uses them) and commits it.
func (a *Agent) finishCheckpointedResources(rec *recovered) {
	files := a.cpFiles
	a.cpFiles = checkpointedFiles{}
	old := files.info
	if !files.hasTarget {
		old = nil // never remove a volume because no target names it
	}
	inUse := func(dir string) bool {
		for _, fw := range rec.frameworks {
			for _, e := range fw.executors {
				rs := append([]*mesos.Resource(nil), e.info.GetResources()...)
				for _, t := range e.tasks {
					rs = append(rs, t.GetResources()...)
				}
				if volumeDirs(a.cfg.WorkDir, resources.ToPostRefinement(rs))[dir] != nil {
					return true
				}
			}
		}
		return false
	}
	a.applyVolumes(old, a.checkpointed.Proto(), inUse, files.hasTarget)
}

// applyVolumes is step 2 and 3 of a change of the checkpointed set (see
// checkpointed.go): sync the volume directories, then commit the target
// (commit) if that succeeded. Directories kept because a container uses
// them are remembered and removed once no container does.
func (a *Agent) applyVolumes(old, cur []*mesos.Resource, inUse func(string) bool, commit bool) {
	for dir := range volumeDirs(a.cfg.WorkDir, cur) {
		delete(a.keptVolumes, dir) // listed again: no longer to remove
	}
	kept, err := syncVolumes(a.cfg.WorkDir, old, cur, inUse)
	gone := volumeDirs(a.cfg.WorkDir, old)
	for _, dir := range kept {
		a.keptVolumes[dir] = gone[dir]
		a.metrics.volumesKept++
		a.log.Error("NOT REMOVING the directory of a persistent volume that is no longer checkpointed, because a running container uses it; "+
			"it is removed when no container uses it any more", "dir", dir)
	}
	if err != nil {
		a.metrics.volumeErrors++
		a.log.Error("syncing persistent volume directories with the checkpointed resources; the change is retried when the agent restarts",
			"err", err)
		return
	}
	if !commit {
		return
	}
	if err := a.meta.commitCheckpointedTarget(); err != nil {
		a.metrics.volumeErrors++
		a.log.Error("committing the checkpointed resources; the change is retried when the agent restarts", "err", err)
	}
}

// checkpointResources handles CHECKPOINT_RESOURCES (loop): the master's
// complete new set of the agent's dynamic reservations and persistent
// volumes. It is idempotent. A set the agent's resources cannot hold, or
// that names an unusable volume, is refused and changes nothing.
func (a *Agent) checkpointResources(m *protocol.AgentEvent_CheckpointResources) {
	cp, total, err := checkpointedTotal(a.flagsTotal, m.GetResources(), a.cfg.WorkDir)
	if err != nil {
		a.metrics.checkpointResourcesRefused++
		a.log.Error("refusing CHECKPOINT_RESOURCES from the master; keeping the checkpointed resources as they are",
			"err", err, "checkpointed", a.checkpointed.String())
		return
	}
	old := a.checkpointed.Proto()
	if cp.Equal(a.checkpointed) {
		// Nothing to checkpoint; make sure every volume has its directory.
		a.applyVolumes(old, old, a.volumeInUse, false)
		return
	}
	if err := a.meta.writeCheckpointedTarget(cp); err != nil {
		a.metrics.checkpointResourcesRefused++
		a.log.Error("checkpointing the resources sent by the master failed; keeping the previous set", "err", err)
		return
	}
	a.checkpointed, a.total = cp, total
	a.log.Info("checkpointed resources updated", "checkpointed", cp.String())
	a.applyVolumes(old, cp.Proto(), a.volumeInUse, true)
}

// volumeInUse tells whether a container that has not ended (loop) uses the
// volume directory dir: the volume is in its executor's resources or in
// those of one of its tasks, past or present.
func (a *Agent) volumeInUse(dir string) bool {
	for _, fw := range a.frameworks {
		for _, e := range fw.executors {
			if e.phase != phaseTerminated && volumeDirs(a.cfg.WorkDir, e.resourcesUsed())[dir] != nil {
				return true
			}
		}
	}
	return false
}

// resourcesUsed is every resource the executor's container was given:
// the executor's and all its tasks', in the post-refinement format.
func (e *executor) resourcesUsed() []*mesos.Resource {
	rs := append([]*mesos.Resource(nil), e.info.GetResources()...)
	for _, id := range e.taskOrder {
		if t := e.tasks[id]; t != nil {
			rs = append(rs, t.t.GetResources()...)
		}
	}
	for _, t := range e.completed {
		rs = append(rs, t.GetResources()...)
	}
	return resources.ToPostRefinement(rs)
}

// removeKeptVolumes removes the directories of volumes dropped from the
// checkpointed set while a container used them, now that none does
// (loop; after a container ended).
func (a *Agent) removeKeptVolumes() {
	if len(a.keptVolumes) == 0 {
		return
	}
	dirs := make([]string, 0, len(a.keptVolumes))
	for dir := range a.keptVolumes {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		if a.volumeInUse(dir) {
			continue
		}
		if err := removeVolume(dir, a.keptVolumes[dir]); err != nil {
			a.metrics.volumeErrors++
			a.log.Error("removing the directory of a persistent volume no longer checkpointed", "dir", dir, "err", err)
			continue
		}
		delete(a.keptVolumes, dir)
		a.log.Info("removed the directory of a persistent volume no longer checkpointed, now that no container uses it", "dir", dir)
	}
}

// executorVolumes lists the volumes the container of executor e must show
// for the executor's resources and those of tasks. A task of the default
// executor runs in its own sandbox (tasks/<task id>), where Mesos mounts
// the volumes of its nested container, so its relative container paths
// are taken from there.
func (a *Agent) executorVolumes(e *executor, execRes []*mesos.Resource, tasks []*mesos.TaskInfo) ([]containerizer.Volume, error) {
	out, err := a.knownVolumes(execRes)
	if err != nil {
		return nil, err
	}
	seen := map[containerizer.Volume]bool{}
	for _, v := range out {
		seen[v] = true
	}
	for _, t := range tasks {
		vols, err := a.knownVolumes(t.GetResources())
		if err != nil {
			return nil, err
		}
		for _, v := range vols {
			if e.kind == kindDefault && !filepath.IsAbs(v.ContainerPath) {
				id := t.GetTaskId().GetValue()
				if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
					return nil, fmt.Errorf("task ID %q cannot name a sandbox directory for volume %s", id, v.HostPath)
				}
				if _, err := containerizer.SandboxPath(e.directory, v.ContainerPath); err != nil {
					return nil, fmt.Errorf("volume %s: %w", v.HostPath, err)
				}
				v.ContainerPath = filepath.Join("tasks", id, v.ContainerPath)
			}
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// knownVolumes is containerVolumes for volumes of the agent's checkpointed
// set only: a volume the master destroyed (or never created here) is
// refused even if a directory of that name is still there (kept while a
// container used it, or left by hand).
func (a *Agent) knownVolumes(rs []*mesos.Resource) ([]containerizer.Volume, error) {
	vols, err := containerVolumes(a.cfg.WorkDir, rs)
	if err != nil || len(vols) == 0 {
		return vols, err
	}
	known := volumeDirs(a.cfg.WorkDir, a.checkpointed.Proto())
	for _, v := range vols {
		if known[v.HostPath] == nil {
			return nil, fmt.Errorf("persistent volume %s is not among this agent's checkpointed resources (destroyed, or never created here)", v.HostPath)
		}
	}
	return vols, nil
}

// volumesForRunning makes the persistent volumes of tasks launched on an
// executor whose container already runs visible to it (loop). The
// container was set up for the volumes it was launched with; a new
// volume can only be linked into the sandbox, so an absolute container
// path, or a Docker container, cannot get one.
func (a *Agent) volumesForRunning(e *executor, tasks []*mesos.TaskInfo) error {
	vols, err := a.executorVolumes(e, nil, tasks)
	if err != nil || len(vols) == 0 {
		return err
	}
	// What the container already sees (best effort: a volume whose
	// directory has gone is simply not counted).
	have := map[containerizer.Volume]bool{}
	if vs, err := containerVolumes(a.cfg.WorkDir, e.info.GetResources()); err == nil {
		for _, v := range vs {
			have[v] = true
		}
	}
	var earlier []*mesos.TaskInfo
	for _, id := range e.taskOrder {
		if t := e.tasks[id]; t != nil {
			earlier = append(earlier, t.info)
		}
	}
	for _, t := range e.completed {
		earlier = append(earlier, &mesos.TaskInfo{TaskId: t.GetTaskId(), Resources: t.GetResources()})
	}
	for _, t := range earlier {
		if vs, err := a.executorVolumes(e, nil, []*mesos.TaskInfo{t}); err == nil {
			for _, v := range vs {
				have[v] = true
			}
		}
	}
	var add []containerizer.Volume
	for _, v := range vols {
		if !have[v] {
			add = append(add, v)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if isDocker(e.info.GetContainer()) {
		return fmt.Errorf("persistent volume %s cannot be added to the running Docker container of executor %s; "+
			"give it to the executor's first tasks or to the executor", add[0].HostPath, e.id)
	}
	return containerizer.LinkVolumes(e.directory, add)
}
