package agent

import (
	"context"
	"fmt"
	"strings"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/cgroups"
	"mezzo/agent/containerizer/docker"
	_ "mezzo/agent/containerizer/pidns" // namespaces/pid, filesystem/posix and the init step

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// buildContainerizer configures the cgroups isolators from the agent's
// flags and builds the containerizers named by --containerizers: the mesos
// one with the --isolation isolators, checkpointing its containers under
// runtimeDir, and the docker one (--docker_* flags) checkpointing its log
// cursors under dockerRuntimeDir, composed as Mesos's composing
// containerizer when both are named. The two runtime directories differ
// because the mesos containerizer's recovery reads every directory of its
// own as a container. The docker containerizer is also returned (nil when
// not configured) for command tasks, which run without an executor.
//
// With a known boot id (bootID != "") the mesos containerizer's runtime
// records are not fsynced: after a host crash the boot id differs and
// recoverCheckpoint removes runtimeDir unread.
func buildContainerizer(cfg Config, runtimeDir, dockerRuntimeDir, bootID string) (containerizer.Containerizer, *docker.Docker, error) {
	withMesos, withDocker, err := parseContainerizers(cfg.Containerizers)
	if err != nil {
		return nil, nil, err
	}
	var iso []string
	for _, n := range strings.Split(cfg.Isolation, ",") {
		if n = strings.TrimSpace(n); n != "" {
			iso = append(iso, n)
		}
	}
	for _, n := range iso {
		if strings.HasPrefix(n, "cgroups/") {
			err := cgroups.Configure(cgroups.Config{
				Hierarchy: cfg.Cgroups.Hierarchy,
				Root:      cfg.Cgroups.Root,
				EnableCFS: cfg.Cgroups.EnableCFS,
				LimitSwap: cfg.Cgroups.LimitSwap,
				// Validate made it non-nil (Mesos's default, true).
				RevocableCPULowPriority: cfg.Oversubscription.RevocableCPULowPriority == nil || *cfg.Oversubscription.RevocableCPULowPriority,
			})
			if err != nil {
				return nil, nil, fmt.Errorf("agent config: %w", err)
			}
			break
		}
	}
	var mesosCz containerizer.Containerizer
	if withMesos {
		mesosCz, err = containerizer.New("mesos", containerizer.Options{
			Isolation:       iso,
			Clock:           cfg.Clock,
			Logger:          cfg.Logger,
			RuntimeDir:      runtimeDir,
			RuntimeUnsynced: bootID != "",
			Adapt:           adaptIsolator,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("agent: %w", err)
		}
	}
	if !withDocker {
		return mesosCz, nil, nil
	}
	d, err := docker.New(docker.Config{
		Options: containerizer.Options{
			Clock:      cfg.Clock,
			Logger:     cfg.Logger.With("containerizer", "docker"),
			RuntimeDir: dockerRuntimeDir,
		},
		Socket:           cfg.Docker.Socket,
		RegistryAuth:     cfg.Docker.registryAuth,
		SandboxDirectory: cfg.Docker.SandboxDirectory,
		RemoveDelay:      cfg.Docker.RemoveDelay,
		KeepOrphans:      cfg.Docker.KeepOrphans,
		EnableCFS:        cfg.Cgroups.EnableCFS,
		// Validate made it non-nil (Mesos's default, true).
		RevocableCPULowPriority: cfg.Oversubscription.RevocableCPULowPriority == nil || *cfg.Oversubscription.RevocableCPULowPriority,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("agent: docker containerizer: %w", err)
	}
	if mesosCz == nil {
		return d, d, nil
	}
	return docker.Compose(d, mesosCz), d, nil
}

// parseContainerizers checks a --containerizers value: "mesos", "docker"
// or both, comma separated, each at most once.
func parseContainerizers(s string) (withMesos, withDocker bool, err error) {
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		var seen *bool
		switch n {
		case "mesos":
			seen = &withMesos
		case "docker":
			seen = &withDocker
		default:
			return false, false, fmt.Errorf("agent config: 'containerizers' %q: unknown containerizer %q (known: docker, mesos)", s, n)
		}
		if *seen {
			return false, false, fmt.Errorf("agent config: 'containerizers' %q: %q is listed twice", s, n)
		}
		*seen = true
	}
	return withMesos, withDocker, nil
}

// adaptIsolator exposes the cgroups isolators' limitation and usage hooks
// (cgroups.Limiter, cgroups.Usager, which the containerizer package cannot
// name without an import cycle) as containerizer.Limiter and Usager.
func adaptIsolator(iso containerizer.Isolator) containerizer.Isolator {
	u, isUsager := iso.(cgroups.Usager)
	l, isLimiter := iso.(cgroups.Limiter)
	switch {
	case isLimiter && isUsager:
		return cgroupsLimiter{cgroupsUsager{iso, u}, l}
	case isUsager:
		return cgroupsUsager{iso, u}
	}
	return iso
}

type cgroupsUsager struct {
	containerizer.Isolator
	u cgroups.Usager
}

// Usage implements containerizer.Usager.
func (c cgroupsUsager) Usage(id string) (*mesos.ResourceStatistics, error) {
	s, err := c.u.Usage(id)
	if err != nil {
		return nil, err
	}
	return statisticsProto(s), nil
}

// Recover implements containerizer.RecoveringIsolator by forwarding to the
// cgroups isolator (adopting recovered containers' cgroups, sweeping
// orphans).
func (c cgroupsUsager) Recover(ctx context.Context, ids []string) error {
	if r, ok := c.Isolator.(containerizer.RecoveringIsolator); ok {
		return r.Recover(ctx, ids)
	}
	return nil
}

// BeforeKill implements containerizer.Killer by forwarding to the cgroups
// isolator (lifting a dying container's CPU limits).
func (c cgroupsUsager) BeforeKill(id string) error {
	if k, ok := c.Isolator.(containerizer.Killer); ok {
		return k.BeforeKill(id)
	}
	return nil
}

// Update implements containerizer.UpdatingIsolator by forwarding to the
// cgroups isolator (resizing a container whose executor's tasks changed).
func (c cgroupsUsager) Update(ctx context.Context, id string, rs []*mesos.Resource) error {
	if u, ok := c.Isolator.(containerizer.UpdatingIsolator); ok {
		return u.Update(ctx, id, rs)
	}
	return nil
}

var (
	_ containerizer.RecoveringIsolator = cgroupsUsager{}
	_ containerizer.Killer             = cgroupsUsager{}
	_ containerizer.UpdatingIsolator   = cgroupsUsager{}
)

type cgroupsLimiter struct {
	cgroupsUsager
	l cgroups.Limiter
}

// Limitations implements containerizer.Limiter: the cgroups channel,
// converted; closed when the cgroups one is.
func (c cgroupsLimiter) Limitations(id string) <-chan containerizer.Limitation {
	in := c.l.Watch(id)
	out := make(chan containerizer.Limitation, 1)
	go func() {
		defer close(out)
		for l := range in {
			out <- containerizer.Limitation{Reason: l.Reason, Message: l.Message, Resources: l.Resources}
		}
	}()
	return out
}

// statisticsProto converts the cgroups measurement to Mesos's
// ResourceStatistics; zero optional fields stay unset, as Mesos leaves
// what an isolator does not measure.
func statisticsProto(s *cgroups.Statistics) *mesos.ResourceStatistics {
	f := func(v float64) *float64 {
		if v == 0 {
			return nil
		}
		return proto.Float64(v)
	}
	u32 := func(v uint32) *uint32 {
		if v == 0 {
			return nil
		}
		return proto.Uint32(v)
	}
	u64 := func(v uint64) *uint64 {
		if v == 0 {
			return nil
		}
		return proto.Uint64(v)
	}
	return &mesos.ResourceStatistics{
		Timestamp:             proto.Float64(s.Timestamp),
		Processes:             u32(s.Processes),
		Threads:               u32(s.Threads),
		CpusUserTimeSecs:      proto.Float64(s.CPUsUserTimeSecs),
		CpusSystemTimeSecs:    proto.Float64(s.CPUsSystemTimeSecs),
		CpusLimit:             f(s.CPUsLimit),
		CpusNrPeriods:         u32(s.CPUsNrPeriods),
		CpusNrThrottled:       u32(s.CPUsNrThrottled),
		CpusThrottledTimeSecs: f(s.CPUsThrottledTimeSecs),
		MemTotalBytes:         u64(s.MemTotalBytes),
		MemTotalMemswBytes:    u64(s.MemTotalMemswBytes),
		MemLimitBytes:         u64(s.MemLimitBytes),
		MemSoftLimitBytes:     u64(s.MemSoftLimitBytes),
		MemFileBytes:          u64(s.MemFileBytes),
		MemAnonBytes:          u64(s.MemAnonBytes),
		MemCacheBytes:         u64(s.MemCacheBytes),
		MemRssBytes:           u64(s.MemRSSBytes),
		MemMappedFileBytes:    u64(s.MemMappedFileBytes),
		MemSwapBytes:          u64(s.MemSwapBytes),
		MemUnevictableBytes:   u64(s.MemUnevictableBytes),
	}
}
