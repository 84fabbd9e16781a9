package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"mezzo/api/agentpb"
	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

func testUsage() []ContainerUsage {
	return []ContainerUsage{
		{FrameworkID: "F1", ExecutorID: "E1", ExecutorName: "Command Executor", Source: "t1", ContainerID: "C1", ExecutorPid: 42,
			Statistics: &mesos.ResourceStatistics{
				Timestamp: proto.Float64(1700000000.5), CpusUserTimeSecs: proto.Float64(0.25), CpusSystemTimeSecs: proto.Float64(0.125),
				CpusLimit: proto.Float64(0.6), MemRssBytes: proto.Uint64(1 << 20), MemLimitBytes: proto.Uint64(64 << 20),
			}},
		{FrameworkID: "F1", ExecutorID: "E2", ContainerID: "C2"}, // not measured
	}
}

func TestMonitorStatistics(t *testing.T) {
	h := New(&fakeBackend{containers: testUsage()}, nil, nil, nil)
	for _, path := range []string{"/monitor/statistics", "/monitor/statistics.json", "/slave(1)/monitor/statistics"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		var got []map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d entries, want the measured one: %s", path, len(got), w.Body)
		}
		e := got[0]
		st := e["statistics"].(map[string]any)
		if e["framework_id"] != "F1" || e["executor_id"] != "E1" || e["source"] != "t1" || e["executor_name"] != "Command Executor" ||
			st["cpus_limit"] != 0.6 || st["mem_limit_bytes"] != float64(64<<20) || st["mem_rss_bytes"] != float64(1<<20) ||
			st["cpus_user_time_secs"] != 0.25 || st["timestamp"] != 1700000000.5 {
			t.Errorf("%s: entry %v", path, e)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/monitor/statistics", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /monitor/statistics: %d", w.Code)
	}
}

func TestOperatorAPI(t *testing.T) {
	h := New(&fakeBackend{containers: testUsage()}, nil, nil, nil)
	call := func(typ agentpb.Call_Type) []byte {
		b, _ := proto.Marshal(&agentpb.Call{Type: typ.Enum()})
		return b
	}
	// GET_CONTAINERS in protobuf.
	w := post(h, "/api/v1", "application/x-protobuf", "application/x-protobuf", call(agentpb.Call_GET_CONTAINERS))
	if w.Code != 200 {
		t.Fatalf("GET_CONTAINERS: %d %s", w.Code, w.Body)
	}
	resp := &agentpb.Response{}
	if err := proto.Unmarshal(w.Body.Bytes(), resp); err != nil {
		t.Fatal(err)
	}
	cs := resp.GetGetContainers().GetContainers()
	if resp.GetType() != agentpb.Response_GET_CONTAINERS || len(cs) != 2 {
		t.Fatalf("response %v", resp)
	}
	if c := cs[0]; c.GetContainerId().GetValue() != "C1" || c.GetContainerStatus().GetExecutorPid() != 42 ||
		c.GetResourceStatistics().GetMemLimitBytes() != 64<<20 || c.GetExecutorName() != "Command Executor" {
		t.Errorf("container %v", c)
	}
	if cs[1].ResourceStatistics != nil || cs[1].GetContainerStatus().ExecutorPid != nil {
		t.Errorf("unmeasured container %v", cs[1])
	}

	tests := []struct {
		name, ctype, accept string
		body                []byte
		code                int
	}{
		{"json containers", "application/json", "application/json", []byte(`{"type":"GET_CONTAINERS"}`), 200},
		{"health", "application/json", "", []byte(`{"type":"GET_HEALTH"}`), 200},
		{"metrics", "application/json", "", []byte(`{"type":"GET_METRICS","get_metrics":{}}`), 200},
		{"metrics without get_metrics", "application/x-protobuf", "", call(agentpb.Call_GET_METRICS), 400},
		{"unsupported", "application/x-protobuf", "", call(agentpb.Call_LAUNCH_NESTED_CONTAINER), 501},
		{"no type", "application/json", "", []byte(`{}`), 400},
		{"garbage", "application/json", "", []byte(`{`), 400},
		{"bad content type", "text/plain", "", []byte(`x`), 415},
		{"bad accept", "application/json", "text/html", []byte(`{"type":"GET_HEALTH"}`), 406},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := post(h, "/api/v1", tt.ctype, tt.accept, tt.body)
			if w.Code != tt.code {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, tt.code)
			}
		})
	}
	w = post(h, "/api/v1", "application/json", "application/json", []byte(`{"type":"GET_CONTAINERS"}`))
	var js map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &js); err != nil || js["type"] != "GET_CONTAINERS" {
		t.Fatalf("JSON response %s: %v", w.Body, err)
	}
}

func FuzzOperatorCall(f *testing.F) {
	f.Add([]byte(`{"type":"GET_CONTAINERS"}`), true)
	f.Add([]byte{8, 10}, false)
	h := New(&fakeBackend{containers: testUsage()}, nil, nil, nil)
	f.Fuzz(func(t *testing.T, body []byte, json bool) {
		ct := "application/x-protobuf"
		if json {
			ct = "application/json"
		}
		if w := post(h, "/api/v1", ct, "", body); w.Code == 500 {
			t.Fatalf("500 for %q: %s", body, w.Body)
		}
	})
}
