package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/atomicfile"
	"mezzo/resources"
)

// Checkpointed resources: the agent's dynamic reservations and persistent
// volumes, which the master tells it with CHECKPOINT_RESOURCES and which
// the agent reports in every SUBSCRIBE (a new leading master learns them
// from the agents, as in Mesos). They are kept under meta/, outside the
// per-agent-id tree, so that they survive a re-registration under a new
// id (a reboot, a removed `latest`), as Mesos keeps them:
//
//	meta/resources/resources.info    the committed set
//	meta/resources/resources.target  a set being applied (see below)
//
// Both files hold a framed protocol.AgentEvent_CheckpointResources.
//
// Applying a new set is a two-phase change, so that a crash at any point
// leaves the volumes directories and the checkpoint consistent:
//
//  1. the new set is written to resources.target (atomic, fsynced);
//  2. the directories of new persistent volumes are created and those of
//     volumes no longer listed removed (syncVolumes);
//  3. resources.target is renamed over resources.info (and the directory
//     fsynced).
//
// An agent that finds resources.target when it starts completes steps 2
// and 3 before registering: the target is the set the master last sent.
// Without a target the agent only creates the directories that are
// missing; it never removes a volume directory because a file is absent
// (an operator who removes resources.info to resolve a conflict keeps the
// data).

const (
	resourcesInfoFile   = "resources.info"
	resourcesTargetFile = "resources.target"
)

func (m metaDir) resourcesDir() string { return filepath.Join(string(m), "resources") }
func (m metaDir) resourcesInfoPath() string {
	return filepath.Join(m.resourcesDir(), resourcesInfoFile)
}
func (m metaDir) resourcesTargetPath() string {
	return filepath.Join(m.resourcesDir(), resourcesTargetFile)
}

// checkpointedFiles is what meta/resources holds.
type checkpointedFiles struct {
	info      []*mesos.Resource // committed set (nil: none)
	target    []*mesos.Resource // set being applied
	hasTarget bool
}

// readCheckpointedResources reads meta/resources, in the post-refinement
// format. Missing files are empty sets; a file that cannot be read is an
// error naming it.
func readCheckpointedResources(m metaDir) (checkpointedFiles, error) {
	var out checkpointedFiles
	info := &protocol.AgentEvent_CheckpointResources{}
	switch err := readProto(m.resourcesInfoPath(), info); {
	case err == nil:
		out.info = resources.ToPostRefinement(info.GetResources())
	case !errors.Is(err, os.ErrNotExist):
		return out, err
	}
	target := &protocol.AgentEvent_CheckpointResources{}
	switch err := readProto(m.resourcesTargetPath(), target); {
	case err == nil:
		out.target, out.hasTarget = resources.ToPostRefinement(target.GetResources()), true
	case !errors.Is(err, os.ErrNotExist):
		return out, err
	}
	return out, nil
}

// writeCheckpointedTarget records a set about to be applied (step 1).
func (m metaDir) writeCheckpointedTarget(set resources.Resources) error {
	return writeProto(m.resourcesTargetPath(), &protocol.AgentEvent_CheckpointResources{Resources: set.Proto()})
}

// commitCheckpointedTarget makes the target the committed set (step 3).
func (m metaDir) commitCheckpointedTarget() error {
	if err := os.Rename(m.resourcesTargetPath(), m.resourcesInfoPath()); err != nil {
		return err
	}
	return atomicfile.SyncDir(m.resourcesDir())
}

// checkpointedTotal validates a set of checkpointed resources against the
// agent's resources from its flags and returns the set and the agent's
// total with the set applied (resources.ApplyCheckpointed). Every entry
// must be a dynamic reservation or a persistent volume with a usable
// directory, and the flags' resources must hold what each entry reserves;
// the error names the first entry that fails.
func checkpointedTotal(flags resources.Resources, set []*mesos.Resource, workDir string) (checkpoint, total resources.Resources, err error) {
	cp, err := resources.FromProto(set)
	if err != nil {
		return resources.Resources{}, resources.Resources{}, fmt.Errorf("invalid checkpointed resources: %w", err)
	}
	// Checkpointed resources belong to the agent, not to an allocation.
	cp = cp.WithoutAllocationInfo()
	for _, r := range cp.PersistentVolumes().Proto() {
		if _, err := volumePath(workDir, r); err != nil {
			one, _ := resources.New(r)
			return resources.Resources{}, resources.Resources{}, fmt.Errorf("persistent volume %s: %w", one, err)
		}
	}
	total, err = resources.ApplyCheckpointed(flags, cp)
	if err != nil {
		return resources.Resources{}, resources.Resources{}, err
	}
	return cp, total, nil
}

// conflictError is the refusal to start when the flags' resources cannot
// hold the checkpointed reservations and volumes.
func conflictError(m metaDir, flags resources.Resources, err error) error {
	return fmt.Errorf("agent config: the checkpointed reservations and persistent volumes in %s conflict with the agent's resources '%s': %w "+
		"(restart with --resources that hold them, e.g. the previous value; or, to drop every checkpointed reservation and volume, "+
		"remove %s and %s — the volumes' data stays under <work_dir>/volumes)",
		m.resourcesDir(), flags, err, m.resourcesInfoPath(), m.resourcesTargetPath())
}
