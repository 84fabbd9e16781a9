package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mezzo/internal/clock"
)

// goldenState is the master's golden /master/state, shared with
// master/endpoints' tests, so the CLI reads what the master really writes.
func goldenState(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../master/endpoints/testdata/state.json")
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// testNow is 1700000160: a minute after the golden agent re-registered.
var testNow = time.Unix(1700000160, 0)

// fakeMaster serves the classic endpoints the CLI reads, derived from the
// golden state the way the master derives them.
type fakeMaster struct {
	t     *testing.T
	state map[string]any
	srv   *httptest.Server

	mu        sync.Mutex
	requests  []string
	teardowns []string
	kills     []string
	// latest adds to a task's latest status in GET_TASKS what the classic
	// endpoints leave out (message, reason, source, healthy), by task ID.
	latest map[string]map[string]any
}

func newFakeMaster(t *testing.T) *fakeMaster {
	f := &fakeMaster{t: t, state: goldenState(t), latest: map[string]map[string]any{
		"t-run":  {"source": "SOURCE_EXECUTOR", "healthy": false, "message": "health check failed: exit 1"},
		"t-done": {"source": "SOURCE_EXECUTOR", "message": "Command exited with status 0"},
		"t-old":  {"source": "SOURCE_MASTER", "reason": "REASON_FRAMEWORK_REMOVED", "message": "Framework removed"},
	}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMaster) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

// setAgentPID points a golden agent at a (fake) agent's address.
func (f *fakeMaster) setAgentPID(id, addr string) {
	for _, a := range f.state["slaves"].([]any) {
		if a := a.(map[string]any); a["id"] == id {
			a["pid"] = "slave(1)@" + addr
		}
	}
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return nil
}

func (f *fakeMaster) allTasks(fwFilter, taskFilter string) []any {
	out := []any{}
	for _, key := range []string{"frameworks", "completed_frameworks"} {
		for _, fw := range list(f.state[key]) {
			fw := fw.(map[string]any)
			if fwFilter != "" && fw["id"] != fwFilter {
				continue
			}
			for _, group := range []string{"tasks", "unreachable_tasks", "completed_tasks"} {
				for _, tk := range list(fw[group]) {
					if taskFilter == "" || tk.(map[string]any)["id"] == taskFilter {
						out = append(out, tk)
					}
				}
			}
		}
	}
	return out
}

var liveStates = []string{"TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_FINISHED",
	"TASK_KILLED", "TASK_FAILED", "TASK_LOST", "TASK_ERROR", "TASK_UNREACHABLE"}

func (f *fakeMaster) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
	f.mu.Unlock()
	q := r.URL.Query()
	var out any
	switch r.URL.Path {
	case "/master/tasks":
		if q.Get("limit") != allTasksLimit {
			f.t.Errorf("/master/tasks without limit=%s: %s", allTasksLimit, r.URL.RequestURI())
		}
		out = map[string]any{"tasks": f.allTasks(q.Get("framework_id"), q.Get("task_id"))}
	case "/master/state-summary":
		var slaves []any
		for _, a := range list(f.state["slaves"]) {
			m := map[string]any{}
			for k, v := range a.(map[string]any) {
				m[k] = v
			}
			for _, s := range liveStates {
				m[s] = 0
			}
			for _, tk := range f.allTasks("", "") {
				tk := tk.(map[string]any)
				if tk["slave_id"] == m["id"] {
					m[tk["state"].(string)] = m[tk["state"].(string)].(int) + 1
				}
			}
			slaves = append(slaves, m)
		}
		out = map[string]any{"hostname": f.state["hostname"], "slaves": slaves, "frameworks": []any{}}
	case "/master/slaves":
		var slaves []any
		for _, a := range list(f.state["slaves"]) {
			if !q.Has("slave_id") || a.(map[string]any)["id"] == q.Get("slave_id") {
				slaves = append(slaves, a)
			}
		}
		out = map[string]any{"slaves": slaves, "recovered_slaves": []any{}}
	case "/master/frameworks":
		out = map[string]any{"frameworks": f.state["frameworks"], "completed_frameworks": f.state["completed_frameworks"],
			"unregistered_frameworks": []any{}}
	case "/master/roles":
		out = json.RawMessage(goldenRoles)
	case "/metrics/snapshot":
		out = map[string]float64{"master/cpus_total": 7, "master/mem_total": 1792, "master/disk_total": 100,
			"master/gpus_total": 0, "allocator/mesos/roles/web/shares/dominant": 0.5}
	case "/master/allocator/explain":
		switch q.Get("framework_id") {
		case "m1-0000":
			out = json.RawMessage(goldenExplain)
		case "m1-0009":
			out = json.RawMessage(noAgentFitsExplain)
		default:
			http.Error(w, "No framework found with specified ID", http.StatusNotFound)
			return
		}
	case "/master/kill-task":
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		f.mu.Lock()
		f.kills = append(f.kills, form.Get("frameworkId")+" "+form.Get("taskId"))
		f.mu.Unlock()
		return
	case "/api/v1":
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad call", http.StatusBadRequest)
			return
		}
		if strings.Contains(string(body), `"GET_TASKS"`) {
			out = f.getTasks()
			break
		}
		f.mu.Lock()
		f.teardowns = append(f.teardowns, string(body))
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// getTasks answers GET_TASKS from the golden state, in the v1 JSON form,
// the latest status enriched from f.latest.
func (f *fakeMaster) getTasks() any {
	groups := map[string][]any{"tasks": {}, "completed_tasks": {}}
	for _, key := range []string{"frameworks", "completed_frameworks"} {
		for _, fw := range list(f.state[key]) {
			fw := fw.(map[string]any)
			for _, group := range []string{"tasks", "completed_tasks"} {
				for _, tk := range list(fw[group]) {
					tk := tk.(map[string]any)
					var statuses []any
					for i, st := range list(tk["statuses"]) {
						st := st.(map[string]any)
						v1 := map[string]any{"task_id": map[string]any{"value": tk["id"]}, "state": st["state"], "timestamp": st["timestamp"]}
						if i == len(list(tk["statuses"]))-1 {
							for k, v := range f.latest[tk["id"].(string)] {
								v1[k] = v
							}
						}
						statuses = append(statuses, v1)
					}
					groups[group] = append(groups[group], map[string]any{
						"task_id": map[string]any{"value": tk["id"]}, "name": tk["name"],
						"framework_id": map[string]any{"value": tk["framework_id"]},
						"agent_id":     map[string]any{"value": tk["slave_id"]},
						"state":        tk["state"], "statuses": statuses,
					})
				}
			}
		}
	}
	return map[string]any{"type": "GET_TASKS", "get_tasks": groups}
}

const goldenRoles = `{"roles": [
 {"name": "*", "weight": 1.0, "quota": {"role": "*", "guarantee": {}, "limit": {}, "consumed": {}},
  "resources": {"cpus": 0.0, "mem": 0.0, "disk": 0.0, "gpus": 0.0},
  "allocated": {"cpus": 0.0, "mem": 0.0, "disk": 0.0, "gpus": 0.0},
  "offered": {"cpus": 0.0, "mem": 0.0, "disk": 0.0, "gpus": 0.0},
  "reserved": {"cpus": 0.0, "mem": 0.0, "disk": 0.0, "gpus": 0.0}, "frameworks": []},
 {"name": "web", "weight": 2.5,
  "quota": {"role": "web", "guarantee": {"cpus": 1.0, "mem": 256.0}, "limit": {"cpus": 4.0, "mem": 2048.0}, "consumed": {"cpus": 1.0, "mem": 128.0}},
  "resources": {"cpus": 3.0, "mem": 640.0, "disk": 0.0, "gpus": 0.0},
  "allocated": {"cpus": 1.0, "mem": 128.0, "disk": 0.0, "gpus": 0.0},
  "offered": {"cpus": 2.0, "mem": 512.0, "disk": 0.0, "gpus": 0.0, "ports": "[31000-31005]"},
  "reserved": {"cpus": 1.0, "mem": 256.0, "disk": 0.0, "gpus": 0.0}, "frameworks": ["m1-0000"]}
]}`

const goldenExplain = `{"framework_id": "m1-0000", "active": true, "last_offer": 1700000100.0,
 "roles": [{"role": "web", "reason": "FILTERED",
  "message": "the framework declined these resources with a filter (refuse_seconds) that has not expired; REVIVE clears it (1 of 1 active agents)",
  "agents": {"eligible": 0, "nothing_free": 0, "over_quota_limit": 0, "below_min_allocatable": 0, "offer_constraints": 0, "gpu_agent": 0, "filtered": 1}}]}`

const noAgentFitsExplain = `{"framework_id": "m1-0009", "active": true, "last_offer": 1700000150.0,
 "roles": [{"role": "*", "reason": "NO_AGENT_FITS",
  "message": "the framework declined offers holding everything of agents at least as large as each of the 2 it may use: if it waits for resources, what it needs fits no agent of the cluster, whose largest totals are cpus:2;mem:1024; add a larger agent or ask for less (a framework with nothing to launch should SUPPRESS)",
  "agents": {"eligible": 2, "nothing_free": 0, "over_quota_limit": 0, "below_min_allocatable": 0, "offer_constraints": 0, "gpu_agent": 0, "filtered": 0}}]}`

// fakeAgent serves an agent's /slave(1)/state and /files/read over
// in-memory files, with /files/read's offset and length rules (offset -1
// answers the size; a read is capped at maxRead bytes).
type fakeAgent struct {
	srv     *httptest.Server
	state   string
	maxRead int64

	mu    sync.Mutex
	files map[string][]byte
	reads int
}

func newFakeAgent(t *testing.T, state string) *fakeAgent {
	a := &fakeAgent{state: state, maxRead: 1 << 16, files: map[string][]byte{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAgent) addr() string { return strings.TrimPrefix(a.srv.URL, "http://") }

func (a *fakeAgent) write(path, data string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.files[path] = append(a.files[path], data...)
}

func (a *fakeAgent) truncate(path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.files[path] = nil
}

func (a *fakeAgent) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/slave(1)/state":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, a.state)
	case "/files/read":
		q := r.URL.Query()
		a.mu.Lock()
		data, ok := a.files[q.Get("path")]
		a.reads++
		a.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		size := int64(len(data))
		offset, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		length := int64(-1)
		if q.Has("length") {
			length, _ = strconv.ParseInt(q.Get("length"), 10, 64)
		}
		if offset == -1 {
			offset = size
		}
		if length == -1 {
			length = size - offset
		}
		length = min(length, a.maxRead)
		res := readResult{Offset: min(offset, size)}
		if offset < size && length > 0 {
			res.Data = string(data[offset:min(size, offset+length)])
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	default:
		http.NotFound(w, r)
	}
}

// testEnv runs commands against fakes with a fake clock.
func testEnv() (*env, *clock.Fake) {
	fc := clock.NewFake(testNow)
	return &env{lookup: func(string) (string, bool) { return "", false }, clock: fc, http: &http.Client{}}, fc
}

// run runs one command and returns its exit code, stdout and stderr.
func run(e *env, name string, args ...string) (int, string, string) {
	var out, errw bytes.Buffer
	code := e.commands()[name].Run(args, &out, &errw)
	return code, out.String(), errw.String()
}
