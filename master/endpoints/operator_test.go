package endpoints

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
)

func callOf(t masterpb.Call_Type) *masterpb.Call { return &masterpb.Call{Type: t.Enum()} }

// post sends body to path with the given headers ("" = header absent).
func post(mux http.Handler, path, ctype, accept string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	return do(mux, req)
}

func postCall(t *testing.T, mux http.Handler, mt codec.MediaType, c *masterpb.Call) *httptest.ResponseRecorder {
	t.Helper()
	body, err := codec.Marshal(mt, c)
	if err != nil {
		t.Fatal(err)
	}
	return post(mux, "/api/v1", string(mt), string(mt), body)
}

func TestOperatorGetCalls(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	tests := []struct {
		call  *masterpb.Call
		want  masterpb.Response_Type
		check func(t *testing.T, r *masterpb.Response)
	}{
		{callOf(masterpb.Call_GET_HEALTH), masterpb.Response_GET_HEALTH, func(t *testing.T, r *masterpb.Response) {
			if !r.GetGetHealth().GetHealthy() {
				t.Error("not healthy")
			}
		}},
		{callOf(masterpb.Call_GET_VERSION), masterpb.Response_GET_VERSION, func(t *testing.T, r *masterpb.Response) {
			if v := r.GetGetVersion().GetVersionInfo(); v.GetVersion() != "1.12.0" || v.GetGitSha() != "abc123" {
				t.Errorf("version %v", v)
			}
		}},
		{callOf(masterpb.Call_GET_FLAGS), masterpb.Response_GET_FLAGS, func(t *testing.T, r *masterpb.Response) {
			if f := r.GetGetFlags().GetFlags(); len(f) != 2 || f[1].GetValue() != "15secs" {
				t.Errorf("flags %v", f)
			}
		}},
		{&masterpb.Call{Type: masterpb.Call_GET_METRICS.Enum(), GetMetrics: &masterpb.Call_GetMetrics{}},
			masterpb.Response_GET_METRICS, func(t *testing.T, r *masterpb.Response) {
				found := false
				for _, m := range r.GetGetMetrics().GetMetrics() {
					if m.GetName() == "master/tasks_running" && m.GetValue() == 1 {
						found = true
					}
				}
				if !found {
					t.Error("no master/tasks_running = 1")
				}
			}},
		{callOf(masterpb.Call_GET_STATE), masterpb.Response_GET_STATE, func(t *testing.T, r *masterpb.Response) {
			st := r.GetGetState()
			if len(st.GetGetAgents().GetAgents()) != 2 || len(st.GetGetFrameworks().GetFrameworks()) != 1 ||
				len(st.GetGetTasks().GetTasks()) != 1 || len(st.GetGetExecutors().GetExecutors()) != 1 {
				t.Errorf("state %v", st)
			}
		}},
		{callOf(masterpb.Call_GET_AGENTS), masterpb.Response_GET_AGENTS, func(t *testing.T, r *masterpb.Response) {
			a := r.GetGetAgents().GetAgents()[0]
			if a.GetPid() != "slave(1)@10.0.0.1:5051" || !a.GetActive() || a.GetRegisteredTime().GetNanoseconds() != t0.UnixNano() ||
				a.ReregisteredTime != nil || len(a.GetTotalResources()) == 0 {
				t.Errorf("agent %v", a)
			}
			if b := r.GetGetAgents().GetAgents()[1]; !b.GetDeactivated() || b.GetReregisteredTime() == nil {
				t.Errorf("agent 2 %v", b)
			}
		}},
		{callOf(masterpb.Call_GET_FRAMEWORKS), masterpb.Response_GET_FRAMEWORKS, func(t *testing.T, r *masterpb.Response) {
			fs := r.GetGetFrameworks()
			if len(fs.GetFrameworks()) != 1 || len(fs.GetCompletedFrameworks()) != 1 {
				t.Fatalf("frameworks %v", fs)
			}
			f := fs.GetFrameworks()[0]
			if !f.GetActive() || !f.GetConnected() || f.GetRecovered() || len(f.GetOffers()) != 1 || f.UnregisteredTime != nil {
				t.Errorf("framework %v", f)
			}
			if fs.GetCompletedFrameworks()[0].GetUnregisteredTime() == nil {
				t.Error("completed framework lacks unregistered_time")
			}
		}},
		{callOf(masterpb.Call_GET_EXECUTORS), masterpb.Response_GET_EXECUTORS, func(t *testing.T, r *masterpb.Response) {
			e := r.GetGetExecutors().GetExecutors()
			if len(e) != 1 || e[0].GetAgentId().GetValue() != "m1-S0" || e[0].GetExecutorInfo().GetExecutorId().GetValue() != "e1" {
				t.Errorf("executors %v", e)
			}
		}},
		{callOf(masterpb.Call_GET_TASKS), masterpb.Response_GET_TASKS, func(t *testing.T, r *masterpb.Response) {
			ts := r.GetGetTasks()
			if len(ts.GetTasks()) != 1 || len(ts.GetCompletedTasks()) != 2 || len(ts.GetUnreachableTasks()) != 0 {
				t.Errorf("tasks %v", ts)
			}
		}},
		{callOf(masterpb.Call_GET_ROLES), masterpb.Response_GET_ROLES, func(t *testing.T, r *masterpb.Response) {
			rs := r.GetGetRoles().GetRoles()
			if len(rs) != 1 || rs[0].GetName() != "web" || rs[0].GetWeight() != 2 || rs[0].GetFrameworks()[0].GetValue() != "m1-0000" {
				t.Errorf("roles %v", rs)
			}
		}},
		{callOf(masterpb.Call_GET_MASTER), masterpb.Response_GET_MASTER, func(t *testing.T, r *masterpb.Response) {
			m := r.GetGetMaster()
			if m.GetMasterInfo().GetId() != "m1" || m.GetStartTime() != 1700000000 || m.GetElectedTime() != 1700000002 {
				t.Errorf("master %v", m)
			}
		}},
	}
	for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
		for _, tc := range tests {
			t.Run(string(mt)+"/"+tc.call.GetType().String(), func(t *testing.T) {
				rec := postCall(t, mux, mt, tc.call)
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				if ct := rec.Header().Get("Content-Type"); ct != string(mt) {
					t.Errorf("Content-Type %q", ct)
				}
				var resp masterpb.Response
				if err := codec.Unmarshal(mt, rec.Body.Bytes(), &resp); err != nil {
					t.Fatalf("decode: %v\n%s", err, rec.Body)
				}
				if resp.GetType() != tc.want {
					t.Errorf("type %v, want %v", resp.GetType(), tc.want)
				}
				tc.check(t, &resp)
			})
		}
	}
}

