package endpoints

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"mezzo/api/mesos"
	"mezzo/master"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func get(t *testing.T, mux http.Handler, url string) *httptest.ResponseRecorder {
	t.Helper()
	return do(mux, httptest.NewRequest(http.MethodGet, url, nil))
}

// decode parses a JSON body into a generic value (numbers as json.Number).
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return m
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(ss ...string) []string {
	out := append([]string{}, ss...)
	sort.Strings(out)
	return out
}

func TestStateGolden(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	rec := get(t, mux, "/master/state")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, rec.Body.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	golden := filepath.Join("testdata", "state.json")
	if *update {
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("/master/state differs from %s (run with -update after checking):\n%s", golden, pretty.String())
	}
	// /state is the same document.
	if alias := get(t, mux, "/state"); !bytes.Equal(alias.Body.Bytes(), rec.Body.Bytes()) {
		t.Errorf("/state differs from /master/state")
	}
}

// TestStateKeys checks the key names against the reference tables
// (mesos-v1-api.md §3.2, readonly_handler.cpp, common/http.cpp).
func TestStateKeys(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	st := decode(t, get(t, mux, "/master/state").Body.Bytes())

	wantTop := sorted("version", "git_sha", "build_date", "build_time", "build_user", "start_time", "elected_time",
		"id", "pid", "hostname", "capabilities", "activated_slaves", "deactivated_slaves", "unreachable_slaves",
		"leader", "leader_info", "flags", "slaves", "recovered_slaves", "frameworks", "completed_frameworks",
		"orphan_tasks", "unregistered_frameworks")
	if got := keys(st); !reflect.DeepEqual(got, wantTop) {
		t.Errorf("top-level keys:\n got %v\nwant %v", got, wantTop)
	}
	if got, want := keys(st["leader_info"].(map[string]any)), sorted("id", "pid", "port", "hostname"); !reflect.DeepEqual(got, want) {
		t.Errorf("leader_info keys %v, want %v", got, want)
	}

	slaves := st["slaves"].([]any)
	s0 := slaves[0].(map[string]any)
	wantSlave := sorted("id", "hostname", "port", "attributes", "pid", "registered_time", "resources",
		"used_resources", "offered_resources", "reserved_resources", "unreserved_resources", "active",
		"deactivated", "version", "capabilities")
	if got := keys(s0); !reflect.DeepEqual(got, wantSlave) {
		t.Errorf("slave keys:\n got %v\nwant %v", got, wantSlave)
	}
	if got := keys(slaves[1].(map[string]any)); !reflect.DeepEqual(got, sorted(append(wantSlave, "reregistered_time")...)) {
		t.Errorf("re-registered slave keys: %v", got)
	}
	if got, want := keys(s0["resources"].(map[string]any)), sorted("cpus", "gpus", "mem", "disk", "ports"); !reflect.DeepEqual(got, want) {
		t.Errorf("resources summary keys %v, want %v", got, want)
	}
	if _, ok := s0["reserved_resources"].(map[string]any)["web"]; !ok {
		t.Errorf("reserved_resources lacks role web: %v", s0["reserved_resources"])
	}

	fw := st["frameworks"].([]any)[0].(map[string]any)
	wantFw := sorted("id", "name", "used_resources", "offered_resources", "capabilities", "hostname",
		"webui_url", "active", "connected", "recovered", "user", "failover_timeout", "checkpoint",
		"registered_time", "unregistered_time", "principal", "resources", "roles", "tasks",
		"unreachable_tasks", "completed_tasks", "offers", "executors", "offer_constraints")
	if got := keys(fw); !reflect.DeepEqual(got, wantFw) {
		t.Errorf("framework keys:\n got %v\nwant %v", got, wantFw)
	}
	// A framework without MULTI_ROLE shows "role" instead of "roles".
	old := st["completed_frameworks"].([]any)[0].(map[string]any)
	if _, ok := old["role"]; !ok {
		t.Errorf("single-role framework lacks role: %v", keys(old))
	}
	if _, ok := old["roles"]; ok {
		t.Errorf("single-role framework has roles")
	}

	tk := fw["tasks"].([]any)[0].(map[string]any)
	wantTask := sorted("id", "name", "framework_id", "executor_id", "slave_id", "state", "resources",
		"role", "statuses", "labels")
	if got := keys(tk); !reflect.DeepEqual(got, wantTask) {
		t.Errorf("task keys:\n got %v\nwant %v", got, wantTask)
	}
	if got, want := keys(tk["statuses"].([]any)[0].(map[string]any)), sorted("state", "timestamp", "healthy", "source"); !reflect.DeepEqual(got, want) {
		t.Errorf("status keys %v, want %v", got, want)
	}
	if got := tk["labels"].([]any)[0].(map[string]any); got["key"] != "k" || got["value"] != "v" {
		t.Errorf("labels = %v, want bare array of {key,value}", tk["labels"])
	}
	if tk["role"] != "web" {
		t.Errorf("task role = %v, want web", tk["role"])
	}
	offer := fw["offers"].([]any)[0].(map[string]any)
	if got, want := keys(offer), sorted("id", "framework_id", "allocation_info", "slave_id", "resources"); !reflect.DeepEqual(got, want) {
		t.Errorf("offer keys %v, want %v", got, want)
	}
	ex := fw["executors"].([]any)[0].(map[string]any)
	if got, want := keys(ex), sorted("executor_id", "name", "framework_id", "command", "resources", "slave_id"); !reflect.DeepEqual(got, want) {
		t.Errorf("executor keys %v, want %v", got, want)
	}
	if st["pid"] != "master@127.0.0.1:5050" || s0["pid"] != "slave(1)@10.0.0.1:5051" {
		t.Errorf("pids: master %v slave %v", st["pid"], s0["pid"])
	}
}

