package agentproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/master"
)

// fakeMaster publishes a fixed snapshot.
type fakeMaster struct{ snap *master.Snapshot }

func (f fakeMaster) Snapshot() *master.Snapshot { return f.snap }

// agentRecorder is an agent's HTTP server that records what reached it.
type agentRecorder struct {
	mu   sync.Mutex
	seen []string // method + " " + request URI
}

func (a *agentRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, r.Method+" "+r.URL.RequestURI())
	a.mu.Unlock()
	if r.Header.Get("Cookie") != "" || r.Header.Get("Authorization") != "" {
		http.Error(w, "credentials leaked to the agent", http.StatusTeapot)
		return
	}
	switch strings.TrimPrefix(r.URL.Path, "/slave(1)") {
	case "/files/read":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":"hello","offset":`+r.URL.Query().Get("offset")+`}`)
	case "/files/download":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="stdout"`)
		io.WriteString(w, "raw bytes")
	case "/monitor/statistics.json", "/monitor/statistics":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[]`)
	case "/files/browse":
		http.Error(w, "Failed to browse: path not found", http.StatusNotFound)
	default:
		http.Error(w, "unexpected", http.StatusInternalServerError)
	}
}

func (a *agentRecorder) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

func leader(host string, port uint32) *mesos.MasterInfo {
	return &mesos.MasterInfo{Id: proto.String("m"), Ip: proto.Uint32(0), Port: proto.Uint32(port), Hostname: proto.String(host)}
}

func agentView(id, endpoint string) *master.AgentView {
	return &master.AgentView{Info: &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String(id)}, Hostname: proto.String("h")},
		PID: "slave(1)@" + endpoint, Endpoint: endpoint}
}

