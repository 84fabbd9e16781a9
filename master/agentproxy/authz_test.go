package agentproxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
	"mezzo/master"
)

// Two frameworks on one agent, running as alice and bob; alice may read
// (and view) only what runs as alice.
func TestProxyAuthorizesSandboxReads(t *testing.T) {
	var seen []string
	agentState := `{"id":"S1","frameworks":[
	  {"id":"FA","user":"alice","executors":[{"id":"EA","tasks":[{"id":"TA"}],"queued_tasks":[],"completed_tasks":[]}],"completed_executors":[]},
	  {"id":"FB","user":"bob","executors":[{"id":"TB","tasks":[{"id":"TB"}],"queued_tasks":[],"completed_tasks":[]}],"completed_executors":[]}],
	  "completed_frameworks":[{"id":"FX","user":"alice","executors":[],"completed_executors":[]}]}`
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.RequestURI())
		if strings.HasSuffix(r.URL.Path, "/state") {
			io.WriteString(w, agentState)
			return
		}
		io.WriteString(w, `{"data":"x","offset":0}`)
	}))
	defer agent.Close()
	fw := func(id, user string, execs []*master.ExecutorView, tasks ...*mesos.Task) *master.FrameworkView {
		return &master.FrameworkView{Info: &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String(id)}, User: proto.String(user)},
			Executors: execs, Tasks: tasks}
	}
	execA := &master.ExecutorView{AgentID: "S1", Info: &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("EA")}}}
	taskB := &mesos.Task{TaskId: &mesos.TaskID{Value: proto.String("TB")}, User: proto.String("bob")}
	taskA := &mesos.Task{TaskId: &mesos.TaskID{Value: proto.String("TA")}, User: proto.String("alice")}
	snap := &master.Snapshot{Elected: true, Leader: leader("m1", 5050),
		Agents:     []*master.AgentView{agentView("S1", strings.TrimPrefix(agent.URL, "http://"))},
		Frameworks: []*master.FrameworkView{fw("FA", "alice", []*master.ExecutorView{execA}, taskA), fw("FB", "bob", nil, taskB)}}
	acls, err := authorizer.ParseACLs([]byte(`{"permissive": false,
	  "access_sandboxes": [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}}],
	  "view_frameworks":  [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}}],
	  "view_tasks":       [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}}],
	  "view_executors":   [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := New(fakeMaster{snap}, Options{Authorizer: authorizer.NewLocal(acls)})
	get := func(target string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", target, nil)
		req = req.WithContext(authn.WithPrincipal(req.Context(), "alice"))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	sandbox := func(fid, eid string) string {
		return "/work/slaves/S1/frameworks/" + fid + "/executors/" + eid + "/runs/c1"
	}
	for _, tc := range []struct {
		name, path string
		want       int
		body       string
	}{
		{"own sandbox", sandbox("FA", "EA") + "/stdout", 200, ""},
		{"own, virtual path", "/frameworks/FA/executors/EA/runs/latest/stdout", 200, ""},
		{"another framework's command task", sandbox("FB", "TB") + "/stdout", 403, "access_sandboxes (object \"bob\")"},
		{"escape with ..", sandbox("FA", "EA") + "/../../../../FB/executors/TB/runs/c1/stdout", 400, "without '.', '..'"},
		{"escape with . and //", "/frameworks/FA/executors/EA/runs/latest/.//stdout", 400, "Invalid 'path'"},
		{"relative", "frameworks/FB/executors/TB/runs/latest/stdout", 400, "Invalid 'path'"},
		{"first sandbox decides", sandbox("FB", "TB") + "/frameworks/FA/executors/EA/runs/x/stdout", 403, "access_sandboxes"},
		{"not a sandbox", "/var/log/mezzo.log", 403, "access_mesos_logs"},
		{"unknown framework", sandbox("FZ", "E") + "/stdout", 403, "not known to the master"},
	} {
		before := len(seen)
		w := get("/agent/S1/files/read?path=" + strings.ReplaceAll(tc.path, "/", "%2F"))
		if w.Code != tc.want || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("%s: %d %q, want %d containing %q", tc.name, w.Code, w.Body.String(), tc.want, tc.body)
		}
		if forwarded := len(seen) > before; forwarded != (tc.want == 200) {
			t.Errorf("%s: forwarded to the agent: %v", tc.name, forwarded)
		}
	}

	w := get("/agent/S1/state")
	var st struct {
		Frameworks []struct {
			ID        string
			Executors []struct {
				ID    string
				Tasks []struct{ ID string }
			}
		}
		Completed []struct{ ID string } `json:"completed_frameworks"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != 200 {
		t.Fatalf("state: %d %v %s", w.Code, err, w.Body)
	}
	if len(st.Frameworks) != 1 || st.Frameworks[0].ID != "FA" || len(st.Frameworks[0].Executors) != 1 ||
		len(st.Frameworks[0].Executors[0].Tasks) != 1 || len(st.Completed) != 0 {
		t.Fatalf("alice's view of the agent's state: %s", w.Body)
	}
	if w.Header().Get("Content-Length") != "" && w.Header().Get("Content-Length") != itoa(w.Body.Len()) {
		t.Fatalf("Content-Length %s for %d bytes", w.Header().Get("Content-Length"), w.Body.Len())
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
