package oversub

import (
	"context"
	"fmt"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// ContainerUsage is one live container as the estimators and controllers see
// it: who owns it, what it was allocated and what it was last measured to
// use. It carries the fields of a /monitor/statistics entry (and of Mesos's
// ResourceUsage.Executor) without depending on the HTTP layer.
type ContainerUsage struct {
	// ContainerID is the containerizer's id of the executor's container.
	ContainerID string
	// FrameworkID and ExecutorID name the executor running in it.
	FrameworkID string
	ExecutorID  string
	// Allocated is what the executor and its live tasks were allocated.
	// If any of it is revocable the whole container is revocable, as in
	// Mesos.
	Allocated resources.Resources
	// Statistics is the containerizer's last measurement (cpu times,
	// cgroups cpu.stat throttling, memory, its timestamp). Nil when the
	// container could not be measured; estimators then assume it uses all
	// it was allocated and controllers leave it alone.
	Statistics *mesos.ResourceStatistics
}

// Revocable reports whether the container holds any revocable resource,
// which makes the whole container revocable (killable by a QoS controller).
func (c ContainerUsage) Revocable() bool { return !c.Allocated.Revocable().IsEmpty() }

// Snapshot is one look at the agent, like Mesos's ResourceUsage.
type Snapshot struct {
	// Total is the agent's total resources (regular ones; the revocable
	// estimate is not part of it).
	Total resources.Resources
	// Containers are the live containers, in any order.
	Containers []ContainerUsage
}

// UsageSource gives the estimators and controllers the agent's usage. It is
// declared here, on the consumer's side; Measure builds one from the agent's
// container list and the containerizer.
type UsageSource interface {
	// Usage returns a fresh snapshot. It may block while containers are
	// measured; ctx bounds it. Called from the estimator's or controller's
	// goroutine only.
	Usage(ctx context.Context) (Snapshot, error)
}

// UsageFunc adapts a function to UsageSource.
type UsageFunc func(ctx context.Context) (Snapshot, error)

// Usage implements UsageSource.
func (f UsageFunc) Usage(ctx context.Context) (Snapshot, error) { return f(ctx) }

// Meter measures one container. *containerizer.Mesos satisfies it: it is the
// method set of containerizer.UsageReporter, redeclared here so that this
// package does not import the containerizer.
type Meter interface {
	Usage(ctx context.Context, containerID string) (*mesos.ResourceStatistics, error)
}

// Measure returns a UsageSource that lists containers with list (their
// ids, owners and allocations, Statistics left nil) and fills in each one's
// Statistics from meter. A container the meter cannot measure (it may have
// ended since it was listed) keeps nil Statistics rather than failing the
// whole snapshot.
func Measure(list func(ctx context.Context) (Snapshot, error), meter Meter) UsageSource {
	return UsageFunc(func(ctx context.Context) (Snapshot, error) {
		s, err := list(ctx)
		if err != nil {
			return Snapshot{}, fmt.Errorf("listing containers: %w", err)
		}
		out := Snapshot{Total: s.Total, Containers: make([]ContainerUsage, len(s.Containers))}
		for i, c := range s.Containers {
			if st, err := meter.Usage(ctx, c.ContainerID); err == nil {
				c.Statistics = st
			}
			out.Containers[i] = c
		}
		return out, nil
	})
}
