package routecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestTaskPageFunctions runs the task page's pure functions (task.js) in
// node: the CPU rate between two /monitor/statistics samples, which entry
// of the statistics is the task's, the health-check summary, the latest
// health and the labels.
func TestTaskPageFunctions(t *testing.T) {
	nodeBin := needNode(t, "node is not installed: the task page's functions are not run")
	sample := func(ts, user, sys float64) map[string]any {
		return map[string]any{"timestamp": ts, "cpus_user_time_secs": user, "cpus_system_time_secs": sys}
	}
	stats := []any{
		map[string]any{"framework_id": "F1", "executor_id": "web-1", "statistics": sample(1, 0, 0)},
		map[string]any{"framework_id": "F1", "executor_id": "group-ex", "statistics": sample(2, 0, 0)},
		map[string]any{"framework_id": "F2", "executor_id": "web-1", "statistics": sample(3, 0, 0)},
	}
	tests := []struct {
		name string
		fn   string
		args []any
		want any
	}{
		{"rate over 2s", "cpuRate", []any{sample(10, 1, 0.5), sample(12, 2, 0.5)}, 0.5},
		{"user and system both count", "cpuRate", []any{sample(10, 1, 1), sample(11, 1.5, 1.5)}, 1.0},
		{"no previous sample", "cpuRate", []any{nil, sample(12, 2, 0)}, nil},
		{"same timestamp: no rate", "cpuRate", []any{sample(12, 1, 0), sample(12, 2, 0)}, nil},
		{"older sample: no rate", "cpuRate", []any{sample(13, 1, 0), sample(12, 2, 0)}, nil},
		{"a restarted container never goes negative", "cpuRate", []any{sample(10, 5, 0), sample(11, 1, 0)}, 0.0},
		{"command task: its executor has its ID", "usageOf", []any{stats, map[string]any{"id": "web-1", "framework_id": "F1"}},
			stats[0]},
		{"task group: the executor's ID", "usageOf", []any{stats, map[string]any{"id": "t", "framework_id": "F1", "executor_id": "group-ex"}},
			stats[1]},
		{"the framework must match", "usageOf", []any{stats, map[string]any{"id": "web-1", "framework_id": "F3"}}, "undefined"},
		{"HTTP check", "checkText", []any{map[string]any{"type": "HTTP", "http": map[string]any{"port": 8080, "path": "/health"}, "interval_seconds": 10}},
			"HTTP :8080/health every 10s"},
		{"TCP check", "checkText", []any{map[string]any{"type": "TCP", "tcp": map[string]any{"port": 5432}}}, "TCP :5432"},
		{"command check", "checkText", []any{map[string]any{"type": "COMMAND", "command": map[string]any{"value": "true"}, "interval_seconds": 1}},
			"COMMAND true every 1s"},
		{"no check", "checkText", []any{nil}, nil},
		{"latest health wins", "lastHealth", []any{map[string]any{"statuses": []any{
			map[string]any{"healthy": true}, map[string]any{"state": "TASK_RUNNING"}, map[string]any{"healthy": false}}}}, false},
		{"never checked", "lastHealth", []any{map[string]any{"statuses": []any{map[string]any{"state": "TASK_RUNNING"}}}}, "undefined"},
		{"labels", "labelsText", []any{[]any{map[string]any{"key": "a", "value": "1"}, map[string]any{"key": "flag"}}}, "a=1, flag"},
	}
	var cases []map[string]any
	for _, tc := range tests {
		cases = append(cases, map[string]any{"fn": tc.fn, "args": tc.args})
	}
	in, _ := json.Marshal(cases)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, filepath.Join("testdata", "taskfuncs.js"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got []any
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(tests) {
		t.Fatalf("node printed %q (%v)", out, err)
	}
	for i, tc := range tests {
		want := tc.want
		// Compare through JSON, as node answered.
		b, _ := json.Marshal(want)
		json.Unmarshal(b, &want)
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("%s: %s(%v) = %v, want %v", tc.name, tc.fn, tc.args, got[i], want)
		}
	}
}