func TestOperatorJSONShape(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	rec := post(mux, "/master/api/v1", "application/json", "", []byte(`{"type":"GET_HEALTH"}`))
	if got, want := rec.Body.String(), `{"type":"GET_HEALTH","get_health":{"healthy":true}}`; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
}

func TestOperatorStatusCodes(t *testing.T) {
	s := testSnapshot()
	mux, _ := newTestServer(t, newFakeSource(s))
	health := []byte(`{"type":"GET_HEALTH"}`)
	tests := []struct {
		name          string
		method, ctype string
		accept        string
		body          []byte
		code          int
		bodyContains  string
	}{
		{"GET", http.MethodGet, "application/json", "", health, 405, "POST"},
		{"no content type", http.MethodPost, "", "", health, 400, "Content-Type"},
		{"text/plain", http.MethodPost, "text/plain", "", health, 415, ""},
		{"json with charset", http.MethodPost, "application/json; charset=utf-8", "", health, 415, ""},
		{"not acceptable", http.MethodPost, "application/json", "text/html", health, 406, ""},
		{"accept protobuf only", http.MethodPost, "application/json", "application/x-protobuf", health, 200, ""},
		{"malformed JSON", http.MethodPost, "application/json", "", []byte(`{"type":`), 400, "Failed to convert JSON"},
		{"malformed protobuf", http.MethodPost, "application/x-protobuf", "", []byte{0xff, 0xff}, 400, "Failed to parse body"},
		{"no type", http.MethodPost, "application/json", "", []byte(`{}`), 400, "'type'"},
		{"unknown type name", http.MethodPost, "application/json", "", []byte(`{"type":"FROBNICATE"}`), 400, "'type'"},
		{"metrics without get_metrics", http.MethodPost, "application/json", "", []byte(`{"type":"GET_METRICS"}`), 400, "'get_metrics'"},
		{"teardown without teardown", http.MethodPost, "application/json", "", []byte(`{"type":"TEARDOWN"}`), 400, "'teardown'"},
		{"teardown missing framework_id", http.MethodPost, "application/json", "", []byte(`{"type":"TEARDOWN","teardown":{}}`), 400, "framework_id"},
		{"UNKNOWN", http.MethodPost, "application/json", "", []byte(`{"type":"UNKNOWN"}`), 501, "UNKNOWN"},
		{"START_MAINTENANCE reaches the source", http.MethodPost, "application/json", "",
			[]byte(`{"type":"START_MAINTENANCE","start_maintenance":{}}`), 200, ""},
		{"MARK_AGENT_GONE reaches the source", http.MethodPost, "application/json", "",
			[]byte(`{"type":"MARK_AGENT_GONE","mark_agent_gone":{"agent_id":{"value":"m1-S0"}}}`), 200, ""},
		{"UPDATE_WEIGHTS reaches the source", http.MethodPost, "application/json", "",
			[]byte(`{"type":"UPDATE_WEIGHTS","update_weights":{}}`), 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "/api/v1", bytes.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			rec := do(mux, req)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tc.bodyContains) {
				t.Errorf("body %q lacks %q", rec.Body, tc.bodyContains)
			}
			if tc.code >= 400 && !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
				t.Errorf("error Content-Type %q", rec.Header().Get("Content-Type"))
			}
		})
	}
}

