package pidns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"mezzo/agent/containerizer"
)

// VolumesEnv carries the bind mounts the init step makes (JSON list of
// bindMount) in the container's new mount namespace before the program
// starts.
const VolumesEnv = "MEZZO_FS_VOLUMES"

// bindMount is one volume for the init step: Source is bind-mounted at
// Target (both absolute host paths), read-only with RO.
type bindMount struct {
	Source string `json:"src"`
	Target string `json:"dst"`
	RO     bool   `json:"ro,omitempty"`
}

// LinuxFS is `filesystem/linux`: each container gets its own mount
// namespace, and its persistent volumes (ContainerConfig.Volumes) are
// bind-mounted there at their container paths, as Mesos's linux
// filesystem isolator does for a container without an image: a relative
// path inside the sandbox (the directory is created), an absolute one
// over an existing directory of the host's file system, seen only by the
// container. The mounts disappear with the namespace when the container's
// last process exits, so there is nothing to clean up.
type LinuxFS struct{}

var _ containerizer.VolumeMounter = LinuxFS{}

// Name implements containerizer.Isolator.
func (LinuxFS) Name() string { return "filesystem/linux" }

// MountsVolumes implements containerizer.VolumeMounter.
func (LinuxFS) MountsVolumes() {}

// Prepare implements containerizer.Isolator: a new mount namespace, and
// the init step in front of the program when there are volumes to mount.
// Volumes are checked here, so a bad one fails the launch with a reason
// rather than the container's start.
func (LinuxFS) Prepare(_ context.Context, cfg *containerizer.ContainerConfig, spec *containerizer.LaunchSpec) error {
	if spec.SysProcAttr == nil {
		spec.SysProcAttr = &syscall.SysProcAttr{}
	}
	spec.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS
	if len(cfg.Volumes) == 0 {
		return nil
	}
	if cfg.Path == "" {
		return errors.New("filesystem/linux: no program to run")
	}
	mounts, err := bindMounts(cfg.Dir, cfg.Volumes)
	if err != nil {
		return err
	}
	b, err := json.Marshal(mounts)
	if err != nil {
		return err
	}
	Wrap(cfg, spec, VolumesEnv+"="+string(b))
	return nil
}

// bindMounts resolves volumes to mounts: relative container paths inside
// the sandbox (created), absolute ones must exist on the host.
func bindMounts(sandbox string, vols []containerizer.Volume) ([]bindMount, error) {
	var out []bindMount
	for _, v := range vols {
		if st, err := os.Stat(v.HostPath); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("volume %s is not a directory on the host", v.HostPath)
		}
		target := v.ContainerPath
		if filepath.IsAbs(target) {
			target = filepath.Clean(target)
			if st, err := os.Stat(target); err != nil || !st.IsDir() {
				return nil, fmt.Errorf("volume %s: absolute 'container_path' %q must name an existing directory of the host (there is no container image)",
					v.HostPath, v.ContainerPath)
			}
		} else {
			var err error
			if target, err = containerizer.SandboxPath(sandbox, target); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.HostPath, err)
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.HostPath, err)
			}
		}
		out = append(out, bindMount{Source: v.HostPath, Target: target, RO: v.ReadOnly})
	}
	return out, nil
}

// Isolate implements containerizer.Isolator.
func (LinuxFS) Isolate(context.Context, string, int) error { return nil }

// Cleanup implements containerizer.Isolator: the mounts live only in the
// container's namespace.
func (LinuxFS) Cleanup(context.Context, string) error { return nil }

// mountVolumes runs in the init step, in the new mount namespace (already
// private): it bind-mounts each volume of spec (VolumesEnv's value).
func mountVolumes(spec string) error {
	var mounts []bindMount
	if err := json.Unmarshal([]byte(spec), &mounts); err != nil {
		return fmt.Errorf("%s: %w", VolumesEnv, err)
	}
	for _, m := range mounts {
		if err := syscall.Mount(m.Source, m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting volume %s at %s: %w", m.Source, m.Target, err)
		}
		if m.RO {
			if err := syscall.Mount("", m.Target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("making volume %s at %s read-only: %w", m.Source, m.Target, err)
			}
		}
	}
	return nil
}

// checkMountNamespaces fails early when the agent cannot create mount
// namespaces (not root).
func checkMountNamespaces() error {
	if syscall.Geteuid() != 0 {
		return errors.New("filesystem/linux: the agent must run as root to create mount namespaces")
	}
	if _, err := os.Stat("/proc/self/ns/mnt"); err != nil {
		return errors.New("filesystem/linux: the kernel has no mount namespaces (/proc/self/ns/mnt)")
	}
	return nil
}
