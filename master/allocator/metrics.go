package allocator

import (
	"math"
	"sort"

	"mezzo/internal/timerstat"
)

// runWindow is how many recent allocation run times the percentiles cover
// (Mesos's timers keep a bounded window too).
const runWindow = 1000

// runMetrics counts allocation runs and keeps recent run times.
type runMetrics struct {
	runs   uint64
	times  []float64 // ring of the last runWindow run times, ms
	next   int
	lastMS float64
	sumMS  float64 // of every run, for the Prometheus summary
}

func (m *runMetrics) record(ms float64) {
	m.runs++
	m.lastMS = ms
	m.sumMS += ms
	if len(m.times) < runWindow {
		m.times = append(m.times, ms)
		return
	}
	m.times[m.next] = ms
	m.next = (m.next + 1) % runWindow
}

// percentile of sorted xs (nearest rank with interpolation, as Mesos's
// TimeSeries statistics).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	pos := p * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if lo == hi {
		return xs[lo]
	}
	return xs[lo] + (xs[hi]-xs[lo])*(pos-float64(lo))
}

// runQuantiles are the quantiles the Prometheus summary reports, Mesos's
// timer percentiles.
var runQuantiles = []float64{.5, .9, .95, .99, .999, .9999}

// timers returns the allocation run timer for the Prometheus summary under
// its Mesos name; empty before the first run.
func (c *core) timers() map[string]timerstat.Stats {
	if c.metrics.runs == 0 {
		return map[string]timerstat.Stats{}
	}
	xs := append([]float64(nil), c.metrics.times...)
	sort.Float64s(xs)
	q := make(map[float64]float64, len(runQuantiles))
	for _, p := range runQuantiles {
		q[p] = percentile(xs, p) / 1e3
	}
	return map[string]timerstat.Stats{
		"allocator/mesos/allocation_run_ms": {Count: c.metrics.runs, Sum: c.metrics.sumMS / 1e3, Quantiles: q},
	}
}

// metrics renders the allocator's metrics under Mesos's key names.
func (c *core) metricsMap(queued int) map[string]float64 {
	const p = "allocator/mesos/"
	m := map[string]float64{
		p + "allocation_runs":         float64(c.metrics.runs),
		p + "event_queue_dispatches":  float64(queued),
		p + "allocation_run_ms/count": float64(len(c.metrics.times)),
		// Not a Mesos key (Mesos's allocator CHECK-fails instead).
		p + "allocation_updates_rejected": float64(c.updatesRejected),
	}
	if n := len(c.metrics.times); n > 0 {
		xs := append([]float64(nil), c.metrics.times...)
		sort.Float64s(xs)
		m[p+"allocation_run_ms"] = c.metrics.lastMS
		m[p+"allocation_run_ms/min"] = xs[0]
		m[p+"allocation_run_ms/max"] = xs[n-1]
		for _, q := range []struct {
			name string
			p    float64
		}{{"p50", .5}, {"p90", .9}, {"p95", .95}, {"p99", .99}, {"p999", .999}, {"p9999", .9999}} {
			m[p+"allocation_run_ms/"+q.name] = percentile(xs, q.p)
		}
	}
	// Cluster totals and what is offered or allocated.
	var allocQ qv
	for _, r := range c.roles {
		allocQ = allocQ.add(r.leaf.alloc)
	}
	for i, name := range c.names.list {
		if c.totalQ.at(i) == 0 && allocQ.at(i) == 0 {
			continue
		}
		m[p+"resources/"+name+"/total"] = fromMilli(c.totalQ.at(i))
		m[p+"resources/"+name+"/offered_or_allocated"] = fromMilli(allocQ.at(i))
	}
	for rn, r := range c.roles {
		m[p+"roles/"+rn+"/shares/dominant"] = dominant(c.tree[rn].alloc, c.totalQ)
		filters := 0
		for _, n := range r.fws.kids {
			filters += n.nfilters
		}
		m[p+"offer_filters/roles/"+rn+"/active"] = float64(filters)
	}
	for rn, q := range c.quotas {
		var cons qv
		if n := c.tree[rn]; n != nil {
			cons = n.alloc
		}
		names := map[string]bool{}
		for name, x := range q.Guarantees {
			m[p+"quota/roles/"+rn+"/resources/"+name+"/guarantee"] = x
			names[name] = true
		}
		for name, x := range q.Limits {
			m[p+"quota/roles/"+rn+"/resources/"+name+"/limit"] = x
			names[name] = true
		}
		for name := range names {
			m[p+"quota/roles/"+rn+"/resources/"+name+"/offered_or_allocated"] = fromMilli(cons.at(c.names.index(name)))
		}
	}
	return m
}
