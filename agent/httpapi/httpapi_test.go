package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"mezzo/api/codec"
	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/api/recordio"
	"mezzo/internal/authorizer"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

type fakeBackend struct {
	containers []ContainerUsage
	recovering bool
	subErr     error
	callErr    error
	calls      []*executorpb.Call
	view       *StateView
}

func (f *fakeBackend) Recovering() bool { return f.recovering }
func (f *fakeBackend) SubscribeExecutor(c *executorpb.Call, s *ExecutorStream) error {
	if f.subErr != nil {
		return f.subErr
	}
	s.Send(&executorpb.Event{Type: executorpb.Event_SUBSCRIBED.Enum()})
	s.Send(&executorpb.Event{Type: executorpb.Event_SHUTDOWN.Enum()})
	s.Close()
	return nil
}
func (f *fakeBackend) ExecutorCall(c *executorpb.Call) error {
	f.calls = append(f.calls, c)
	return f.callErr
}
func (f *fakeBackend) State() (*StateView, error) { return f.view, nil }
func (f *fakeBackend) Containers() ([]ContainerUsage, error) {
	return f.containers, nil
}
func (f *fakeBackend) Metrics() (map[string]float64, error) {
	return map[string]float64{"slave/registered": 1}, nil
}

// routeOnlyFiles is a Files whose HTTP side echoes the path, for routing
// tests; its operator-API side has nothing attached.
type routeOnlyFiles struct{ http.Handler }

func (routeOnlyFiles) List(string) ([]*mesos.FileInfo, error) {
	return nil, errors.New("nothing attached")
}
func (routeOnlyFiles) Read(string, int64, int64) ([]byte, int64, error) {
	return nil, 0, errors.New("nothing attached")
}
func (routeOnlyFiles) OwnerOf(string) (authorizer.Object, bool, bool) {
	return authorizer.Object{}, false, false
}

func status(state mesos.TaskState) *mesos.TaskStatus {
	id := uuid.New()
	return &mesos.TaskStatus{
		TaskId: &mesos.TaskID{Value: proto.String("t")},
		State:  state.Enum(),
		Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum(),
		Uuid:   id[:],
	}
}

func baseCall(t executorpb.Call_Type) *executorpb.Call {
	return &executorpb.Call{
		Type:        t.Enum(),
		FrameworkId: &mesos.FrameworkID{Value: proto.String("f")},
		ExecutorId:  &mesos.ExecutorID{Value: proto.String("e")},
	}
}

