package promexp

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"mezzo/internal/timerstat"
)

// Each kind of Mesos key lands in its family with its labels and in base
// units; aggregates and timer percentiles are dropped; unknown keys are
// reported, not guessed.
func TestTranslate(t *testing.T) {
	tests := []struct {
		key    string
		v      float64
		name   string
		labels []string
		want   float64
		skip   bool
	}{
		{key: "master/tasks_running", v: 2, name: "mezzo_master_tasks", labels: []string{"state", "running"}, want: 2},
		{key: "master/tasks_gone_by_operator", v: 1, name: "mezzo_master_tasks_terminal_total", labels: []string{"state", "gone_by_operator"}, want: 1},
		{key: "master/slaves_active", v: 3, name: "mezzo_master_agents_active", want: 3},
		{key: "master/mem_revocable_used", v: 2, name: "mezzo_master_resource_used", labels: []string{"resource", "mem", "unit", "bytes", "revocable", "true"}, want: 2 << 20},
		{key: "master/cpus_percent", v: .5, name: "mezzo_master_resource_used_ratio", labels: []string{"resource", "cpus", "revocable", "false"}, want: .5},
		{key: "master/task_failed/source_slave/reason_container_limitation_memory", v: 1, name: "mezzo_master_task_terminal_reasons_total",
			labels: []string{"state", "failed", "source", "slave", "reason", "container_limitation_memory"}, want: 1},
		{key: "master/operations/reserve/finished", v: 4, name: "mezzo_master_operations_total", labels: []string{"type", "reserve", "state", "finished"}, want: 4},
		{key: "master/operations/reserve/total", skip: true},
		{key: "master/operations/finished", skip: true},
		{key: "master/frameworks/web%20fw%2F1/F-1/calls/accept", v: 3, name: "mezzo_master_framework_calls_total",
			labels: []string{"framework_name", "web fw/1", "framework_id", "F-1", "type", "accept"}, want: 3},
		{key: "master/frameworks/web/F-1/calls", skip: true},
		{key: "master/frameworks/web/F-1/tasks/active/task_running", v: 1, name: "mezzo_master_framework_tasks_active",
			labels: []string{"framework_name", "web", "framework_id", "F-1", "state", "running"}, want: 1},
		{key: "allocator/mesos/roles/eng/web/shares/dominant", v: .25, name: "mezzo_allocator_role_dominant_share", labels: []string{"role", "eng/web"}, want: .25},
		{key: "allocator/mesos/quota/roles/a/b/resources/disk/limit", v: 10, name: "mezzo_allocator_role_quota_limit",
			labels: []string{"role", "a/b", "resource", "disk", "unit", "bytes"}, want: 10 << 20},
		{key: "allocator/mesos/resources/gpus/total", v: 1, name: "mezzo_allocator_resource_capacity", labels: []string{"resource", "gpus", "unit", "devices"}, want: 1},
		{key: "allocator/mesos/allocation_run_ms/p99", skip: true},
		{key: "registrar/state_store_ms", skip: true},
		{key: "system/load_15min", v: .7, name: "mezzo_system_load15", want: .7},
		{key: "slave/valid_status_updates", v: 5, name: "mezzo_agent_status_updates_total", labels: []string{"result", "valid"}, want: 5},
		{key: "slave/uptime_secs", v: 9, name: "mezzo_agent_uptime_seconds", want: 9},
	}
	for _, tt := range tests {
		s, ok, known := translate(tt.key, tt.v)
		if !known {
			t.Errorf("%s: no rule", tt.key)
			continue
		}
		if ok == tt.skip {
			t.Errorf("%s: exposed %v, want %v", tt.key, ok, !tt.skip)
			continue
		}
		if tt.skip {
			continue
		}
		if s.Name != tt.name || !reflect.DeepEqual(s.Labels, tt.labels) || s.Value != tt.want {
			t.Errorf("%s = %s%v %v, want %s%v %v", tt.key, s.Name, s.Labels, s.Value, tt.name, tt.labels, tt.want)
		}
	}
	if _, ok, known := translate("master/no_such_metric", 1); ok || known {
		t.Error("an unknown key was translated")
	}
	if u := Unmapped(map[string]float64{"master/elected": 1, "master/no_such_metric": 1}); !reflect.DeepEqual(u, []string{"master/no_such_metric"}) {
		t.Errorf("Unmapped = %v", u)
	}
}

// A scrape of a Source with one key of every family, a timer and an extra
// sample passes the linter promtool runs, and an unknown key shows in
// mezzo_metrics_unmapped_keys.
func TestHandlerLints(t *testing.T) {
	values := map[string]float64{"master/no_such_metric": 1}
	for _, r := range rules {
		if r.skip {
			continue
		}
		values[example(r.pattern)] = 1
	}
	h := Handler(Source{
		Values: func() (map[string]float64, error) { return values, nil },
		Timers: func() map[string]timerstat.Stats {
			return map[string]timerstat.Stats{"registrar/state_store_ms": {Count: 3, Sum: .03, Quantiles: map[float64]float64{.5: .01, .99: .012}}}
		},
		Samples: func() []Sample {
			return []Sample{{Name: "mezzo_agent_info", Help: "x", Type: prometheus.GaugeValue, Labels: []string{"agent_id", "a1"}, Value: 1}}
		},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	for _, want := range []string{"mezzo_metrics_unmapped_keys 1\n", "mezzo_registrar_state_store_duration_seconds_count 3\n",
		`mezzo_registrar_state_store_duration_seconds{quantile="0.99"} 0.012`, `mezzo_agent_info{agent_id="a1"} 1`, "go_goroutines "} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q", want)
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

// A Values error fails the scrape rather than serving a partial view.
func TestHandlerValuesError(t *testing.T) {
	h := Handler(Source{Values: func() (map[string]float64, error) { return nil, errStopping }})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "shutting down") {
		t.Errorf("status %d: %s", rec.Code, rec.Body)
	}
}

type stopErr struct{}

func (stopErr) Error() string { return "agent is shutting down" }

var errStopping = stopErr{}

// example fills a pattern's placeholders with a value it accepts.
func example(pattern string) string {
	return placeholder.ReplaceAllStringFunc(pattern, func(p string) string {
		m := placeholder.FindStringSubmatch(p)
		if strings.HasPrefix(m[2], ":") {
			return strings.Split(m[2][1:], "|")[0]
		}
		if m[1] == "resource" {
			return "mem"
		}
		return "x"
	})
}

// Series whose label values differ only in where a space falls ("a b",
// "c" and "a", "b c") are two series, and a repeated one is exposed once.
func TestCollectKeepsDistinctSeries(t *testing.T) {
	values := map[string]float64{
		"master/frameworks/a%20b/c/subscribed": 1,
		"master/frameworks/a/b c/subscribed":   1,
	}
	extra := []Sample{
		{Name: "mezzo_master_framework_subscribed", Help: "1 while the framework has a live subscription.", Type: prometheus.GaugeValue,
			Labels: []string{"framework_name", "a", "framework_id", "b c"}, Value: 1},
	}
	n := 0
	for _, m := range Collect(values, nil, extra) {
		if strings.Contains(m.Desc().String(), `"mezzo_master_framework_subscribed"`) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d framework_subscribed series, want 2", n)
	}
}
