package oversub

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// slackEstimator lends what regular containers were allocated but do not
// use ("usage slack" in Mesos's words), for the resources the operator
// allows (cpus only by default: memory and disk are not compressible, so
// lending them risks an OOM or a full disk when the owner comes back).
//
// Per regular container and resource it keeps a smoothed usage: a rise is
// taken at once (the owner gets its slack back on the next estimate) and a
// fall decays with time constant Config.SlackWindow (slack grows only after
// the owner has stayed idle). Each container then lends
// allocation*(1-margin) - smoothed usage, if positive. A container not yet
// measured twice (cpu needs two samples for a rate) lends nothing.
type slackEstimator struct {
	usage  UsageSource
	margin float64
	window time.Duration
	names  []string
	seen   map[string]*slackState
}

// slackState is one regular container's history.
type slackState struct {
	// cpuSecs and at are the last cpu-time sample and its timestamp.
	cpuSecs, at float64
	haveCPU     bool
	// smoothed usage by resource name (cpus, mem in MB, disk in MB) and
	// when each was last updated.
	used    map[string]float64
	updated map[string]time.Time
}

func newSlack(cfg Config, usage UsageSource) (ResourceEstimator, error) {
	if usage == nil {
		return nil, fmt.Errorf("slack estimator: no usage source")
	}
	names := append([]string(nil), cfg.SlackResources...)
	sort.Strings(names)
	return &slackEstimator{usage: usage, margin: cfg.SlackMargin, window: cfg.SlackWindow,
		names: names, seen: map[string]*slackState{}}, nil
}

func (e *slackEstimator) Oversubscribable(ctx context.Context, now time.Time) (resources.Resources, error) {
	s, err := e.usage.Usage(ctx)
	if err != nil {
		return resources.Resources{}, err
	}
	lend, used := map[string]float64{}, map[string]float64{}
	var held resources.Resources
	live := map[string]bool{}
	for _, c := range s.Containers {
		if c.Revocable() {
			// Only estimator slack is the estimator's to account for: a
			// lent reservation is the master's, not part of the estimate.
			held = held.Add(c.Allocated.Throttleable())
			continue
		}
		live[c.ContainerID] = true
		st := e.seen[c.ContainerID]
		if st == nil {
			st = &slackState{used: map[string]float64{}, updated: map[string]time.Time{}}
			e.seen[c.ContainerID] = st
		}
		e.observe(st, c.Statistics, now)
		for _, n := range e.names {
			a := c.Allocated.Scalar(n)
			u, ok := st.used[n]
			if a <= 0 || !ok {
				continue
			}
			used[n] += u
			if l := a*(1-e.margin) - u; l > 0 {
				lend[n] += l
			}
		}
	}
	for id := range e.seen {
		if !live[id] {
			delete(e.seen, id) // ended: its history must not leak into a reused id
		}
	}
	held = unallocated(held)
	var out []*mesos.Resource
	for _, n := range e.names {
		l := lend[n]
		if t := s.Total.Scalar(n); t > 0 {
			// Never past the agent itself, less the margin: allocations
			// may add up to more than its total (each command executor's
			// 0.1 cpus are outside it), and the QoS controllers compare
			// what was lent with the total. Lending the allocations' 90%
			// of an agent whose cpus they all hold left no margin, and the
			// interference controller evicted tenants at every blip.
			l = min(l, t*(1-e.margin)-used[n])
		}
		v := quantize(n, l-held.Scalar(n))
		if v <= 0 {
			continue
		}
		out = append(out, &mesos.Resource{
			Name:      proto.String(n),
			Type:      mesos.Value_SCALAR.Enum(),
			Scalar:    &mesos.Value_Scalar{Value: proto.Float64(v)},
			Role:      proto.String("*"),
			Revocable: throttleable(),
		})
	}
	return resources.FromProto(out)
}

// observe folds one measurement into st.
func (e *slackEstimator) observe(st *slackState, stat *mesos.ResourceStatistics, now time.Time) {
	if stat == nil {
		// Unmeasured this round: forget the usage so nothing is lent on
		// stale numbers, but keep the cpu sample for the next rate.
		clear(st.used)
		return
	}
	cpu := stat.GetCpusUserTimeSecs() + stat.GetCpusSystemTimeSecs()
	ts := stat.GetTimestamp()
	if st.haveCPU && ts > st.at && cpu >= st.cpuSecs {
		e.fold(st, "cpus", (cpu-st.cpuSecs)/(ts-st.at), now)
	} else if st.haveCPU && cpu < st.cpuSecs {
		delete(st.used, "cpus") // counters went back: a new process; start over
	}
	st.cpuSecs, st.at, st.haveCPU = cpu, ts, true
	if stat.MemRssBytes != nil {
		e.fold(st, "mem", float64(stat.GetMemRssBytes())/(1<<20), now)
	}
	if stat.DiskUsedBytes != nil {
		e.fold(st, "disk", float64(stat.GetDiskUsedBytes())/(1<<20), now)
	}
}

// fold updates the smoothed usage of name with sample v taken at now: rises
// at once, falls as an exponentially weighted moving average over the
// window (weight 1-exp(-dt/window), so irregular sampling is handled).
func (e *slackEstimator) fold(st *slackState, name string, v float64, now time.Time) {
	old, ok := st.used[name]
	if !ok || v >= old {
		st.used[name], st.updated[name] = v, now
		return
	}
	dt := now.Sub(st.updated[name])
	if dt <= 0 {
		return
	}
	alpha := 1 - math.Exp(-float64(dt)/float64(e.window))
	st.used[name], st.updated[name] = old+alpha*(v-old), now
}

// quantize rounds an amount down to what is worth offering: 0.01 cpus, 1 MB.
// Rounding down keeps the estimate from flapping on measurement noise in the
// last digits and never lends more than measured.
func quantize(name string, v float64) float64 {
	if name == "cpus" {
		return math.Floor(v*100+1e-9) / 100
	}
	return math.Floor(v + 1e-9)
}