func TestProxy(t *testing.T) {
	rec := &agentRecorder{}
	agent := httptest.NewServer(rec)
	defer agent.Close()
	endpoint := strings.TrimPrefix(agent.URL, "http://")
	// An agent that registered but whose port is closed now.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadEndpoint := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	snap := &master.Snapshot{Elected: true, Leader: leader("m1", 5050),
		Agents:            []*master.AgentView{agentView("S1", endpoint), agentView("S2", deadEndpoint)},
		UnreachableAgents: []*master.UnreachableAgent{{ID: "S3", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}}
	h := New(fakeMaster{snap}, Options{})

	tests := []struct {
		name, method, target string
		status               int
		body                 string // substring of the answer
		forwarded            string // what the agent must have received ("" = nothing)
		header               map[string]string
	}{
		{"read", "GET", "/agent/S1/files/read?path=/sandbox/stdout&offset=7&length=4", 200, `"offset":7`,
			"GET /files/read?length=4&offset=7&path=%2Fsandbox%2Fstdout", map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}},
		{"libprocess id prefix kept", "GET", "/agent/S1/slave(1)/monitor/statistics.json", 200, "[]",
			"GET /slave(1)/monitor/statistics.json", nil},
		{"DC/OS alias", "GET", "/slave/S1/monitor/statistics", 200, "[]", "GET /monitor/statistics", nil},
		{"download headers", "GET", "/agent/S1/files/download?path=/x/stdout", 200, "raw bytes", "GET /files/download?path=%2Fx%2Fstdout",
			map[string]string{"Content-Disposition": `attachment; filename="stdout"`}},
		{"HEAD has no body", "HEAD", "/agent/S1/files/download?path=/x/stdout", 200, "", "HEAD /files/download?path=%2Fx%2Fstdout", nil},
		{"agent's 404 passes through", "GET", "/agent/S1/files/browse?path=/nope", 404, "path not found", "GET /files/browse?path=%2Fnope", nil},
		{"unreachable agent", "GET", "/agent/S3/state", 503, "Agent 'S3' is unreachable (since 2026-01-02T03:04:05Z)", "", nil},
		{"unknown agent", "GET", "/agent/S9/files/read?path=/x", 404, "Agent 'S9' is not registered", "", nil},
		{"invalid agent id", "GET", "/agent/S%201/files/read?path=/x", 400, "Invalid agent ID 'S 1'", "", nil},
		{"agent id too long", "GET", "/agent/" + strings.Repeat("a", maxIDLen+1) + "/state", 400, "Invalid agent ID", "", nil},
		{"write endpoint refused", "GET", "/agent/S1/api/v1", 404, "does not forward '/api/v1'", "", nil},
		{"flags not forwarded", "GET", "/agent/S1/flags", 404, "only /files/browse", "", nil},
		{"files debug not forwarded", "GET", "/agent/S1/files/debug", 404, "does not forward", "", nil},
		{"no endpoint after the id", "GET", "/agent/S1", 404, "No endpoint '/agent/S1'", "", nil},
		{"no id", "GET", "/agent//state", 404, "No endpoint", "", nil},
		{"POST refused", "POST", "/agent/S1/files/read?path=/x", 405, "received 'POST'", "", map[string]string{"Allow": "GET, HEAD"}},
		{"files need a path", "GET", "/agent/S1/files/read?offset=0", 400, "Expecting 'path'", "", nil},
		{"jsonp refused", "GET", "/agent/S1/state?jsonp=cb", 400, "'jsonp' is not forwarded", "", nil},
		{"agent down", "GET", "/agent/S2/state", 502, "Agent 'S2' at " + deadEndpoint + " did not answer", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.requests())
			req := httptest.NewRequest(tc.method, tc.target, nil)
			req.Header.Set("Cookie", "session=secret")
			req.Header.Set("Authorization", "Basic c2VjcmV0")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
				t.Fatalf("%s %s: %d %q, want %d containing %q", tc.method, tc.target, w.Code, w.Body.String(), tc.status, tc.body)
			}
			if tc.method == "HEAD" && w.Body.Len() != 0 {
				t.Errorf("HEAD answered a body: %q", w.Body.String())
			}
			for k, v := range tc.header {
				if got := w.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			got := rec.requests()[before:]
			switch {
			case tc.forwarded == "" && len(got) != 0:
				t.Errorf("forwarded %v; expected nothing to reach the agent", got)
			case tc.forwarded != "" && (len(got) != 1 || got[0] != tc.forwarded):
				t.Errorf("agent received %v, want [%s]", got, tc.forwarded)
			}
		})
	}
}

func TestFollowerRedirectsToTheLeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		snap     *master.Snapshot
		status   int
		location string
	}{
		{"leader known", &master.Snapshot{Leader: leader("m2", 5051)}, 307, "//m2:5051/agent/S1/files/read?path=%2Fx"},
		{"leader by ip", &master.Snapshot{Leader: &mesos.MasterInfo{Ip: proto.Uint32(0x0100007f), Port: proto.Uint32(5052)}}, 307,
			"//127.0.0.1:5052/agent/S1/files/read?path=%2Fx"},
		{"no leader", &master.Snapshot{}, 503, ""},
		{"nothing published yet", nil, 503, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			New(fakeMaster{tc.snap}, Options{}).ServeHTTP(w, httptest.NewRequest("GET", "/agent/S1/files/read?path=%2Fx", nil))
			if w.Code != tc.status || w.Header().Get("Location") != tc.location {
				t.Fatalf("%d Location %q, want %d %q (%s)", w.Code, w.Header().Get("Location"), tc.status, tc.location, w.Body.String())
			}
		})
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"b5e7a8e2-7c1f-4f2a-9d5e-0a1b2c3d4e5f-S0": true, "S1": true, "a.b_c": true,
		"": false, ".": false, "..": false, "a/b": false, "a b": false, "a%2F": false, "ü": false,
	} {
		if got := validID(id); got != want {
			t.Errorf("validID(%q) = %v, want %v", id, got, want)
		}
	}
}
