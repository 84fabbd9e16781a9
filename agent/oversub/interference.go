package oversub

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"mezzo/api/mesos"
)

// interferenceController (ours) kills the fewest revocable containers
// needed for the regular containers' CPU demand to fit beside what the
// revocable ones were lent.
//
// Between two looks it measures each container's CPU rate from its cpu
// times and, from cgroups cpu.stat, the share of CFS periods in which it was
// throttled. A regular container's demand is its measured rate, or its
// whole cpu allocation when it was throttled in at least
// Config.ThrottleRatio of the periods (its rate then understates what it
// wants). A revocable container claims its revocable cpus, what it was
// lent, not its measured rate: a CPU-bound tenant fills every idle cycle at
// its low CPU priority (--revocable_cpu_low_priority), and counting that
// as demand would evict tenants that only use CPU nobody else wants. When
//
//	sum(regular demand) + sum(revocable cpus lent) > agent cpus
//
// the lent CPU is wanted back: it kills revocable containers, largest
// allocation first, until the excess is covered (the fewest kills). If
// killing every revocable container cannot cover it (regular containers
// alone exceed the agent), it kills them all: none of their CPU can be
// spared. A regular container without a rate yet (first look) is not
// counted: the next round, one correction interval later, has its rate.
//
// Throttling alone, with the demand fitting, kills nothing: a container
// throttled by its own CFS quota gains nothing from evictions.
type interferenceController struct {
	usage   UsageSource
	ratio   float64
	samples map[string]cpuSample
}

// cpuSample is one container's cumulative cpu counters at a timestamp.
type cpuSample struct {
	cpuSecs, at    float64
	periods, thrtl uint32
	throttledSecs  float64
}

func newInterference(cfg Config, usage UsageSource) (QoSController, error) {
	if usage == nil {
		return nil, errors.New("interference controller: no usage source")
	}
	return &interferenceController{usage: usage, ratio: cfg.ThrottleRatio, samples: map[string]cpuSample{}}, nil
}

// measured is one container's rate and throttling over the last interval.
type measured struct {
	c         ContainerUsage
	rate      float64
	haveRate  bool
	throttled bool
}

func (ic *interferenceController) Corrections(ctx context.Context, _ time.Time) ([]Correction, error) {
	s, err := ic.usage.Usage(ctx)
	if err != nil {
		return nil, err
	}
	capacity := s.Total.NonRevocable().Scalar("cpus")
	if capacity <= 0 {
		return nil, errors.New("interference controller: the agent's total has no cpus")
	}
	live := map[string]bool{}
	var regular, revocable []measured
	for _, c := range s.Containers {
		live[c.ContainerID] = true
		m := ic.measure(c)
		if c.Revocable() {
			revocable = append(revocable, m)
		} else {
			regular = append(regular, m)
		}
	}
	for id := range ic.samples {
		if !live[id] {
			delete(ic.samples, id)
		}
	}
	demand, throttled := 0.0, 0
	for _, m := range regular {
		switch {
		case m.throttled:
			throttled++
			demand += max(m.rate, m.c.Allocated.Scalar("cpus"))
		case m.haveRate:
			demand += m.rate
		}
	}
	lent := 0.0
	for _, m := range revocable {
		lent += lentCPUs(m.c)
	}
	excess := demand + lent - capacity
	if excess <= 1e-9 || len(revocable) == 0 {
		return nil, nil
	}
	sort.SliceStable(revocable, func(i, j int) bool {
		a, b := lentCPUs(revocable[i].c), lentCPUs(revocable[j].c)
		if a != b {
			return a > b
		}
		return revocable[i].c.ContainerID < revocable[j].c.ContainerID
	})
	why := fmt.Sprintf("interference QoS controller: regular containers demand %.2f cpus and revocable ones hold %.2f, of the agent's %g (%d regular container(s) throttled)",
		demand, lent, capacity, throttled)
	var out []Correction
	freed := 0.0
	for _, m := range revocable {
		if freed >= excess-1e-9 {
			break
		}
		out = append(out, kill(m.c, "interference", why))
		freed += lentCPUs(m.c)
	}
	return out, nil
}

// lentCPUs is what a revocable container was lent: its revocable cpus.
// The regular cpus it may also hold (a command executor's 0.1) were never
// part of the estimate and come out of no regular container's share.
func lentCPUs(c ContainerUsage) float64 { return c.Allocated.Revocable().Scalar("cpus") }

// measure compares c's statistics with its previous sample.
func (ic *interferenceController) measure(c ContainerUsage) measured {
	m := measured{c: c}
	st := c.Statistics
	if st == nil {
		return m
	}
	now := sampleOf(st)
	prev, ok := ic.samples[c.ContainerID]
	ic.samples[c.ContainerID] = now
	if !ok || now.at <= prev.at || now.cpuSecs < prev.cpuSecs {
		return m // first look, or counters restarted
	}
	dt := now.at - prev.at
	m.rate, m.haveRate = (now.cpuSecs-prev.cpuSecs)/dt, true
	if dp := int64(now.periods) - int64(prev.periods); dp > 0 {
		dth := int64(now.thrtl) - int64(prev.thrtl)
		m.throttled = float64(dth)/float64(dp) >= ic.ratio
	} else if dts := now.throttledSecs - prev.throttledSecs; dts > 0 {
		// No period counts (some kernels report only the time): the share
		// of wall time spent throttled.
		m.throttled = dts/dt >= ic.ratio
	}
	return m
}

func sampleOf(st *mesos.ResourceStatistics) cpuSample {
	return cpuSample{
		cpuSecs:       st.GetCpusUserTimeSecs() + st.GetCpusSystemTimeSecs(),
		at:            st.GetTimestamp(),
		periods:       st.GetCpusNrPeriods(),
		thrtl:         st.GetCpusNrThrottled(),
		throttledSecs: st.GetCpusThrottledTimeSecs(),
	}
}
