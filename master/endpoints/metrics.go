package endpoints

import (
	"maps"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mezzo/api/mesos"
	"mezzo/internal/promexp"
	"mezzo/internal/stout"
	"mezzo/internal/sysmetrics"
	"mezzo/internal/timerstat"
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

// prometheus builds the /metrics handler: the same values as
// /metrics/snapshot translated by promexp (labels for roles, frameworks,
// task states; base units; summaries for the timers), the allocator's and
// registrar's timers, and per-agent series from the snapshot, plus the Go
// runtime and process collectors.
func (h *handlers) prometheus() http.Handler {
	return promexp.Handler(promexp.Source{
		Values: func() (map[string]float64, error) { return h.metrics(h.snapshot()), nil },
		Timers: func() map[string]timerstat.Stats {
			out := map[string]timerstat.Stats{}
			maps.Copy(out, h.src.AllocatorTimers())
			if h.timers != nil {
				maps.Copy(out, h.timers())
			}
			return out
		},
		Samples: func() []promexp.Sample { return agentSamples(h.snapshot()) },
	})
}

// agentSamples are the per-agent series Mesos has no key for: whether each
// registered agent is active and connected, and its scalar resources
// (capacity and used), labelled by agent ID and hostname.
func agentSamples(s *master.Snapshot) []promexp.Sample {
	var out []promexp.Sample
	for _, a := range s.Agents {
		id, host := a.Info.GetId().GetValue(), a.Info.GetHostname()
		lab := []string{"agent_id", id, "hostname", host}
		out = append(out,
			promexp.Sample{Name: "mezzo_master_agent_active", Help: "1 if the registered agent is active (not deactivated for maintenance).",
				Type: prometheus.GaugeValue, Labels: lab, Value: b2f(a.Active)},
			promexp.Sample{Name: "mezzo_master_agent_connected", Help: "1 while the registered agent is connected.",
				Type: prometheus.GaugeValue, Labels: lab, Value: b2f(a.Connected)})
		t, _ := resources.FromProto(a.Total)
		u, _ := resources.FromProto(a.Used)
		for _, name := range []string{"cpus", "gpus", "mem", "disk"} {
			unit, scale := promexp.Unit(name)
			rl := append(append([]string(nil), lab...), "resource", name, "unit", unit)
			out = append(out,
				promexp.Sample{Name: "mezzo_master_agent_resource_capacity", Help: "A registered agent's non-revocable resources, in base units.",
					Type: prometheus.GaugeValue, Labels: rl, Value: t.NonRevocable().Scalar(name) * scale},
				promexp.Sample{Name: "mezzo_master_agent_resource_used", Help: "A registered agent's non-revocable resources in use, in base units.",
					Type: prometheus.GaugeValue, Labels: rl, Value: u.NonRevocable().Scalar(name) * scale})
		}
	}
	return out
}
