package cgroups

import (
	"context"
	"slices"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
)

// Limiter is implemented by isolators that can detect a container
// exceeding a limit (cgroups/mem, cgroups/all). The containerizer calls
// Watch once Isolate has succeeded and keeps one goroutine reading the
// channel: on a Limitation it records it for the container and destroys
// the container (grace 0); the channel is closed when the isolator's
// Cleanup returns, after any OOM found at cleanup has been sent, so the
// containerizer knows every limitation once Cleanup is done and the
// goroutine has drained the channel.
type Limiter interface {
	Watch(containerID string) <-chan Limitation
}

// Usager is implemented by isolators that measure a container's usage.
// The cgroups isolators share one Manager, so any one of them returns the
// statistics of all the container's cgroups: the containerizer asks the
// first Usager among its isolators.
type Usager interface {
	Usage(containerID string) (*Statistics, error)
}

// Isolator is a cgroups isolator (cgroups/cpu, cgroups/mem, cgroups/all).
type Isolator struct {
	name  string
	ctrls []Controller
	m     *Manager
	now   func() time.Time
}

// MemIsolator is an Isolator with a memory cgroup, which also reports OOM
// limitations.
type MemIsolator struct{ *Isolator }

var (
	_ containerizer.Isolator = (*Isolator)(nil)
	_ Usager                 = (*Isolator)(nil)
	_ Limiter                = MemIsolator{}

	_ containerizer.RecoveringIsolator = (*Isolator)(nil)
	_ containerizer.Killer             = (*Isolator)(nil)
)

// NewIsolator builds the isolator named name for the controllers, on the
// process-wide Manager for cfg. It fails, naming what is missing, when the
// hierarchy lacks a controller.
func NewIsolator(name string, cfg Config, opts containerizer.Options, ctrls ...Controller) (containerizer.Isolator, error) {
	m, err := shared(cfg)
	if err != nil {
		return nil, err
	}
	if err := m.Check(ctrls...); err != nil {
		return nil, err
	}
	now := time.Now
	if opts.Clock != nil {
		now = opts.Clock.Now
	}
	iso := &Isolator{name: name, ctrls: ctrls, m: m, now: now}
	for _, c := range ctrls {
		if c == Memory {
			return MemIsolator{iso}, nil
		}
	}
	return iso, nil
}

// Manager returns the Manager the isolator uses.
func (i *Isolator) Manager() *Manager { return i.m }

// Name implements containerizer.Isolator.
func (i *Isolator) Name() string { return i.name }

// Prepare implements containerizer.Isolator: it creates the container's
// cgroups with its limits.
func (i *Isolator) Prepare(_ context.Context, cfg *containerizer.ContainerConfig, spec *containerizer.LaunchSpec) error {
	for n, c := range i.ctrls {
		if err := i.m.Prepare(cfg.ContainerID, c, cfg.Resources, spec); err != nil {
			for _, done := range i.ctrls[:n] {
				_ = i.m.Release(cfg.ContainerID, done)
			}
			return err
		}
	}
	if i.m.version == V1 {
		// Close the v1 window between start and Isolate: the process is
		// forked by a thread already in the container's cgroups, so it is
		// born there (v2 clones into its cgroup instead, see Prepare).
		id := cfg.ContainerID
		spec.OnForkThread = append(spec.OnForkThread, func(tid int) (func(), error) { return i.m.placeThread(id, tid) })
	}
	return nil
}

// Isolate implements containerizer.Isolator: it places the process in the
// container's cgroups.
func (i *Isolator) Isolate(_ context.Context, containerID string, pid int) error {
	return i.m.Isolate(containerID, pid)
}

// Cleanup implements containerizer.Isolator: it kills every process left
// in the container's cgroups and removes them.
func (i *Isolator) Cleanup(_ context.Context, containerID string) error {
	var first error
	for _, c := range i.ctrls {
		if err := i.m.Release(containerID, c); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// BeforeKill implements containerizer.Killer: an isolator with a cpu
// cgroup lifts the container's CPU limits (Manager.Unthrottle), so that
// its processes, SIGKILLed next, exit at once even on a busy machine.
func (i *Isolator) BeforeKill(containerID string) error {
	if !slices.Contains(i.ctrls, CPU) {
		return nil
	}
	return i.m.Unthrottle(containerID)
}

// Update implements containerizer.UpdatingIsolator: each of the
// isolator's controllers is sized for resources (Manager.Update).
func (i *Isolator) Update(_ context.Context, containerID string, resources []*mesos.Resource) error {
	for _, c := range i.ctrls {
		if err := i.m.Update(containerID, c, resources); err != nil {
			return err
		}
	}
	return nil
}

// Usage implements Usager. The statistics are stamped when the counters
// have been read, not when the read began: under CPU contention the reads
// wait, and rates from the earlier stamp swung from 0.4 to 3.0 cpus for a
// container steadily using 2 (the interference controller's input).
func (i *Isolator) Usage(containerID string) (*Statistics, error) {
	st, err := i.m.Stats(containerID, i.now())
	if err == nil {
		st.Timestamp = float64(i.now().UnixNano()) / 1e9
	}
	return st, err
}

// Watch implements Limiter.
func (i MemIsolator) Watch(containerID string) <-chan Limitation {
	return i.m.Watch(containerID)
}

// Stats measures a container's usage through the process-wide Manager of
// the configuration set with Configure.
func Stats(containerID string) (*Statistics, error) {
	m, err := shared(currentConfig())
	if err != nil {
		return nil, err
	}
	return m.Stats(containerID, time.Now())
}

func init() {
	for name, ctrls := range map[string][]Controller{
		"cgroups/cpu": {CPU},
		"cgroups/mem": {Memory},
		"cgroups/all": {CPU, Memory},
	} {
		containerizer.RegisterIsolator(name, func(opts containerizer.Options) (containerizer.Isolator, error) {
			return NewIsolator(name, currentConfig(), opts, ctrls...)
		})
	}
}
