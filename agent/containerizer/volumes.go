package containerizer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Volume is a host directory made visible inside a container: a
// persistent volume of the container's resources (the agent computes the
// host path from the volume's role and persistence id).
type Volume struct {
	// HostPath is the volume's directory on the host (absolute; it exists).
	HostPath string
	// ContainerPath is where the container sees it: relative to the
	// sandbox, or absolute (only with a mount namespace, or in a Docker
	// container).
	ContainerPath string
	// ReadOnly: the volume's mode is RO (honoured by bind mounts; a
	// symlink cannot make it read-only).
	ReadOnly bool
}

// VolumeMounter is an optional interface of a filesystem isolator that
// makes ContainerConfig.Volumes visible itself (filesystem/linux: bind
// mounts in the container's own mount namespace). When no isolator of the
// mesos containerizer does, the containerizer links each volume into the
// sandbox, as Mesos's filesystem/posix isolator does.
type VolumeMounter interface {
	Isolator
	// MountsVolumes marks the isolator as the one handling volumes.
	MountsVolumes()
}

// ErrAbsoluteVolumePath is wrapped by LinkVolumes for a volume whose
// container path is absolute: without a mount namespace there is no
// private place for it.
var ErrAbsoluteVolumePath = errors.New("an absolute 'container_path' needs a mount namespace (--isolation=filesystem/linux) or a Docker container")

// SandboxPath resolves a volume's relative container path inside the
// sandbox. It refuses paths that are empty, absolute, or leave the sandbox
// ("..").
func SandboxPath(sandbox, containerPath string) (string, error) {
	if containerPath == "" {
		return "", errors.New("'container_path' is empty")
	}
	if filepath.IsAbs(containerPath) {
		return "", fmt.Errorf("'container_path' %q: %w", containerPath, ErrAbsoluteVolumePath)
	}
	clean := filepath.Clean(containerPath)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("'container_path' %q does not name a path inside the sandbox", containerPath)
	}
	return filepath.Join(sandbox, clean), nil
}

// LinkVolumes makes each volume visible in the sandbox as a symlink at its
// container path pointing to its host directory (Mesos's filesystem/posix
// behaviour). It is idempotent: a link already pointing there is kept.
// Something else at the path (a file, a directory, a link elsewhere) is an
// error, as is an absolute container path (ErrAbsoluteVolumePath).
func LinkVolumes(sandbox string, vols []Volume) error {
	for _, v := range vols {
		link, err := SandboxPath(sandbox, v.ContainerPath)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.HostPath, err)
		}
		if cur, err := os.Readlink(link); err == nil {
			if cur == v.HostPath {
				continue
			}
			return fmt.Errorf("volume %s: %s already links to %s", v.HostPath, link, cur)
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return fmt.Errorf("volume %s: %w", v.HostPath, err)
		}
		if err := os.Symlink(v.HostPath, link); err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("volume %s: 'container_path' %q already exists in the sandbox", v.HostPath, v.ContainerPath)
			}
			return fmt.Errorf("volume %s: %w", v.HostPath, err)
		}
	}
	return nil
}

// mountsVolumes tells whether one of isos handles volumes itself.
func mountsVolumes(isos []Isolator) bool {
	for _, iso := range isos {
		if _, ok := iso.(VolumeMounter); ok {
			return true
		}
	}
	return false
}