func TestValidateCall(t *testing.T) {
	ok := baseCall(executorpb.Call_UPDATE)
	ok.Update = &executorpb.Call_Update{Status: status(mesos.TaskState_TASK_RUNNING)}
	tests := []struct {
		name   string
		mutate func(c *executorpb.Call)
		want   string
	}{
		{"valid", func(*executorpb.Call) {}, ""},
		{"no type", func(c *executorpb.Call) { c.Type = nil }, "'type'"},
		{"no executor", func(c *executorpb.Call) { c.ExecutorId = nil }, "'executor_id'"},
		{"no update", func(c *executorpb.Call) { c.Update = nil }, "'update'"},
		{"no uuid", func(c *executorpb.Call) { c.Update.Status.Uuid = nil }, "'uuid'"},
		{"short uuid", func(c *executorpb.Call) { c.Update.Status.Uuid = []byte("x") }, "Invalid 'uuid'"},
		{"source", func(c *executorpb.Call) { c.Update.Status.Source = mesos.TaskStatus_SOURCE_MASTER.Enum() }, "SOURCE_EXECUTOR"},
		{"staging", func(c *executorpb.Call) { c.Update.Status.State = mesos.TaskState_TASK_STAGING.Enum() }, "TASK_STAGING"},
		{"executor mismatch", func(c *executorpb.Call) {
			c.Update.Status.ExecutorId = &mesos.ExecutorID{Value: proto.String("x")}
		}, "does not match"},
		{"no subscribe", func(c *executorpb.Call) { c.Type = executorpb.Call_SUBSCRIBE.Enum() }, "'subscribe'"},
		{"no message", func(c *executorpb.Call) { c.Type = executorpb.Call_MESSAGE.Enum() }, "'message'"},
		{"heartbeat", func(c *executorpb.Call) { c.Type = executorpb.Call_HEARTBEAT.Enum() }, ""},
	}
	for _, tt := range tests {
		c := proto.Clone(ok).(*executorpb.Call)
		tt.mutate(c)
		err := ValidateCall(c)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func post(h http.Handler, path, ctype, accept string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestExecutorEndpoint(t *testing.T) {
	b := &fakeBackend{}
	h := New(b, nil, nil, nil)
	sub := baseCall(executorpb.Call_SUBSCRIBE)
	sub.Subscribe = &executorpb.Call_Subscribe{}
	pb, _ := proto.Marshal(sub)

	// SUBSCRIBE streams the backend's events in the negotiated type.
	w := post(h, "/slave(1)/api/v1/executor", "application/x-protobuf", "application/x-protobuf", pb)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/x-protobuf" {
		t.Fatalf("subscribe: %d %s", w.Code, w.Body)
	}
	r := recordio.NewReader(w.Body, 0)
	for _, want := range []executorpb.Event_Type{executorpb.Event_SUBSCRIBED, executorpb.Event_SHUTDOWN} {
		rec, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		ev := &executorpb.Event{}
		if err := proto.Unmarshal(rec, ev); err != nil || ev.GetType() != want {
			t.Fatalf("event %v %v, want %s", ev, err, want)
		}
	}
	if w := post(h, "/api/v1/executor", "application/x-protobuf", "text/html", pb); w.Code != 406 {
		t.Errorf("unacceptable Accept: %d", w.Code)
	}
	b.subErr = Errorf(400, "Framework cannot be found")
	if w := post(h, "/api/v1/executor", "application/x-protobuf", "", pb); w.Code != 400 || w.Body.String() != "Framework cannot be found" {
		t.Errorf("refused subscribe: %d %s", w.Code, w.Body)
	}

	hb := baseCall(executorpb.Call_HEARTBEAT)
	hbBytes, _ := proto.Marshal(hb)
	if w := post(h, "/api/v1/executor", "application/x-protobuf", "", hbBytes); w.Code != 202 || w.Body.Len() != 0 {
		t.Errorf("heartbeat: %d %s", w.Code, w.Body)
	}
	b.callErr = Errorf(403, "Executor is not subscribed")
	if w := post(h, "/api/v1/executor", "application/x-protobuf", "", hbBytes); w.Code != 403 {
		t.Errorf("refused call: %d", w.Code)
	}
	unknown := baseCall(executorpb.Call_UNKNOWN)
	ub, _ := proto.Marshal(unknown)
	if w := post(h, "/api/v1/executor", "application/x-protobuf", "", ub); w.Code != 501 {
		t.Errorf("UNKNOWN call: %d", w.Code)
	}
	b.recovering = true
	if w := post(h, "/api/v1/executor", "application/x-protobuf", "", hbBytes); w.Code != 503 {
		t.Errorf("while recovering: %d", w.Code)
	}
}

func TestExecutorStream(t *testing.T) {
	s := NewExecutorStream(codec.Protobuf)
	if err := s.Send(&executorpb.Event{Type: executorpb.Event_HEARTBEAT.Enum()}); err != nil {
		t.Fatal(err)
	}
	if got := s.Next(); len(got) != 1 {
		t.Fatalf("queued %d", len(got))
	}
	s.End()
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed")
	}
	if err := s.Send(&executorpb.Event{Type: executorpb.Event_HEARTBEAT.Enum()}); err != ErrStreamClosed {
		t.Errorf("send after end: %v", err)
	}
}

func TestRoutesAndJSONP(t *testing.T) {
	files := routeOnlyFiles{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "files:"+r.URL.Path) })}
	h := New(&fakeBackend{view: &StateView{ID: "S1"}}, files, nil, nil)
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	if w := get("/metrics/snapshot?jsonp=angular.callbacks._0"); w.Header().Get("Content-Type") != "text/javascript" ||
		w.Body.String() != `angular.callbacks._0({"slave/registered":1});` {
		t.Errorf("jsonp metrics: %s %s", w.Header().Get("Content-Type"), w.Body)
	}
	if w := get("/state?jsonp=alert(1)//"); w.Code != 400 {
		t.Errorf("bad callback: %d", w.Code)
	}
	if w := get("/files/browse?path=/x"); w.Body.String() != "files:/files/browse" {
		t.Errorf("files: %s", w.Body)
	}
	if w := get("/slave(1)/health"); w.Code != 200 {
		t.Errorf("health: %d", w.Code)
	}
	if w := get("/nope"); w.Code != 404 || w.Body.String() != "No endpoint '/nope' on this agent\n" {
		t.Errorf("unknown path: %d %q", w.Code, w.Body)
	}
	if w := get("/slave(1)/api/v1/executor"); w.Code != 405 {
		t.Errorf("GET executor API: %d", w.Code)
	}
}

