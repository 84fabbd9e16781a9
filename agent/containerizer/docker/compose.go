package docker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
)

// Composite is --containerizers=docker,mesos: executors whose
// ContainerInfo has type DOCKER go to the docker containerizer, all others
// to the fallback (the mesos containerizer). Calls naming a container go
// to whichever containerizer knows it. It lives here rather than in
// package containerizer because that package cannot import this one.
type Composite struct {
	docker   *Docker
	fallback containerizer.Containerizer
}

var (
	_ containerizer.Containerizer      = (*Composite)(nil)
	_ containerizer.LimitationReporter = (*Composite)(nil)
	_ containerizer.UsageReporter      = (*Composite)(nil)
	_ containerizer.Recoverer          = (*Composite)(nil)
)

// Compose builds the composite of the docker containerizer and a
// fallback for non-DOCKER containers.
func Compose(d *Docker, fallback containerizer.Containerizer) *Composite {
	return &Composite{docker: d, fallback: fallback}
}

// Docker returns the docker containerizer, for LaunchTask.
func (c *Composite) Docker() *Docker { return c.docker }

func (c *Composite) pick(id string) containerizer.Containerizer {
	if c.docker.lookup(id) != nil {
		return c.docker
	}
	return c.fallback
}

// Launch implements containerizer.Containerizer.
func (c *Composite) Launch(ctx context.Context, cfg containerizer.ContainerConfig) (containerizer.Container, error) {
	if c.docker.Accepts(cfg) {
		return c.docker.Launch(ctx, cfg)
	}
	return c.fallback.Launch(ctx, cfg)
}

// Wait implements containerizer.Containerizer.
func (c *Composite) Wait(ctx context.Context, id string) (containerizer.Termination, error) {
	return c.pick(id).Wait(ctx, id)
}

// Destroy implements containerizer.Containerizer.
func (c *Composite) Destroy(ctx context.Context, id string, grace time.Duration) error {
	return c.pick(id).Destroy(ctx, id, grace)
}

// Containers implements containerizer.Containerizer.
func (c *Composite) Containers() []string {
	out := append(c.docker.Containers(), c.fallback.Containers()...)
	sort.Strings(out)
	return out
}

// Limitation implements containerizer.LimitationReporter (when the
// containerizer of the container does).
func (c *Composite) Limitation(id string) (containerizer.Limitation, bool) {
	if l, ok := c.pick(id).(containerizer.LimitationReporter); ok {
		return l.Limitation(id)
	}
	return containerizer.Limitation{}, false
}

// Usage implements containerizer.UsageReporter (when the containerizer of
// the container does).
func (c *Composite) Usage(ctx context.Context, id string) (*mesos.ResourceStatistics, error) {
	if u, ok := c.pick(id).(containerizer.UsageReporter); ok {
		return u.Usage(ctx, id)
	}
	return nil, fmt.Errorf("usage %s: the containerizer of the container does not measure usage", id)
}

// Recover implements containerizer.Recoverer: both containerizers
// recover (the fallback if it can); the result is merged and sorted by ID.
func (c *Composite) Recover(ctx context.Context) ([]containerizer.Recovered, error) {
	var a []containerizer.Recovered
	var errA error
	if r, ok := c.fallback.(containerizer.Recoverer); ok {
		a, errA = r.Recover(ctx)
	}
	b, errB := c.docker.Recover(ctx)
	out := append(a, b...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errors.Join(errA, errB)
}

// RecoverKnown is Recover for an agent that knows which containers its
// checkpoint lists: the fallback recovers as usual (if it can), the docker
// containerizer re-attaches to the known containers and removes its
// orphans (Docker.RecoverKnown).
func (c *Composite) RecoverKnown(ctx context.Context, known []string) ([]containerizer.Recovered, error) {
	var a []containerizer.Recovered
	var errA error
	if r, ok := c.fallback.(containerizer.Recoverer); ok {
		a, errA = r.Recover(ctx)
	}
	b, errB := c.docker.RecoverKnown(ctx, known)
	out := append(a, b...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errors.Join(errA, errB)
}

// Close closes the docker containerizer (Docker.Close); the fallback has
// nothing to close.
func (c *Composite) Close() error { return c.docker.Close() }
