package containerizer

import (
	"context"
	"syscall"
)

// Isolator confines one aspect of a container (cpu, memory, namespaces).
// The mesos containerizer calls Prepare before the process starts, Isolate
// once it has a pid, and Cleanup after the container has terminated (also
// when the launch failed after Prepare).
//
// cgroups isolators come later; with cgroups v2 Prepare can place the
// process in its cgroup from birth through LaunchSpec.SysProcAttr
// (UseCgroupFD/CgroupFD), so no user code runs unconfined.
type Isolator interface {
	Name() string
	Prepare(ctx context.Context, cfg *ContainerConfig, spec *LaunchSpec) error
	Isolate(ctx context.Context, containerID string, pid int) error
	Cleanup(ctx context.Context, containerID string) error
}

// LaunchSpec is what isolators may adjust before the process starts.
type LaunchSpec struct {
	// SysProcAttr is used for the process; the containerizer has set
	// Setsid so the container is its own session and process group.
	SysProcAttr *syscall.SysProcAttr
	// Env is the environment the process gets; isolators may append.
	Env []string
}

// noopIsolator stands for the posix isolators, which in Mesos only report
// usage; usage statistics come with /monitor/statistics.
type noopIsolator struct{ name string }

func (n noopIsolator) Name() string { return n.name }
func (noopIsolator) Prepare(context.Context, *ContainerConfig, *LaunchSpec) error {
	return nil
}
func (noopIsolator) Isolate(context.Context, string, int) error { return nil }
func (noopIsolator) Cleanup(context.Context, string) error      { return nil }

func init() {
	for _, n := range []string{"posix/cpu", "posix/mem"} {
		RegisterIsolator(n, func(Options) (Isolator, error) { return noopIsolator{n}, nil })
	}
}