func TestRenderState(t *testing.T) {
	cpus := func(v float64, role string) *mesos.Resource {
		r := &mesos.Resource{Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}}
		if role != "" {
			r.Reservations = []*mesos.Resource_ReservationInfo{{Type: mesos.Resource_ReservationInfo_STATIC.Enum(), Role: proto.String(role)}}
		}
		return r
	}
	running := mesos.TaskState_TASK_RUNNING
	task := &mesos.Task{
		Name: proto.String("t"), TaskId: &mesos.TaskID{Value: proto.String("t1")},
		FrameworkId: &mesos.FrameworkID{Value: proto.String("F1")}, AgentId: &mesos.AgentID{Value: proto.String("S1")},
		State: &running, Resources: []*mesos.Resource{cpus(1, "")},
		Statuses: []*mesos.TaskStatus{{TaskId: &mesos.TaskID{Value: proto.String("t1")}, State: &running, Timestamp: proto.Float64(12.5)}},
	}
	fw := &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String("F1")}, Name: proto.String("fw"), User: proto.String("u"),
		Capabilities: []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()}}, Roles: []string{"a"}}
	v := &StateView{
		ID: "S1", PID: "slave(1)@1.2.3.4:5051", Hostname: "h",
		Resources:  []*mesos.Resource{cpus(4, ""), cpus(2, "web")},
		Attributes: []*mesos.Attribute{{Name: proto.String("rack"), Type: mesos.Value_TEXT.Enum(), Text: &mesos.Value_Text{Value: proto.String("r1")}}},
		Frameworks: []FrameworkView{{Info: fw, Executors: []ExecutorView{{
			Info:        &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("e1")}, Resources: []*mesos.Resource{cpus(0.5, "")}},
			ContainerID: "c1", Directory: "/d", Tasks: []*mesos.Task{task},
		}}}},
	}
	b, err := json.Marshal(renderState(v))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(b, &got)
	if got["resources"].(map[string]any)["cpus"] != 6.0 || got["unreserved_resources"].(map[string]any)["cpus"] != 4.0 ||
		got["reserved_resources"].(map[string]any)["web"].(map[string]any)["cpus"] != 2.0 {
		t.Errorf("resources: %s", b)
	}
	f := got["frameworks"].([]any)[0].(map[string]any)
	if f["roles"].([]any)[0] != "a" || f["capabilities"].([]any)[0] != "MULTI_ROLE" {
		t.Errorf("framework: %v", f)
	}
	e := f["executors"].([]any)[0].(map[string]any)
	if e["container"] != "c1" || e["directory"] != "/d" || e["resources"].(map[string]any)["cpus"] != 1.5 {
		t.Errorf("executor: %v", e)
	}
	tj := e["tasks"].([]any)[0].(map[string]any)
	if tj["state"] != "TASK_RUNNING" || tj["executor_id"] != "" || tj["statuses"].([]any)[0].(map[string]any)["timestamp"] != 12.5 {
		t.Errorf("task: %v", tj)
	}
}

func FuzzExecutorCall(f *testing.F) {
	c := baseCall(executorpb.Call_UPDATE)
	c.Update = &executorpb.Call_Update{Status: status(mesos.TaskState_TASK_RUNNING)}
	pb, _ := proto.Marshal(c)
	f.Add(pb, false)
	f.Add([]byte(`{"type":"SUBSCRIBE","framework_id":{"value":"f"},"executor_id":{"value":"e"},"subscribe":{}}`), true)
	f.Add([]byte(`{"type":"UPDATE"}`), true)
	h := New(&fakeBackend{}, nil, nil, nil)
	f.Fuzz(func(t *testing.T, body []byte, json bool) {
		ct := "application/x-protobuf"
		if json {
			ct = "application/json"
		}
		w := post(h, "/api/v1/executor", ct, "", body)
		if w.Code == 500 {
			t.Fatalf("500 for %q: %s", body, w.Body)
		}
	})
}

// The agent serves /metrics (Prometheus, with its identity and the Go
// collectors) and /flags, also under /slave(1)/.
func TestPrometheusAndFlags(t *testing.T) {
	h := New(&fakeBackend{view: &StateView{ID: "S1", Hostname: "h1", Flags: map[string]string{"port": "5051"}}}, nil, nil, nil)
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	for _, path := range []string{"/metrics", "/slave(1)/metrics"} {
		w := get(path)
		body := w.Body.String()
		for _, want := range []string{"mezzo_agent_registered 1\n", `mezzo_agent_info{agent_id="S1",hostname="h1",version=`, "go_goroutines "} {
			if w.Code != 200 || !strings.Contains(body, want) {
				t.Errorf("%s: %d, lacks %q:\n%s", path, w.Code, want, body)
			}
		}
	}
	for _, path := range []string{"/flags", "/slave(1)/flags"} {
		if w := get(path); w.Code != 200 || w.Body.String() != `{"flags":{"port":"5051"}}` {
			t.Errorf("%s: %d %s", path, w.Code, w.Body)
		}
	}
}
