// Package timerstat carries a duration metric's statistics from where it is
// timed (the allocator's runs, the registrar's writes) to the Prometheus
// exposition, which needs what the Mesos keys leave out: the cumulative
// count and sum. It holds only the value type so that the timing packages
// need not import the exposition's libraries.
package timerstat

// Stats describes a timer at one moment.
type Stats struct {
	// Count is the number of samples since the process started.
	Count uint64
	// Sum is the total of every sample since the process started, in
	// seconds.
	Sum float64
	// Quantiles maps a quantile (0.5, 0.99, ...) to its value in seconds
	// over the timer's recent window; empty without samples.
	Quantiles map[float64]float64
}
