package endpoints

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/recordio"
	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
)

// alice may view what runs as alice; admin everything; nobody else
// anything (permissive false).
const viewACLs = `{
  "permissive": false,
  "view_frameworks": [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}},
                      {"principals": {"values": ["admin"]}, "users": {"type": "ANY"}}],
  "view_tasks":      [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}},
                      {"principals": {"values": ["admin"]}, "users": {"type": "ANY"}}],
  "view_executors":  [{"principals": {"values": ["admin"]}, "users": {"type": "ANY"}}],
  "view_roles":      [{"principals": {"values": ["admin"]}, "roles": {"type": "ANY"}}],
  "view_flags":      [{"principals": {"values": ["admin"]}, "flags": {"type": "ANY"}}],
  "get_endpoints":   [{"principals": {"values": ["admin"]}, "paths": {"type": "ANY"}}]
}`

func newAuthzServer(t *testing.T, src Source) http.Handler {
	t.Helper()
	acls, err := authorizer.ParseACLs([]byte(viewACLs))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	Register(mux, src, Options{Version: "1.12.0", Authorizer: authorizer.NewLocal(acls),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return mux
}

// as is req made by principal p (what master/httpapi's authentication
// puts in the context).
func as(req *http.Request, p string) *http.Request {
	return req.WithContext(authn.WithPrincipal(req.Context(), p))
}

func TestStateFilteredPerPrincipal(t *testing.T) {
	h := newAuthzServer(t, newFakeSource(testSnapshot()))
	type stateDoc struct {
		Flags      map[string]string `json:"flags"`
		Frameworks []struct {
			ID        string `json:"id"`
			Tasks     []struct{ ID string }
			Executors []struct{ ID string } `json:"executors"`
		} `json:"frameworks"`
		Completed []struct{ ID string } `json:"completed_frameworks"`
	}
	get := func(p, path string, v any) int {
		rec := do(h, as(httptest.NewRequest("GET", path, nil), p))
		if rec.Code == http.StatusOK && v != nil {
			if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Code
	}
	var alice, eve, admin stateDoc
	get("alice", "/master/state", &alice)
	get("eve", "/master/state", &eve)
	get("admin", "/master/state", &admin)
	if len(alice.Frameworks) != 1 || alice.Frameworks[0].ID != "m1-0000" || len(alice.Completed) != 0 ||
		len(alice.Frameworks[0].Tasks) != 1 || len(alice.Frameworks[0].Executors) != 0 || len(alice.Flags) != 0 {
		t.Errorf("alice sees %+v", alice)
	}
	if len(eve.Frameworks)+len(eve.Completed) != 0 {
		t.Errorf("eve sees %+v", eve)
	}
	if len(admin.Frameworks) != 1 || len(admin.Completed) != 1 || len(admin.Frameworks[0].Executors) != 1 || len(admin.Flags) == 0 {
		t.Errorf("admin sees %+v", admin)
	}
	var tasks struct{ Tasks []struct{ ID string } }
	get("alice", "/master/tasks", &tasks)
	if len(tasks.Tasks) != 2 {
		t.Errorf("alice's /master/tasks: %+v (want t-run and t-done)", tasks)
	}
	get("eve", "/master/tasks", &tasks)
	if len(tasks.Tasks) != 0 {
		t.Errorf("eve's /master/tasks: %+v", tasks)
	}
	var roles struct{ Roles []struct{ Name string } }
	if get("alice", "/master/roles", &roles); len(roles.Roles) != 0 {
		t.Errorf("alice sees roles %+v", roles)
	}
	for _, path := range []string{"/master/flags", "/metrics/snapshot", "/metrics"} {
		rec := do(h, as(httptest.NewRequest("GET", path, nil), "alice"))
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "principal 'alice' is not authorized to") {
			t.Errorf("alice GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if code := get("admin", path, nil); code != http.StatusOK {
			t.Errorf("admin GET %s: %d", path, code)
		}
	}
}

func TestOperatorReadsFiltered(t *testing.T) {
	h := newAuthzServer(t, newFakeSource(testSnapshot()))
	call := func(p string, typ masterpb.Call_Type) (*masterpb.Response, int, string) {
		c := callOf(typ)
		if typ == masterpb.Call_GET_METRICS {
			c.GetMetrics = &masterpb.Call_GetMetrics{}
		}
		body, _ := codec.Marshal(codec.JSON, c)
		req := httptest.NewRequest("POST", "/api/v1", bytes.NewReader(body))
		req.Header.Set("Content-Type", string(codec.JSON))
		rec := do(h, as(req, p))
		var resp masterpb.Response
		if rec.Code == http.StatusOK {
			if err := codec.Unmarshal(codec.JSON, rec.Body.Bytes(), &resp); err != nil {
				t.Fatal(err)
			}
		}
		return &resp, rec.Code, rec.Body.String()
	}
	resp, _, _ := call("alice", masterpb.Call_GET_TASKS)
	if n := len(resp.GetGetTasks().GetTasks()) + len(resp.GetGetTasks().GetCompletedTasks()); n != 2 {
		t.Errorf("alice GET_TASKS: %d tasks, want 2", n)
	}
	resp, _, _ = call("eve", masterpb.Call_GET_STATE)
	if st := resp.GetGetState(); len(st.GetGetFrameworks().GetFrameworks())+len(st.GetGetTasks().GetTasks())+len(st.GetGetExecutors().GetExecutors()) != 0 {
		t.Errorf("eve GET_STATE shows %v", st)
	}
	for _, typ := range []masterpb.Call_Type{masterpb.Call_GET_FLAGS, masterpb.Call_GET_METRICS} {
		if _, code, body := call("alice", typ); code != http.StatusForbidden {
			t.Errorf("alice %s: %d %s", typ, code, body)
		}
	}
	resp, _, _ = call("admin", masterpb.Call_GET_EXECUTORS)
	if len(resp.GetGetExecutors().GetExecutors()) != 1 {
		t.Errorf("admin GET_EXECUTORS: %v", resp)
	}
}

// A SUBSCRIBE stream carries only the events of what its principal may
// view: eve's stream skips alice's task and framework events but gets
// those of a framework running as eve.
func TestSubscribeEventsFiltered(t *testing.T) {
	src := newFakeSource(testSnapshot())
	srv := httptest.NewServer(authAs("eve", newAuthzServer(t, src)))
	defer srv.Close()
	body, _ := codec.Marshal(codec.JSON, callOf(masterpb.Call_SUBSCRIBE))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1", bytes.NewReader(body))
	req.Header.Set("Content-Type", string(codec.JSON))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := recordio.NewReader(resp.Body, 0)
	next := func() *masterpb.Event {
		t.Helper()
		rec, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		var ev masterpb.Event
		if err := codec.Unmarshal(codec.JSON, rec, &ev); err != nil {
			t.Fatal(err)
		}
		return &ev
	}
	if ev := next(); ev.GetType() != masterpb.Event_SUBSCRIBED || len(ev.GetSubscribed().GetGetState().GetGetTasks().GetTasks()) != 0 {
		t.Fatalf("SUBSCRIBED for eve: %v", ev)
	}
	aliceTask := task("m1-0000", "t-new", "m1-S0", mesos.TaskState_TASK_STAGING, 0, nil)
	eveFw := &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String("m1-0002")}, User: proto.String("eve"), Name: proto.String("eves")}
	eveTask := task("m1-0002", "t-eve", "m1-S0", mesos.TaskState_TASK_STAGING, 0, nil)
	eveTask.User = proto.String("eve")
	for _, ev := range []*masterpb.Event{
		{Type: masterpb.Event_TASK_ADDED.Enum(), TaskAdded: &masterpb.Event_TaskAdded{Task: aliceTask}},
		{Type: masterpb.Event_TASK_UPDATED.Enum(), TaskUpdated: &masterpb.Event_TaskUpdated{FrameworkId: aliceTask.FrameworkId,
			Status: &mesos.TaskStatus{TaskId: aliceTask.TaskId, State: mesos.TaskState_TASK_RUNNING.Enum()}, State: mesos.TaskState_TASK_RUNNING.Enum()}},
		{Type: masterpb.Event_FRAMEWORK_ADDED.Enum(), FrameworkAdded: &masterpb.Event_FrameworkAdded{Framework: &masterpb.Response_GetFrameworks_Framework{FrameworkInfo: eveFw}}},
		{Type: masterpb.Event_TASK_ADDED.Enum(), TaskAdded: &masterpb.Event_TaskAdded{Task: eveTask}},
	} {
		src.events <- ev
	}
	// eve's own: her ACL grants nothing, so even these are hidden; the
	// stream stays open and the next event it may see is a HEARTBEAT-free
	// agent event.
	src.events <- &masterpb.Event{Type: masterpb.Event_AGENT_REMOVED.Enum(), AgentRemoved: &masterpb.Event_AgentRemoved{AgentId: &mesos.AgentID{Value: proto.String("m1-S1")}}}
	if ev := next(); ev.GetType() != masterpb.Event_AGENT_REMOVED {
		t.Fatalf("eve got %v before the agent event: a filtered event leaked", ev.GetType())
	}
}

// authAs makes every request come from principal p.
func authAs(p string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, as(r, p)) })
}