func TestOperatorNotLeader(t *testing.T) {
	s := testSnapshot()
	s.Elected = false
	s.Leader = &mesos.MasterInfo{Id: proto.String("m2"), Ip: proto.Uint32(0x0200000a), Port: proto.Uint32(5050)}
	mux, _ := newTestServer(t, newFakeSource(s))
	rec := post(mux, "/master/api/v1?x=1", "application/json", "", []byte(`{"type":"GET_HEALTH"}`))
	if rec.Code != http.StatusTemporaryRedirect {
		t.Fatalf("status %d", rec.Code)
	}
	if loc := rec.Header().Get("Location"); loc != "//10.0.0.2:5050/master/api/v1?x=1" {
		t.Errorf("Location %q", loc)
	}
	s.Leader.Hostname = proto.String("leader.example")
	rec = post(mux, "/master/teardown", "application/x-www-form-urlencoded", "", []byte("frameworkId=m1-0000"))
	if loc := rec.Header().Get("Location"); rec.Code != 307 || loc != "//leader.example:5050/master/teardown" {
		t.Errorf("teardown redirect %d %q", rec.Code, loc)
	}
	s.Leader = nil
	if rec := post(mux, "/api/v1", "application/json", "", []byte(`{"type":"GET_HEALTH"}`)); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("no leader: status %d", rec.Code)
	}
}

