package routecheck

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mezzo/agent/files"
	"mezzo/agent/httpapi"
	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/master"
	"mezzo/master/agentproxy"
	"mezzo/master/endpoints"
	"mezzo/webui"

	"google.golang.org/protobuf/proto"
)

func TestMasterServesTheUIRoutes(t *testing.T) {
	mux := http.NewServeMux()
	endpoints.Register(mux, nil, endpoints.Options{})
	// The UI is mounted as the catch-all, as cmd/mezzo does.
	mux.Handle("/", webui.Handler())
	for _, r := range webui.Routes {
		if r.Server != "master" || r.Path == "master/redirect" {
			continue // /master/redirect is master/httpapi's (its tests and the browser suite follow it)
		}
		req := httptest.NewRequest("GET", "/"+r.Path, nil)
		if _, pattern := mux.Handler(req); pattern != "/"+r.Path {
			t.Errorf("GET /%s is routed to %q, not to a master endpoint", r.Path, pattern)
		}
	}
	for _, p := range []string{"/", "/static/js/app.js"} {
		if _, pattern := mux.Handler(httptest.NewRequest("GET", p, nil)); pattern != "/" {
			t.Errorf("%s routed to %q", p, pattern)
		}
	}
}

// backend is an agent with nothing running.
type backend struct{}

func (backend) Recovering() bool { return false }
func (backend) SubscribeExecutor(*executorpb.Call, *httpapi.ExecutorStream) error {
	return httpapi.Errorf(http.StatusServiceUnavailable, "no")
}
func (backend) ExecutorCall(*executorpb.Call) error { return nil }
func (backend) State() (*httpapi.StateView, error) {
	return &httpapi.StateView{ID: "S0", PID: "slave(1)@127.0.0.1:5051", Hostname: "h"}, nil
}
func (backend) Metrics() (map[string]float64, error)          { return map[string]float64{}, nil }
func (backend) Containers() ([]httpapi.ContainerUsage, error) { return nil, nil }

// TestAgentRoutesThroughTheMasterProxy reads every agent route the UI
// uses as the UI does: through the master's proxy (master/agentproxy,
// "agent/<id>" + path) to the real agent handler (agent/httpapi,
// agent/files) over a real sandbox folder.
func TestAgentRoutesThroughTheMasterProxy(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stdout"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fh := files.New()
	fh.Attach("/sandbox", dir)
	agent := httptest.NewServer(httpapi.New(backend{}, fh, nil, nil))
	defer agent.Close()
	snap := &master.Snapshot{Elected: true, Agents: []*master.AgentView{{
		Info:     &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String("S0")}},
		Endpoint: strings.TrimPrefix(agent.URL, "http://"),
	}}}
	mux := http.NewServeMux()
	proxy := agentproxy.New(fakeMaster{snap}, agentproxy.Options{})
	for _, p := range agentproxy.Prefixes {
		mux.Handle(p, proxy)
	}
	// Values for each parameter the UI sends.
	values := map[string]string{"path": "/sandbox", "offset": "0", "length": "4"}
	for _, r := range webui.Routes {
		if r.Server != "agent" {
			continue
		}
		q := url.Values{}
		for _, p := range r.Params {
			q.Set(p, values[p])
		}
		if r.Path == "/files/read" || r.Path == "/files/download" {
			q.Set("path", "/sandbox/stdout")
		}
		target := "/agent/S0" + r.Path
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", target, rec.Code, rec.Body.String())
		}
	}
}

// fakeMaster publishes a fixed snapshot.
type fakeMaster struct{ snap *master.Snapshot }

func (f fakeMaster) Snapshot() *master.Snapshot { return f.snap }
