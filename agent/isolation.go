package agent

import (
	"fmt"
	"strings"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/cgroups"
	_ "mezzo/agent/containerizer/pidns" // namespaces/pid, filesystem/posix and the init step

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// buildContainerizer configures the cgroups isolators from the agent's
// flags and builds the containerizer named by --containerizers with the
// --isolation isolators, checkpointing its containers under runtimeDir.
func buildContainerizer(cfg Config, runtimeDir string) (containerizer.Containerizer, error) {
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
			})
			if err != nil {
				return nil, fmt.Errorf("agent config: %w", err)
			}
			break
		}
	}
	cz, err := containerizer.New(cfg.Containerizers, containerizer.Options{
		Isolation:  iso,
		Clock:      cfg.Clock,
		Logger:     cfg.Logger,
		RuntimeDir: runtimeDir,
		Adapt:      adaptIsolator,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return cz, nil
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