// TestFollowerRedirectsLeaderOnlyReads: a follower's own view of frameworks
// and tasks is empty, so every read of the cluster's state answers 307 to
// the leader, as Mesos's master does (issue 16: `mezzo tasks
// --master=m1,m2,m3` printed a follower's empty table). A master's own flags
// and metrics stay local.
func TestFollowerRedirectsLeaderOnlyReads(t *testing.T) {
	s := testSnapshot()
	s.Elected = false
	s.Leader = &mesos.MasterInfo{Id: proto.String("m2"), Hostname: proto.String("leader.example"), Port: proto.Uint32(5050)}
	mux, _ := newTestServer(t, newFakeSource(s))
	for _, p := range []string{
		"/master/state", "/state", "/master/state-summary", "/state-summary", "/master/frameworks",
		"/master/slaves", "/slaves", "/master/tasks?task_id=t1", "/tasks", "/master/roles", "/roles",
		"/master/allocator/explain", "/master/weights", "/master/quota",
	} {
		rec := get(t, mux, p)
		if rec.Code != http.StatusTemporaryRedirect {
			t.Errorf("GET %s on a follower: %d, want 307", p, rec.Code)
			continue
		}
		if loc := rec.Header().Get("Location"); loc != "//leader.example:5050"+p {
			t.Errorf("GET %s: Location %q", p, loc)
		}
	}
	for _, p := range []string{"/master/flags", "/metrics/snapshot", "/metrics"} {
		if rec := get(t, mux, p); rec.Code != http.StatusOK {
			t.Errorf("GET %s on a follower: %d, want 200 (its own)", p, rec.Code)
		}
	}
	s.Leader = nil
	if rec := get(t, mux, "/master/tasks"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("tasks without a leader: %d, want 503", rec.Code)
	}
}

func TestOperatorTeardown(t *testing.T) {
	for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
		src := newFakeSource(testSnapshot())
		mux, _ := newTestServer(t, src)
		call := &masterpb.Call{
			Type:     masterpb.Call_TEARDOWN.Enum(),
			Teardown: &masterpb.Call_Teardown{FrameworkId: &mesos.FrameworkID{Value: proto.String("m1-0000")}},
		}
		rec := postCall(t, mux, mt, call)
		if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Fatalf("%s: status %d body %q", mt, rec.Code, rec.Body)
		}
		if ct, ok := rec.Header()["Content-Type"]; ok {
			t.Errorf("%s: TEARDOWN answered with Content-Type %q", mt, ct)
		}
		if len(src.torn) != 1 || src.torn[0] != "m1-0000" {
			t.Errorf("torn down %v", src.torn)
		}
		call.Teardown.FrameworkId.Value = proto.String("m1-0001") // completed, not registered
		if rec := postCall(t, mux, mt, call); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "No framework") {
			t.Errorf("%s: unknown framework: %d %s", mt, rec.Code, rec.Body)
		}
	}
}

func TestOperatorTeardownError(t *testing.T) {
	src := newFakeSource(testSnapshot())
	src.teardownErr = errFake
	mux, _ := newTestServer(t, src)
	rec := post(mux, "/api/v1", "application/json", "", []byte(`{"type":"TEARDOWN","teardown":{"framework_id":{"value":"m1-0000"}}}`))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "fake failure") {
		t.Errorf("status %d %s", rec.Code, rec.Body)
	}
}

func TestClassicTeardown(t *testing.T) {
	src := newFakeSource(testSnapshot())
	mux, _ := newTestServer(t, src)
	tests := []struct {
		method, path, body string
		code               int
	}{
		{http.MethodGet, "/master/teardown", "", 405},
		{http.MethodPost, "/master/teardown", "", 400},
		{http.MethodPost, "/master/teardown", "frameworkId=nope", 400},
		{http.MethodPost, "/master/teardown", "frameworkId=%zz", 400},
		{http.MethodPost, "/master/teardown", "frameworkId=m1-0000", 200},
		{http.MethodPost, "/teardown", "frameworkId=m1-0000", 200},
	}
	for _, tc := range tests {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if rec := do(mux, req); rec.Code != tc.code {
			t.Errorf("%s %s %q: %d, want %d (%s)", tc.method, tc.path, tc.body, rec.Code, tc.code, rec.Body)
		}
	}
	if len(src.torn) != 2 {
		t.Errorf("torn %v", src.torn)
	}
}

func TestValidateCallTable(t *testing.T) {
	// Every listed sub-message name must exist on Call, or validation could
	// never pass for that type.
	for typ, name := range requiredSubMessage {
		if (&masterpb.Call{}).ProtoReflect().Descriptor().Fields().ByName(name) == nil {
			t.Errorf("%v: Call has no field %q", typ, name)
		}
	}
}
