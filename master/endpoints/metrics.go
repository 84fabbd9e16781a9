package endpoints

import (
	"bytes"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/stout"
	"mezzo/internal/sysmetrics"
	"mezzo/master"
	"mezzo/resources"
)

// TerminalTaskCounters are the task-state metrics Mesos keeps as counters of
// terminal transitions (src/master/metrics.cpp: tasks_finished, …, are
// Counter, not Gauge), so completed tasks dropped from the bounded
// completed-task buffers still count. The master supplies them in
// Snapshot.Counters; a missing one is reported as 0.
var TerminalTaskCounters = []string{
	"master/tasks_finished",
	"master/tasks_failed",
	"master/tasks_killed",
	"master/tasks_lost",
	"master/tasks_error",
	"master/tasks_dropped",
	"master/tasks_gone",
	"master/tasks_gone_by_operator",
}

// Metrics computes the master's /metrics/snapshot document: the gauges Mesos
// derives from its state (uptime, elected, agents, frameworks, offers, live
// task states, cluster resources) merged with the snapshot's counters. Keys
// are Mesos's metric names.
func Metrics(s *master.Snapshot, now time.Time) map[string]float64 {
	m := make(map[string]float64, 64+len(s.Counters))
	for _, k := range TerminalTaskCounters {
		m[k] = 0
	}
	for _, k := range master.MessageCounters {
		m[k] = 0
	}
	for k, v := range s.Counters {
		m[k] = v
	}

	if !s.StartTime.IsZero() {
		m["master/uptime_secs"] = now.Sub(s.StartTime).Seconds()
	} else {
		m["master/uptime_secs"] = 0
	}
	m["master/elected"] = b2f(s.Elected)

	var active, connected float64
	for _, a := range s.Agents {
		active += b2f(a.Active)
		connected += b2f(a.Connected)
	}
	n := float64(len(s.Agents))
	m["master/slaves_active"] = active
	m["master/slaves_inactive"] = n - active
	m["master/slaves_connected"] = connected
	m["master/slaves_disconnected"] = n - connected
	m["master/slaves_unreachable"] = float64(len(s.UnreachableAgents))

	active, connected = 0, 0
	var offers float64
	for _, f := range s.Frameworks {
		active += b2f(f.Active)
		connected += b2f(f.Connected)
		offers += float64(len(f.Offers))
	}
	n = float64(len(s.Frameworks))
	m["master/frameworks_active"] = active
	m["master/frameworks_inactive"] = n - active
	m["master/frameworks_connected"] = connected
	m["master/frameworks_disconnected"] = n - connected
	m["master/outstanding_offers"] = offers

	// Live task-state gauges count what is on the agents now (registered
	// frameworks' tasks plus orphans); unreachable counts the frameworks'
	// unreachable tasks, as Master::_tasks_unreachable does.
	live := map[mesos.TaskState]float64{}
	var unreachable float64
	for _, f := range s.Frameworks {
		for _, t := range f.Tasks {
			live[t.GetState()]++
		}
		unreachable += float64(len(f.UnreachableTasks))
	}
	for _, t := range s.OrphanTasks {
		live[t.GetState()]++
	}
	m["master/tasks_staging"] = live[mesos.TaskState_TASK_STAGING]
	m["master/tasks_starting"] = live[mesos.TaskState_TASK_STARTING]
	m["master/tasks_running"] = live[mesos.TaskState_TASK_RUNNING]
	m["master/tasks_killing"] = live[mesos.TaskState_TASK_KILLING]
	m["master/tasks_unreachable"] = unreachable
	for k, v := range frameworkMetrics(s) {
		m[k] = v
	}

	var total, used []*mesos.Resource
	for _, a := range s.Agents {
		total = append(total, a.Total...)
		used = append(used, a.Used...)
	}
	t, _ := resources.FromProto(total)
	u, _ := resources.FromProto(used)
	for _, name := range []string{"cpus", "gpus", "mem", "disk"} {
		resourceGauges(m, "master/"+name, name, t.NonRevocable(), u.NonRevocable())
		resourceGauges(m, "master/"+name+"_revocable", name, t.Revocable(), u.Revocable())
	}
	return m
}