func TestMesosNumberFormat(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	body := get(t, mux, "/master/state").Body.String()
	for _, want := range []string{`"cpus":5.0`, `"activated_slaves":1.0`, `"ports":"[31000-32000]"`, `"start_time":1700000000.0`} {
		if !strings.Contains(body, want) {
			t.Errorf("state lacks %s", want)
		}
	}
}

func TestClassicHeadersAndJSONP(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	paths := []string{"/master/state", "/state", "/master/state-summary", "/state-summary",
		"/master/frameworks", "/frameworks", "/master/slaves", "/slaves", "/master/tasks", "/tasks",
		"/master/roles", "/roles", "/master/flags", "/flags", "/metrics/snapshot"}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			rec := get(t, mux, p)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
				t.Errorf("Content-Length %q for %d bytes", cl, rec.Body.Len())
			}
			plain := rec.Body.String()
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			jp := get(t, mux, p+sep+"jsonp=angular.callbacks._0")
			if ct := jp.Header().Get("Content-Type"); ct != "text/javascript" {
				t.Errorf("JSONP Content-Type %q", ct)
			}
			body := jp.Body.String()
			inner, ok := strings.CutPrefix(body, "angular.callbacks._0(")
			if inner, ok = strings.CutSuffix(inner, ");"); !ok {
				t.Fatalf("JSONP body %q is not angular.callbacks._0(...);", body)
			}
			if p == "/metrics/snapshot" {
				// Live values (system/mem_free_bytes, load) move between
				// two requests: compare the keys, not the values.
				if a, b := jsonKeys(t, plain), jsonKeys(t, inner); !slices.Equal(a, b) {
					t.Errorf("JSONP keys %v, want %v", b, a)
				}
			} else if inner != plain {
				t.Errorf("JSONP body %q, want %q", body, "angular.callbacks._0("+plain+");")
			}
			if bad := get(t, mux, p+sep+"jsonp=alert(1)//"); bad.Code != http.StatusBadRequest {
				t.Errorf("bad callback: status %d", bad.Code)
			}
		})
	}
}

