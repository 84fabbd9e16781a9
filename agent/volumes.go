package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// Persistent volumes on the agent. A volume is a directory that outlives
// the tasks using it, laid out as Mesos lays it out:
//
//	<work_dir>/volumes/roles/<role>/<persistence id>
//
// where <role> is the volume's reservation role with every "/" of a
// hierarchical role written as a space (Mesos's encoding: a role name
// cannot contain a space, so the mapping is one to one, and sub-roles do
// not appear as sub-directories of their parent's volumes). A volume on a
// PATH disk lives under the disk's root instead of the work dir; a volume
// on a MOUNT disk is the mount's root itself.
//
// The directories follow the checkpointed set (checkpointed.go): created
// when a volume appears, removed when it is gone, except while a container
// uses it (the directory is then kept, the refusal logged, and removal
// retried when a container ends).

// volumePath is the host directory of persistent volume r (post-refinement
// format). Role and persistence id must be usable as path elements.
func volumePath(workDir string, r *mesos.Resource) (string, error) {
	id := r.GetDisk().GetPersistence().GetId()
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
		return "", fmt.Errorf("persistence id %q is not usable as a directory name", id)
	}
	rs := r.GetReservations()
	if len(rs) == 0 {
		return "", errors.New("a persistent volume must be on reserved disk")
	}
	role := rs[len(rs)-1].GetRole()
	if err := resources.ValidateRole(role); err != nil || role == "*" {
		return "", fmt.Errorf("reservation role %q is not usable as a directory name", role)
	}
	root := workDir
	if src := r.GetDisk().GetSource(); src != nil {
		switch src.GetType() {
		case mesos.Resource_DiskInfo_Source_PATH:
			root = src.GetPath().GetRoot()
		case mesos.Resource_DiskInfo_Source_MOUNT:
			root = src.GetMount().GetRoot()
		default:
			return "", fmt.Errorf("persistent volumes on %s disks are not supported", src.GetType())
		}
		if root == "" {
			return "", fmt.Errorf("the %s disk has no root", src.GetType())
		}
		if !filepath.IsAbs(root) {
			root = filepath.Join(workDir, root)
		}
		if src.GetType() == mesos.Resource_DiskInfo_Source_MOUNT {
			return filepath.Clean(root), nil
		}
	}
	return filepath.Join(root, "volumes", "roles", strings.ReplaceAll(role, "/", " "), id), nil
}

// volumeDirs maps the host directory of every persistent volume in rs to
// the volume (a shared volume listed several times appears once).
func volumeDirs(workDir string, rs []*mesos.Resource) map[string]*mesos.Resource {
	out := map[string]*mesos.Resource{}
	for _, r := range rs {
		if r.GetDisk().GetPersistence() == nil {
			continue
		}
		if p, err := volumePath(workDir, r); err == nil {
			out[p] = r
		}
	}
	return out
}

// containerVolumes lists what a container with resources rs must see: each
// persistent volume's directory at each of its container paths (a shared
// volume listed by several tasks at one path appears once). A volume without a
// container path (volume.container_path) is not visible in the container,
// as in Mesos; its directory is still reserved to it.
func containerVolumes(workDir string, rs []*mesos.Resource) ([]containerizer.Volume, error) {
	var out []containerizer.Volume
	seen := map[[2]string]bool{} // volume directory, container path
	for _, r := range resources.ToPostRefinement(rs) {
		if r.GetDisk().GetPersistence() == nil {
			continue
		}
		p, err := volumePath(workDir, r)
		if err != nil {
			return nil, fmt.Errorf("persistent volume %q: %w", r.GetDisk().GetPersistence().GetId(), err)
		}
		v := r.GetDisk().GetVolume()
		if v == nil || seen[[2]string{p, v.GetContainerPath()}] {
			continue
		}
		seen[[2]string{p, v.GetContainerPath()}] = true
		if v.GetContainerPath() == "" {
			return nil, fmt.Errorf("persistent volume %q: 'disk.volume.container_path' is empty", r.GetDisk().GetPersistence().GetId())
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("persistent volume %q: its directory %s is missing on this agent (was it created with a CREATE operation?)",
				r.GetDisk().GetPersistence().GetId(), p)
		}
		out = append(out, containerizer.Volume{HostPath: p, ContainerPath: v.GetContainerPath(), ReadOnly: v.GetMode() == mesos.Volume_RO})
	}
	return out, nil
}

// syncVolumes makes the volume directories follow a change of the
// checkpointed set from old to cur: every volume of cur gets its directory
// (idempotent), and the directory of every volume of old that cur no
// longer lists is removed unless inUse says a container uses it. It
// returns the directories kept for that reason, sorted. Errors are joined:
// one failure does not stop the rest.
func syncVolumes(workDir string, old, cur []*mesos.Resource, inUse func(dir string) bool) (kept []string, err error) {
	want := volumeDirs(workDir, cur)
	var errs []error
	for _, dir := range sortedKeys(want) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errs = append(errs, fmt.Errorf("creating volume directory: %w", err))
		}
	}
	gone := volumeDirs(workDir, old)
	for _, dir := range sortedKeys(gone) {
		if want[dir] != nil {
			continue
		}
		if inUse(dir) {
			kept = append(kept, dir)
			continue
		}
		if err := removeVolume(dir, gone[dir]); err != nil {
			errs = append(errs, err)
		}
	}
	return kept, errors.Join(errs...)
}

// removeVolume deletes a volume's data: the directory itself, or for a
// volume on a MOUNT disk (the mount's root) only its content.
func removeVolume(dir string, r *mesos.Resource) error {
	if r != nil && r.GetDisk().GetSource().GetType() == mesos.Resource_DiskInfo_Source_MOUNT {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing volume %s: %w", dir, err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("removing volume %s: %w", dir, err)
			}
		}
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing volume %s: %w", dir, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
