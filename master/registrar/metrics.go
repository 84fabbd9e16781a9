package registrar

import (
	"math"
	"sort"
	"time"

	"mezzo/internal/timerstat"
)

// timerWindow is how many recent samples a timer keeps for its
// percentiles (Mesos keeps a bounded time series per timer too).
const timerWindow = 1000

// timer is a Mesos-style timer metric: the last sample plus the recent
// window for count, min, max and percentiles. Guarded by Registrar.mu.
type timer struct {
	samples []time.Duration // ring of the last timerWindow samples
	next    int
	last    time.Duration
	n       uint64
	sum     time.Duration // of every sample, for the Prometheus summary
}

type timers struct{ store, fetch timer }

func (t *timer) add(d time.Duration) {
	t.last = d
	t.n++
	t.sum += d
	if len(t.samples) < timerWindow {
		t.samples = append(t.samples, d)
		return
	}
	t.samples[t.next] = d
	t.next = (t.next + 1) % timerWindow
}

// percentiles are the suffixes Mesos's timers report.
var percentiles = []struct {
	suffix string
	p      float64
}{{"p50", 0.5}, {"p90", 0.9}, {"p95", 0.95}, {"p99", 0.99}, {"p999", 0.999}, {"p9999", 0.9999}}

// put writes the timer under name in milliseconds: name is the last
// sample; name/count, /min, /max and the percentiles describe the window.
// A timer without samples writes nothing, as a Mesos timer that never
// fired is absent from the snapshot.
func (t *timer) put(m map[string]float64, name string) {
	if t.n == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	sorted := append([]time.Duration(nil), t.samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	m[name] = ms(t.last)
	m[name+"/count"] = float64(len(sorted))
	m[name+"/min"] = ms(sorted[0])
	m[name+"/max"] = ms(sorted[len(sorted)-1])
	for _, p := range percentiles {
		// Linear interpolation between the closest ranks, as libprocess's
		// TimeSeries percentiles do.
		pos := p.p * float64(len(sorted)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(sorted)-1)
		v := ms(sorted[lo]) + (pos-float64(lo))*(ms(sorted[hi])-ms(sorted[lo]))
		m[name+"/"+p.suffix] = v
	}
}

// Metrics returns the registrar's metrics with Mesos's names:
// registrar/queued_operations, registrar/registry_size_bytes (the encoded
// registry; recomputed only when the registry changed),
// registrar/state_fetch_ms and registrar/state_store_ms with their
// window statistics, and registrar/log/recovered.
func (r *Registrar) Metrics() map[string]float64 {
	m := map[string]float64{}
	r.mu.Lock()
	m["registrar/queued_operations"] = float64(len(r.queue))
	m["registrar/log/recovered"] = b2f(r.recovered)
	r.timers.store.put(m, "registrar/state_store_ms")
	r.timers.fetch.put(m, "registrar/state_fetch_ms")
	r.mu.Unlock()
	m["registrar/registry_size_bytes"] = float64(r.registrySize())
	return m
}

// Timers returns the write and fetch timers' statistics under their Mesos
// names (registrar/state_store_ms, registrar/state_fetch_ms) for the
// Prometheus summaries; a timer without samples is absent, as in Metrics.
func (r *Registrar) Timers() map[string]timerstat.Stats {
	out := map[string]timerstat.Stats{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, t := range map[string]*timer{"registrar/state_store_ms": &r.timers.store, "registrar/state_fetch_ms": &r.timers.fetch} {
		if t.n > 0 {
			out[name] = t.stats()
		}
	}
	return out
}

// stats summarizes t for Timers.
func (t *timer) stats() timerstat.Stats {
	sorted := append([]time.Duration(nil), t.samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	q := make(map[float64]float64, len(percentiles))
	for _, p := range percentiles {
		pos := p.p * float64(len(sorted)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(sorted)-1)
		q[p.p] = (sorted[lo].Seconds() + (pos-float64(lo))*(sorted[hi].Seconds()-sorted[lo].Seconds()))
	}
	return timerstat.Stats{Count: t.n, Sum: t.sum.Seconds(), Quantiles: q}
}

// registrySize is the size of the registry encoded as the snapshot's
// protobuf, cached per registry version: encoding a large registry on every
// metrics read would cost more than the read.
func (r *Registrar) registrySize() int {
	mc := r.cfg.Machine
	v := mc.Version()
	r.mu.Lock()
	if r.sizeValid && r.sizeVersion == v {
		n := r.size
		r.mu.Unlock()
		return n
	}
	r.mu.Unlock()
	mc.mu.RLock()
	n := len(encodeRegistry(mc.s, false))
	mc.mu.RUnlock()
	r.mu.Lock()
	r.size, r.sizeVersion, r.sizeValid = n, v, true
	r.mu.Unlock()
	return n
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
