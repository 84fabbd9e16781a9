package endpoints

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
)

// mesosMasterGauges are the keys Mesos's master always reports
// (src/master/metrics.cpp); every one must be present.
var mesosMasterGauges = []string{
	"master/uptime_secs", "master/elected",
	"master/slaves_active", "master/slaves_inactive", "master/slaves_connected",
	"master/slaves_disconnected", "master/slaves_unreachable",
	"master/frameworks_active", "master/frameworks_inactive", "master/frameworks_connected",
	"master/frameworks_disconnected", "master/outstanding_offers",
	"master/tasks_staging", "master/tasks_starting", "master/tasks_running", "master/tasks_killing",
	"master/tasks_finished", "master/tasks_failed", "master/tasks_killed", "master/tasks_lost",
	"master/tasks_error", "master/tasks_dropped", "master/tasks_unreachable", "master/tasks_gone",
	"master/tasks_gone_by_operator",
}

func TestMetricsKeysAndValues(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	rec := get(t, mux, "/metrics/snapshot?timeout=5secs")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var m map[string]float64
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := append([]string{}, mesosMasterGauges...)
	for _, r := range []string{"cpus", "gpus", "mem", "disk"} {
		for _, kind := range []string{"total", "used", "percent"} {
			want = append(want, "master/"+r+"_"+kind, "master/"+r+"_revocable_"+kind)
		}
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("missing metric %s", k)
		}
	}
	expect := map[string]float64{
		"master/uptime_secs":            3600,
		"master/elected":                1,
		"master/slaves_active":          1,
		"master/slaves_inactive":        1,
		"master/slaves_connected":       1,
		"master/slaves_disconnected":    1,
		"master/slaves_unreachable":     1,
		"master/frameworks_active":      1,
		"master/frameworks_inactive":    0,
		"master/frameworks_connected":   1,
		"master/outstanding_offers":     1,
		"master/tasks_running":          1,
		"master/tasks_staging":          0,
		"master/tasks_finished":         1, // from Counters, not from completed_tasks
		"master/tasks_killed":           1,
		"master/tasks_failed":           0, // absent counter reported as 0
		"master/slave_registrations":    2, // counters are merged
		"master/cpus_total":             7,
		"master/cpus_used":              1,
		"master/mem_total":              1792,
		"master/mem_used":               128,
		"master/cpus_revocable_total":   0,
		"master/cpus_revocable_percent": 0,
	}
	for k, v := range expect {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if got := m["master/cpus_percent"]; math.Abs(got-1.0/7) > 1e-12 {
		t.Errorf("cpus_percent = %v", got)
	}
	if rec := get(t, mux, "/metrics/snapshot?timeout=soon"); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "timeout") {
		t.Errorf("bad timeout: %d %s", rec.Code, rec.Body)
	}
}

// /metrics carries the snapshot's values under Prometheus names with
// labels, passes the linter promtool runs, and leaves no Mesos key
// untranslated.
func TestPrometheus(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	rec := get(t, mux, "/metrics")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	for _, want := range []string{
		"# TYPE mezzo_master_tasks gauge\n",
		`mezzo_master_tasks{state="running"} 1` + "\n",
		"# TYPE mezzo_master_tasks_terminal_total counter\n",
		`mezzo_master_tasks_terminal_total{state="finished"} 1` + "\n",
		"# TYPE mezzo_master_agent_registrations_total counter\n",
		`mezzo_master_resource_capacity{resource="mem",revocable="false",unit="bytes"}`,
		`mezzo_master_framework_subscribed{framework_id="m1-0000",framework_name=`,
		`mezzo_master_agent_connected{agent_id=`,
		"mezzo_metrics_unmapped_keys 0\n",
		"# TYPE go_goroutines gauge\n",
		"# TYPE process_cpu_seconds_total counter\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// The master's snapshot carries the host's system/* metrics and whatever
// Options.ExtraMetrics reports (the registrar's registrar/*).
func TestMetricsSystemAndExtra(t *testing.T) {
	mux := http.NewServeMux()
	Register(mux, newFakeSource(testSnapshot()), Options{Version: "1.12.0", Clock: clock.NewFake(testNow),
		ExtraMetrics: func() map[string]float64 { return map[string]float64{"registrar/queued_operations": 3} }})
	w := do(mux, httptest.NewRequest(http.MethodGet, "/metrics/snapshot", nil))
	var m map[string]float64
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"system/cpus_total", "system/load_1min", "system/load_5min", "system/load_15min",
		"system/mem_total_bytes", "system/mem_free_bytes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	if m["system/cpus_total"] < 1 || m["registrar/queued_operations"] != 3 {
		t.Errorf("cpus %v, registrar/queued_operations %v", m["system/cpus_total"], m["registrar/queued_operations"])
	}
}

// Per-framework metrics appear under master/frameworks/<encoded name>/<id>/
// with every counter Mesos creates (0 until it moves), the subscribed gauge
// and the active task gauges; message counters read 0 before any call.
func TestFrameworkMetrics(t *testing.T) {
	s := testSnapshot()
	fw := s.Frameworks[0]
	fw.Info = proto.Clone(fw.Info).(*mesos.FrameworkInfo)
	fw.Info.Name = proto.String("web fw/1")
	fw.Metrics = map[string]float64{"calls/accept": 3, "calls": 3, "offers/sent": 7}
	m := Metrics(s, testNow)
	p := "master/frameworks/web%20fw%2F1/m1-0000/"
	want := map[string]float64{
		p + "calls": 3, p + "calls/accept": 3, p + "calls/decline": 0, p + "offers/sent": 7, p + "offers/rescinded": 0,
		p + "events/update": 0, p + "operations/reserve": 0, p + "tasks/terminal/task_finished": 0,
		p + "tasks/active/task_running": 1, p + "tasks/active/task_staging": 0, p + "subscribed": 1,
		"master/messages_launch_tasks": 0, "master/dropped_messages": 0, "master/messages_reregister_slave": 0,
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := m[p+"calls/unknown"]; ok {
		t.Error("calls/unknown reported")
	}
}

func TestEncodeName(t *testing.T) {
	for in, want := range map[string]string{
		"marathon":   "marathon",
		"my fw/1":    "my%20fw%2F1",
		"a:b@c?d=e":  "a%3Ab%40c%3Fd%3De",
		"ok-._!()*'": "ok-._!()*'",
		"tab\there":  "tab%09here",
		"é":          "%C3%A9",
	} {
		if got := encodeName(in); got != want {
			t.Errorf("encodeName(%q) = %q, want %q", in, got, want)
		}
	}
}