func TestStateSummary(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	ss := decode(t, get(t, mux, "/master/state-summary").Body.Bytes())
	if ss["hostname"] != "master.example" {
		t.Errorf("hostname %v", ss["hostname"])
	}
	s0 := ss["slaves"].([]any)[0].(map[string]any)
	if s0["TASK_RUNNING"] != json.Number("1") || s0["TASK_FINISHED"] != json.Number("1") || s0["TASK_KILLED"] != json.Number("0") {
		t.Errorf("agent counts: running %v finished %v killed %v", s0["TASK_RUNNING"], s0["TASK_FINISHED"], s0["TASK_KILLED"])
	}
	if ids := s0["framework_ids"].([]any); len(ids) != 1 || ids[0] != "m1-0000" {
		t.Errorf("framework_ids %v", ids)
	}
	s1 := ss["slaves"].([]any)[1].(map[string]any)
	if ids := s1["framework_ids"].([]any); len(ids) != 0 {
		t.Errorf("agent 2 framework_ids %v (completed frameworks are not counted)", ids)
	}
	f0 := ss["frameworks"].([]any)[0].(map[string]any)
	if ids := f0["slave_ids"].([]any); len(ids) != 1 || ids[0] != "m1-S0" {
		t.Errorf("slave_ids %v", ids)
	}
	for _, k := range []string{"TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_FINISHED",
		"TASK_KILLED", "TASK_FAILED", "TASK_LOST", "TASK_ERROR", "TASK_UNREACHABLE"} {
		if _, ok := f0[k]; !ok {
			t.Errorf("framework summary lacks %s", k)
		}
	}
	if _, ok := f0["tasks"]; ok {
		t.Errorf("framework summary must not carry tasks")
	}
}

func TestFrameworksFilter(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	tests := []struct {
		query        string
		active, done int
	}{
		{"", 1, 1},
		{"?framework_id=m1-0000", 1, 0},
		{"?framework_id=m1-0001", 0, 1},
		{"?framework_id=nope", 0, 0},
	}
	for _, tc := range tests {
		m := decode(t, get(t, mux, "/master/frameworks"+tc.query).Body.Bytes())
		if got := len(m["frameworks"].([]any)); got != tc.active {
			t.Errorf("%q: %d frameworks, want %d", tc.query, got, tc.active)
		}
		if got := len(m["completed_frameworks"].([]any)); got != tc.done {
			t.Errorf("%q: %d completed, want %d", tc.query, got, tc.done)
		}
		if got := m["unregistered_frameworks"].([]any); len(got) != 0 {
			t.Errorf("unregistered_frameworks %v", got)
		}
	}
}

func TestSlavesFilterAndFull(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	tests := []struct {
		query string
		ids   []string
	}{
		{"", []string{"m1-S0", "m1-S1"}},
		{"?slave_id=m1-S1", []string{"m1-S1"}},
		{"?slave_id=none", []string{}},
	}
	for _, tc := range tests {
		m := decode(t, get(t, mux, "/master/slaves"+tc.query).Body.Bytes())
		ids := []string{}
		for _, s := range m["slaves"].([]any) {
			ids = append(ids, s.(map[string]any)["id"].(string))
		}
		if !reflect.DeepEqual(ids, tc.ids) {
			t.Errorf("%q: slaves %v, want %v", tc.query, ids, tc.ids)
		}
		if _, ok := m["recovered_slaves"]; !ok {
			t.Errorf("no recovered_slaves")
		}
	}
	m := decode(t, get(t, mux, "/master/slaves?slave_id=m1-S0").Body.Bytes())
	s0 := m["slaves"].([]any)[0].(map[string]any)
	for _, k := range []string{"reserved_resources_full", "unreserved_resources_full", "used_resources_full", "offered_resources_full"} {
		if _, ok := s0[k]; !ok {
			t.Errorf("slave lacks %s", k)
		}
	}
	web := s0["reserved_resources_full"].(map[string]any)["web"].([]any)
	if len(web) != 2 {
		t.Fatalf("reserved_resources_full[web] = %v", web)
	}
	r0 := web[0].(map[string]any)
	// Endpoint format: reservations[] plus the pre-refinement role and reservation.
	if r0["role"] != "web" || r0["reservations"] == nil || r0["reservation"] == nil {
		t.Errorf("reserved resource not in endpoint format: %v", r0)
	}
	un := s0["unreserved_resources_full"].([]any)
	if len(un) != 4 || un[0].(map[string]any)["role"] != "*" {
		t.Errorf("unreserved_resources_full = %v", un)
	}
}