// allocatorCounters are the allocator metrics that only grow.
var allocatorCounters = []string{"allocator/mesos/allocation_runs"}

// metrics is Metrics merged with the allocator's metrics when the Source
// reports them: allocation runs and run times with
// percentiles, per-role dominant shares, offer filters and quota; with the
// host's system/* metrics; and with Options.ExtraMetrics (the registrar's).
func (h *handlers) metrics(s *master.Snapshot) map[string]float64 {
	m := Metrics(s, h.clock.Now())
	for k, v := range h.src.AllocatorMetrics() {
		m[k] = v
	}
	for k, v := range sysmetrics.Read() {
		m[k] = v
	}
	if h.extra != nil {
		for k, v := range h.extra() {
			m[k] = v
		}
	}
	return m
}

func resourceGauges(m map[string]float64, prefix, name string, total, used resources.Resources) {
	tv, uv := total.Scalar(name), used.Scalar(name)
	m[prefix+"_total"] = tv
	m[prefix+"_used"] = uv
	pct := 0.0
	if tv > 0 {
		pct = uv / tv
	}
	m[prefix+"_percent"] = pct
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// metricsSnapshot serves /metrics/snapshot: a flat JSON object of metric
// name → number. ?timeout= (a stout duration such as "5secs") is accepted
// for compatibility; every value is computed from the snapshot at once, so
// there is nothing to wait for.
func (h *handlers) metricsSnapshot(w http.ResponseWriter, r *http.Request) {
	if v, ok := queryValue(r, "timeout"); ok {
		if _, err := stout.ParseDuration(v); err != nil {
			writeText(w, http.StatusBadRequest, "Invalid timeout '"+v+"': "+err.Error())
			return
		}
	}
	ms := h.metrics(h.snapshot())
	out := make(map[string]jnum, len(ms))
	for k, v := range ms {
		out[k] = jnum(v)
	}
	h.writeJSON(w, r, out)
}

// prometheus serves /metrics in the Prometheus text exposition format
// (version 0.0.4). Each Mesos key becomes "mezzo_" plus the key with every
// character outside [A-Za-z0-9_] replaced by '_' (master/tasks_running →
// mezzo_master_tasks_running); the HELP line keeps the Mesos name. Snapshot
// counters are typed counter, derived values gauge.
func (h *handlers) prometheus(w http.ResponseWriter, r *http.Request) {
	s := h.snapshot()
	ms := h.metrics(s)
	names := make([]string, 0, len(ms))
	for k := range ms {
		names = append(names, k)
	}
	sort.Strings(names)
	counters := map[string]bool{}
	for k := range s.Counters {
		counters[k] = true
	}
	for _, k := range TerminalTaskCounters {
		counters[k] = true
	}
	for _, k := range allocatorCounters {
		counters[k] = true
	}
	for _, k := range master.MessageCounters {
		counters[k] = true
	}
	for _, f := range s.Frameworks {
		prefix := FrameworkMetricPrefix(f.Info)
		for _, k := range frameworkCounterKeys() {
			counters[prefix+k] = true
		}
	}
	var buf bytes.Buffer
	emitted := make(map[string]bool, len(names))
	for _, k := range names {
		name := PrometheusName(k)
		// Role names can map to the same Prometheus name ("a/b" and
		// "a_b"); a metric may appear only once in the exposition, so the
		// first key (in sorted order) wins.
		if emitted[name] {
			continue
		}
		emitted[name] = true
		typ := "gauge"
		if counters[k] {
			typ = "counter"
		}
		buf.WriteString("# HELP " + name + " Mesos metric " + k + "\n")
		buf.WriteString("# TYPE " + name + " " + typ + "\n")
		buf.WriteString(name + " " + strconv.FormatFloat(ms[k], 'g', -1, 64) + "\n")
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// PrometheusName maps a Mesos metric key to a Prometheus metric name.
func PrometheusName(key string) string {
	var sb strings.Builder
	sb.WriteString("mezzo_")
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			sb.WriteByte(c)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}
