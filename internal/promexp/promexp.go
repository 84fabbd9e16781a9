package promexp

import (
	"net/http"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"mezzo/internal/timerstat"
)

// Sample is one series that has no Mesos key: a family name, its help, its
// type, label pairs (name, value, name, value, ...) and the value.
type Sample struct {
	Name   string
	Help   string
	Type   prometheus.ValueType
	Labels []string
	Value  float64
}

// Source is what one process exposes. Every function may be nil and is
// called once per scrape, from the scrape's goroutine.
type Source struct {
	// Values returns the /metrics/snapshot values under Mesos's keys; an
	// error fails the scrape (500).
	Values func() (map[string]float64, error)
	// Timers returns the duration timers under their Mesos names
	// (allocator/mesos/allocation_run_ms, ...), exposed as summaries.
	Timers func() map[string]timerstat.Stats
	// Samples returns the series without a Mesos key.
	Samples func() []Sample
}

// Handler serves src at /metrics: its families plus the Go runtime
// (go_*), process (process_*) and build (go_build_info) collectors, in
// whichever exposition format the scraper negotiates.
func Handler(src Source) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
		collector{src},
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

// collector turns a Source into metrics at each scrape. It is unchecked
// (Describe sends nothing): the families and label values depend on the
// cluster (roles, frameworks) and are known only when collected.
type collector struct{ src Source }

func (collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	var values map[string]float64
	if c.src.Values != nil {
		v, err := c.src.Values()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("mezzo_up", "The process's metrics could be read.", nil, nil), err)
			return
		}
		values = v
	}
	var timers map[string]timerstat.Stats
	if c.src.Timers != nil {
		timers = c.src.Timers()
	}
	var extra []Sample
	if c.src.Samples != nil {
		extra = c.src.Samples()
	}
	for _, m := range Collect(values, timers, extra) {
		ch <- m
	}
}

// Collect translates values (Mesos keys), timers and extra samples into
// Prometheus metrics. A key that no rule knows is left out and counted in
// mezzo_metrics_unmapped_keys (see Unmapped); a series that would repeat
// another (same name and labels) is left out too, since an exposition may
// hold each series once.
func Collect(values map[string]float64, timers map[string]timerstat.Stats, extra []Sample) []prometheus.Metric {
	samples, unmapped := Translate(values)
	samples = append(samples, extra...)
	samples = append(samples, Sample{
		Name:  "mezzo_metrics_unmapped_keys",
		Help:  "Metrics under a Mesos key that has no Prometheus name (0 unless the two lists drifted apart).",
		Type:  prometheus.GaugeValue,
		Value: float64(len(unmapped)),
	})
	out := make([]prometheus.Metric, 0, len(samples)+len(timers))
	descs := map[string]*prometheus.Desc{}
	seen := map[string]bool{}
	for _, s := range samples {
		names, vals := splitLabels(s.Labels)
		// \xff cannot occur in a name or a UTF-8 label value, so the key
		// is unambiguous whatever the values contain.
		key := s.Name + "\xff" + strings.Join(s.Labels, "\xff")
		if seen[key] {
			continue
		}
		seen[key] = true
		dk := s.Name + "\xff" + strings.Join(names, "\xff")
		d := descs[dk]
		if d == nil {
			d = prometheus.NewDesc(s.Name, s.Help, names, nil)
			descs[dk] = d
		}
		out = append(out, prometheus.MustNewConstMetric(d, s.Type, s.Value, vals...))
	}
	for _, name := range sortedKeys(timers) {
		t, ok := summaries[name]
		if !ok {
			continue
		}
		st := timers[name]
		d := prometheus.NewDesc(t.name, t.help, nil, nil)
		out = append(out, prometheus.MustNewConstSummary(d, st.Count, st.Sum, st.Quantiles))
	}
	return out
}

// Unmapped returns the keys of values that no rule translates, sorted.
func Unmapped(values map[string]float64) []string {
	_, u := Translate(values)
	return u
}

func splitLabels(pairs []string) (names, values []string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		names = append(names, pairs[i])
		values = append(values, pairs[i+1])
	}
	return names, values
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
