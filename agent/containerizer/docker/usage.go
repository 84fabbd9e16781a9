package docker

import (
	"context"
	"fmt"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"

	"github.com/moby/moby/api/types/container"
)

// Usage implements containerizer.UsageReporter from the engine's
// one-shot container statistics.
func (d *Docker) Usage(ctx context.Context, id string) (*mesos.ResourceStatistics, error) {
	d.mu.Lock()
	c := d.live[id]
	d.mu.Unlock()
	if c == nil || c.dockerID == "" {
		return nil, fmt.Errorf("usage %s: %w", id, containerizer.ErrUnknownContainer)
	}
	st, err := d.engine.stats(ctx, c.dockerID)
	if err != nil {
		return nil, fmt.Errorf("usage %s: %w", id, err)
	}
	return statistics(st, c, d.clock.Now()), nil
}

func statistics(st *container.StatsResponse, c *ctr, now time.Time) *mesos.ResourceStatistics {
	f := func(v float64) *float64 { return &v }
	u := func(v uint64) *uint64 { return &v }
	rs := &mesos.ResourceStatistics{
		Timestamp:          f(float64(now.UnixNano()) / 1e9),
		CpusUserTimeSecs:   f(float64(st.CPUStats.CPUUsage.UsageInUsermode) / 1e9),
		CpusSystemTimeSecs: f(float64(st.CPUStats.CPUUsage.UsageInKernelmode) / 1e9),
		MemTotalBytes:      u(st.MemoryStats.Usage),
	}
	if c.cpus > 0 {
		rs.CpusLimit = f(c.cpus)
	}
	if c.memLimit > 0 {
		rs.MemLimitBytes = u(uint64(c.memLimit))
	}
	if rss, ok := st.MemoryStats.Stats["rss"]; ok { // cgroup v1
		rs.MemRssBytes = u(rss)
	} else if anon, ok := st.MemoryStats.Stats["anon"]; ok { // cgroup v2
		rs.MemRssBytes = u(anon)
	}
	if n := st.PidsStats.Current; n > 0 {
		p := uint32(n)
		rs.Processes = &p
	}
	return rs
}