func TestTasksPagingAndOrder(t *testing.T) {
	s := testSnapshot()
	fw := s.Frameworks[0]
	fw.Tasks = nil
	fw.CompletedTasks = nil
	for i := 0; i < 150; i++ {
		fw.Tasks = append(fw.Tasks, task("m1-0000", "t"+strconv.Itoa(i), "m1-S0",
			mesos.TaskState_TASK_RUNNING, float64(1700000100+i), nil))
	}
	fw.Tasks = append(fw.Tasks, task("m1-0000", "nostatus", "m1-S0", mesos.TaskState_TASK_STAGING, 0, nil))
	mux, _ := newTestServer(t, newFakeSource(s))
	ids := func(query string) []string {
		m := decode(t, get(t, mux, "/master/tasks"+query).Body.Bytes())
		out := []string{}
		for _, tk := range m["tasks"].([]any) {
			out = append(out, tk.(map[string]any)["id"].(string))
		}
		return out
	}
	tests := []struct {
		query       string
		n           int
		first, last string
	}{
		{"", 100, "t149", "t50"},
		{"?order=desc&limit=10&offset=5", 10, "t144", "t135"},
		{"?order=asc&limit=3", 3, "nostatus", "t0"},
		{"?limit=1000", 152, "t149", "nostatus"},
		{"?limit=-1", 152, "t149", "nostatus"},
		{"?offset=150", 2, "t-old", "nostatus"},
		{"?offset=500", 0, "", ""},
		{"?offset=-1", 0, "", ""},
		{"?limit=abc", 100, "t149", "t50"},
		{"?task_id=t7", 1, "t7", "t7"},
		{"?framework_id=m1-0001", 1, "t-old", "t-old"},
		{"?framework_id=m1-0001&task_id=t7", 0, "", ""},
	}
	for _, tc := range tests {
		got := ids(tc.query)
		if len(got) != tc.n {
			t.Errorf("%q: %d tasks, want %d", tc.query, len(got), tc.n)
			continue
		}
		if tc.n > 0 && (got[0] != tc.first || got[len(got)-1] != tc.last) {
			t.Errorf("%q: first %s last %s, want %s %s", tc.query, got[0], got[len(got)-1], tc.first, tc.last)
		}
	}
}

func TestRolesAndFlags(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	m := decode(t, get(t, mux, "/master/roles").Body.Bytes())
	r0 := m["roles"].([]any)[0].(map[string]any)
	if got, want := keys(r0), sorted("name", "weight", "quota", "resources", "allocated", "offered", "reserved", "frameworks"); !reflect.DeepEqual(got, want) {
		t.Errorf("role keys %v, want %v", got, want)
	}
	if r0["weight"] != json.Number("2.0") {
		t.Errorf("weight %v", r0["weight"])
	}
	if cpus := r0["resources"].(map[string]any)["cpus"]; cpus != json.Number("3.0") {
		t.Errorf("role resources cpus %v, want allocated+offered 3.0", cpus)
	}
	f := decode(t, get(t, mux, "/master/flags").Body.Bytes())
	if got := f["flags"].(map[string]any)["offer_timeout"]; got != "15secs" {
		t.Errorf("flags %v", f)
	}
}

func TestEmptySnapshotRenders(t *testing.T) {
	src := newFakeSource(&master.Snapshot{Elected: true})
	mux, _ := newTestServer(t, src)
	for _, p := range []string{"/master/state", "/master/state-summary", "/master/slaves", "/master/tasks",
		"/master/roles", "/metrics/snapshot", "/metrics"} {
		if rec := get(t, mux, p); rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", p, rec.Code, rec.Body)
		}
	}
}

func TestNilSnapshotRenders(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(nil))
	// Without a snapshot no leader is known: state is the leader's to tell.
	if rec := get(t, mux, "/master/state"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("state: %d %s", rec.Code, rec.Body)
	}
	if rec := get(t, mux, "/metrics/snapshot"); rec.Code != http.StatusOK {
		t.Errorf("metrics/snapshot: %d %s", rec.Code, rec.Body)
	}
	// Without a snapshot there is no leader: the operator API is unavailable.
	if rec := post(mux, "/api/v1", "application/json", "", []byte(`{"type":"GET_HEALTH"}`)); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("operator: %d", rec.Code)
	}
}

// jsonKeys returns the sorted top-level keys of a JSON object.
func jsonKeys(t *testing.T, body string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%v: %q", err, body)
	}
	return slices.Sorted(maps.Keys(m))
}
