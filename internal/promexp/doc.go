// Package promexp serves mezzo's metrics at /metrics in the Prometheus
// exposition format, on masters and agents alike.
//
// It does not count anything itself. The values are the ones that
// /metrics/snapshot serves under Mesos's key names; a table of rules
// (rules.go) turns each key into a Prometheus family with labels: roles,
// frameworks, task states, resources and the like become label values
// instead of parts of the name, milliseconds become seconds, megabytes
// bytes, counters end in _total and Mesos's percentile timers become
// summaries (from timerstat.Stats, which carry the cumulative count and
// sum the Mesos keys leave out). Series that Mesos has no key for (per
// agent resources on the master, the agent's identity) come as Samples.
// Each handler has its own registry with the Go runtime, process and
// build-info collectors of client_golang.
//
// Callers: master/endpoints (the master's /metrics) and agent/httpapi (the
// agent's). docs/metrics.md lists the families.
package promexp
