package containerizer

import (
	"context"
	"syscall"

	"mezzo/api/mesos"
)

// Isolator confines one aspect of a container (cpu, memory, namespaces).
// The mesos containerizer calls Prepare before the process starts, Isolate
// once it has a pid, and Cleanup after the container has terminated (also
// when the launch failed after Prepare, and for a container recovered after
// an agent restart, which the isolator did not prepare in this process).
// Isolators may also implement Limiter and Usager.
type Isolator interface {
	Name() string
	Prepare(ctx context.Context, cfg *ContainerConfig, spec *LaunchSpec) error
	Isolate(ctx context.Context, containerID string, pid int) error
	Cleanup(ctx context.Context, containerID string) error
}

// Limiter is an optional interface of isolators that detect a container
// exceeding a limit (e.g. the memory cgroup's OOM killer). The mesos
// containerizer calls Limitations once Isolate has succeeded and keeps one
// goroutine reading the channel: a Limitation is recorded for the container
// and the container is destroyed. The channel carries at most one value and
// is closed when the isolator's Cleanup for the container returns, so every
// limitation is known once Cleanup is done and the channel drained.
type Limiter interface {
	Isolator
	Limitations(containerID string) <-chan Limitation
}

// Usager is an optional interface of isolators that measure a container's
// usage. The containerizer asks its Usagers in order and returns the first
// answer.
type Usager interface {
	Isolator
	Usage(containerID string) (*mesos.ResourceStatistics, error)
}

// Killer is an optional interface of isolators whose limits would slow a
// container's death. The mesos containerizer calls BeforeKill just before
// it SIGKILLs the container's processes (not before a graceful SIGTERM:
// a process given a grace period keeps its limits through it); an error is
// logged and the kill goes on.
type Killer interface {
	Isolator
	BeforeKill(containerID string) error
}

// UpdatingIsolator is an optional interface of isolators whose limits
// follow the container's resources (cgroups' cpu shares and memory limit).
// The mesos containerizer's Update calls it on each in turn, stopping at
// the first error.
type UpdatingIsolator interface {
	Isolator
	Update(ctx context.Context, containerID string, resources []*mesos.Resource) error
}

// RecoveringIsolator is an optional interface of isolators that keep state
// outside the process (cgroups). After an agent restart the mesos
// containerizer's Recover calls Recover once, before it waits on any
// recovered container, with the IDs of every container its runtime
// checkpoint lists (running or ended): the isolator re-adopts what it made
// for them (e.g. restarts OOM detection, so the container's Limiter channel
// works as after Isolate) and removes what it finds for other containers
// (orphans).
type RecoveringIsolator interface {
	Isolator
	Recover(ctx context.Context, containerIDs []string) error
}

// LaunchSpec is what isolators may adjust before the process starts.
type LaunchSpec struct {
	// SysProcAttr is used for the process; the containerizer has set
	// Setsid so the container is its own session and process group.
	SysProcAttr *syscall.SysProcAttr
	// Env is the environment the process gets; isolators may append.
	Env []string
	// OnForkThread runs, in order, on the OS thread that then starts the
	// process, before it does: a cgroups v1 isolator moves that thread
	// into the container's cgroups (writing its id, tid, to their `tasks`
	// files), so the process is born in them and no code of it runs
	// outside, with no init step to hold it. Each returns how to undo it,
	// which runs on the same thread right after the start (the thread must
	// not linger in the container's freezer cgroup, which a kill freezes);
	// the thread is then discarded, never returning to other work.
	OnForkThread []func(tid int) (undo func(), err error)
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
