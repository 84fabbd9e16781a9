package httpapi

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/agent/files"
	"mezzo/api/agentpb"
	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/internal/loglevel"
)

func task(id string, st mesos.TaskState) *mesos.Task {
	return &mesos.Task{
		Name:        proto.String(id),
		TaskId:      &mesos.TaskID{Value: proto.String(id)},
		FrameworkId: &mesos.FrameworkID{Value: proto.String("F1")},
		AgentId:     &mesos.AgentID{Value: proto.String("S1")},
		State:       st.Enum(),
	}
}

func execInfo(id string) *mesos.ExecutorInfo {
	return &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String(id)}}
}

// operatorFixture is an agent with one live framework (a running executor
// with a queued, a running, a terminated and a completed task, and a
// completed executor) and one completed framework, and a sandbox with a
// file in it.
func operatorFixture(t *testing.T) (*Handler, *clock.Fake, *slog.LevelVar) {
	t.Helper()
	view := &StateView{
		Version:   "1.12.0-test",
		BuildUser: "tester",
		BuildTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		ID:        "S1",
		Hostname:  "host1",
		Port:      5051,
		Flags:     map[string]string{"work_dir": "/w", "port": "5051"},
		Frameworks: []FrameworkView{{
			Info: &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String("F1")}, Name: proto.String("fw"), User: proto.String("u")},
			Executors: []ExecutorView{{
				Info:            execInfo("E1"),
				Queued:          []*mesos.Task{task("queued", mesos.TaskState_TASK_STAGING)},
				Tasks:           []*mesos.Task{task("running", mesos.TaskState_TASK_RUNNING)},
				TerminatedTasks: []*mesos.Task{task("terminated", mesos.TaskState_TASK_FAILED)},
				CompletedTasks:  []*mesos.Task{task("completed", mesos.TaskState_TASK_FINISHED)},
			}},
			CompletedExecutors: []ExecutorView{{Info: execInfo("E0"), CompletedTasks: []*mesos.Task{task("old", mesos.TaskState_TASK_KILLED)}}},
		}},
		CompletedFrameworks: []FrameworkView{{
			Info:      &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String("F0")}, Name: proto.String("gone"), User: proto.String("u")},
			Executors: []ExecutorView{{Info: execInfo("E9"), CompletedTasks: []*mesos.Task{task("ancient", mesos.TaskState_TASK_LOST)}}},
		}},
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stdout"), []byte("hello sandbox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	fh := files.New()
	fh.Attach("/sandbox", dir)
	fc := clock.NewFake(time.Unix(1000, 0))
	var lv slog.LevelVar
	return New(&fakeBackend{view: view}, fh, nil, loglevel.New(&lv, fc)), fc, &lv
}

// operatorCall posts c in mt (and accepts mt) and decodes the response.
func operatorCall(t *testing.T, h *Handler, mt codec.MediaType, c *agentpb.Call) (int, *agentpb.Response, string) {
	t.Helper()
	body, err := codec.Marshal(mt, c)
	if err != nil {
		t.Fatal(err)
	}
	w := post(h, "/api/v1", string(mt), string(mt), body)
	if w.Code != 200 || w.Body.Len() == 0 {
		return w.Code, nil, w.Body.String()
	}
	if got := w.Header().Get("Content-Type"); got != string(mt) {
		t.Errorf("%s: Content-Type %q, want %q", c.GetType(), got, mt)
	}
	resp := &agentpb.Response{}
	if err := codec.Unmarshal(mt, w.Body.Bytes(), resp); err != nil {
		t.Fatalf("%s: decoding %s: %v", c.GetType(), w.Body, err)
	}
	return w.Code, resp, ""
}

func taskIDs(ts []*mesos.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.GetTaskId().GetValue())
	}
	return out
}

func TestOperatorReadCalls(t *testing.T) {
	h, _, _ := operatorFixture(t)
	typ := func(tp agentpb.Call_Type) *agentpb.Call { return &agentpb.Call{Type: tp.Enum()} }
	tests := []struct {
		name  string
		call  *agentpb.Call
		check func(t *testing.T, r *agentpb.Response)
	}{
		{"flags", typ(agentpb.Call_GET_FLAGS), func(t *testing.T, r *agentpb.Response) {
			fs := r.GetGetFlags().GetFlags()
			if len(fs) != 2 || fs[0].GetName() != "port" || fs[1].GetName() != "work_dir" || fs[1].GetValue() != "/w" {
				t.Errorf("flags %v", fs)
			}
		}},
		{"version", typ(agentpb.Call_GET_VERSION), func(t *testing.T, r *agentpb.Response) {
			v := r.GetGetVersion().GetVersionInfo()
			if v.GetVersion() != "1.12.0-test" || v.GetBuildDate() != "2026-01-02 03:04:05" || v.GetBuildUser() != "tester" {
				t.Errorf("version %v", v)
			}
		}},
		{"agent", typ(agentpb.Call_GET_AGENT), func(t *testing.T, r *agentpb.Response) {
			a := r.GetGetAgent().GetAgentInfo()
			if a.GetId().GetValue() != "S1" || a.GetHostname() != "host1" || a.GetPort() != 5051 {
				t.Errorf("agent %v", a)
			}
		}},
		{"frameworks", typ(agentpb.Call_GET_FRAMEWORKS), func(t *testing.T, r *agentpb.Response) {
			f := r.GetGetFrameworks()
			if len(f.GetFrameworks()) != 1 || f.GetFrameworks()[0].GetFrameworkInfo().GetName() != "fw" ||
				len(f.GetCompletedFrameworks()) != 1 || f.GetCompletedFrameworks()[0].GetFrameworkInfo().GetName() != "gone" {
				t.Errorf("frameworks %v", f)
			}
		}},
		{"executors", typ(agentpb.Call_GET_EXECUTORS), func(t *testing.T, r *agentpb.Response) {
			e := r.GetGetExecutors()
			if len(e.GetExecutors()) != 1 || e.GetExecutors()[0].GetExecutorInfo().GetExecutorId().GetValue() != "E1" ||
				len(e.GetCompletedExecutors()) != 2 {
				t.Errorf("executors %v", e)
			}
		}},
		{"tasks", typ(agentpb.Call_GET_TASKS), func(t *testing.T, r *agentpb.Response) {
			checkTasks(t, r.GetGetTasks())
		}},
		{"state", typ(agentpb.Call_GET_STATE), func(t *testing.T, r *agentpb.Response) {
			s := r.GetGetState()
			checkTasks(t, s.GetGetTasks())
			if len(s.GetGetFrameworks().GetFrameworks()) != 1 || len(s.GetGetExecutors().GetExecutors()) != 1 {
				t.Errorf("state %v", s)
			}
		}},
		{"metrics", &agentpb.Call{Type: agentpb.Call_GET_METRICS.Enum(), GetMetrics: &agentpb.Call_GetMetrics{}}, func(t *testing.T, r *agentpb.Response) {
			m := r.GetGetMetrics().GetMetrics()
			if len(m) != 1 || m[0].GetName() != "slave/registered" || m[0].GetValue() != 1 {
				t.Errorf("metrics %v", m)
			}
		}},
		{"operations: none is ever pending on the agent", typ(agentpb.Call_GET_OPERATIONS), func(t *testing.T, r *agentpb.Response) {
			if r.GetType() != agentpb.Response_GET_OPERATIONS || r.GetOperations == nil || len(r.GetGetOperations().GetOperations()) != 0 {
				t.Errorf("operations %v", r)
			}
		}},
		{"health", typ(agentpb.Call_GET_HEALTH), func(t *testing.T, r *agentpb.Response) {
			if !r.GetGetHealth().GetHealthy() {
				t.Errorf("health %v", r)
			}
		}},
		{"list files", &agentpb.Call{Type: agentpb.Call_LIST_FILES.Enum(), ListFiles: &agentpb.Call_ListFiles{Path: proto.String("/sandbox")}}, func(t *testing.T, r *agentpb.Response) {
			fi := r.GetListFiles().GetFileInfos()
			if len(fi) != 2 || fi[0].GetPath() != "/sandbox/stdout" || fi[0].GetSize() != 14 || fi[0].GetMode()&0o777 != 0o644 ||
				fi[1].GetPath() != "/sandbox/sub" || fi[1].GetMode()&0o170000 != 0o040000 || fi[0].GetMtime().GetNanoseconds() == 0 {
				t.Errorf("file infos %v", fi)
			}
		}},
		{"read file", &agentpb.Call{Type: agentpb.Call_READ_FILE.Enum(), ReadFile: &agentpb.Call_ReadFile{
			Path: proto.String("/sandbox/stdout"), Offset: proto.Uint64(6), Length: proto.Uint64(7)}}, func(t *testing.T, r *agentpb.Response) {
			if rf := r.GetReadFile(); rf.GetSize() != 14 || string(rf.GetData()) != "sandbox" {
				t.Errorf("read %v", rf)
			}
		}},
		{"read to the end", &agentpb.Call{Type: agentpb.Call_READ_FILE.Enum(), ReadFile: &agentpb.Call_ReadFile{
			Path: proto.String("/sandbox/stdout"), Offset: proto.Uint64(6)}}, func(t *testing.T, r *agentpb.Response) {
			if rf := r.GetReadFile(); string(rf.GetData()) != "sandbox\n" {
				t.Errorf("read %v", rf)
			}
		}},
		{"read past the end", &agentpb.Call{Type: agentpb.Call_READ_FILE.Enum(), ReadFile: &agentpb.Call_ReadFile{
			Path: proto.String("/sandbox/stdout"), Offset: proto.Uint64(100)}}, func(t *testing.T, r *agentpb.Response) {
			if rf := r.GetReadFile(); rf.GetSize() != 14 || len(rf.GetData()) != 0 {
				t.Errorf("read %v", rf)
			}
		}},
	}
	for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
		for _, tt := range tests {
			t.Run(string(mt)+"/"+tt.name, func(t *testing.T) {
				code, resp, body := operatorCall(t, h, mt, tt.call)
				if code != 200 {
					t.Fatalf("%d %s", code, body)
				}
				if want := agentpb.Response_Type(agentpb.Response_Type_value[tt.call.GetType().String()]); resp.GetType() != want {
					t.Errorf("response type %v, want %v", resp.GetType(), want)
				}
				tt.check(t, resp)
			})
		}
	}
}

func checkTasks(t *testing.T, g *agentpb.Response_GetTasks) {
	t.Helper()
	got := map[string][]string{
		"queued":     taskIDs(g.GetQueuedTasks()),
		"launched":   taskIDs(g.GetLaunchedTasks()),
		"terminated": taskIDs(g.GetTerminatedTasks()),
		"completed":  taskIDs(g.GetCompletedTasks()),
		"pending":    taskIDs(g.GetPendingTasks()),
	}
	want := map[string][]string{
		"queued":     {"queued"},
		"launched":   {"running"},
		"terminated": {"terminated"},
		"completed":  {"completed", "old", "ancient"},
		"pending":    nil,
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("tasks %s, want %s", gj, wj)
	}
}

// Refusals name what is wrong and use Mesos's statuses.
func TestOperatorRefusals(t *testing.T) {
	h, _, _ := operatorFixture(t)
	tests := []struct {
		name string
		call *agentpb.Call
		code int
		body string
	}{
		{"list without list_files", &agentpb.Call{Type: agentpb.Call_LIST_FILES.Enum()}, 400, "Expecting 'list_files' to be present"},
		{"read without read_file", &agentpb.Call{Type: agentpb.Call_READ_FILE.Enum()}, 400, "Expecting 'read_file' to be present"},
		{"set without set_logging_level", &agentpb.Call{Type: agentpb.Call_SET_LOGGING_LEVEL.Enum()}, 400, "Expecting 'set_logging_level' to be present"},
		{"list unknown path", &agentpb.Call{Type: agentpb.Call_LIST_FILES.Enum(), ListFiles: &agentpb.Call_ListFiles{Path: proto.String("/nowhere")}}, 404, "'/nowhere'"},
		{"read missing file", &agentpb.Call{Type: agentpb.Call_READ_FILE.Enum(), ReadFile: &agentpb.Call_ReadFile{Path: proto.String("/sandbox/nope"), Offset: proto.Uint64(0)}}, 404, "'/sandbox/nope'"},
		{"read a folder", &agentpb.Call{Type: agentpb.Call_READ_FILE.Enum(), ReadFile: &agentpb.Call_ReadFile{Path: proto.String("/sandbox/sub"), Offset: proto.Uint64(0)}}, 400, "Cannot read a directory"},
		{"read escaping", &agentpb.Call{Type: agentpb.Call_READ_FILE.Enum(), ReadFile: &agentpb.Call_ReadFile{Path: proto.String("/sandbox/../../etc/passwd"), Offset: proto.Uint64(0)}}, 400, "inaccessible"},
		{"logging level too high", &agentpb.Call{Type: agentpb.Call_SET_LOGGING_LEVEL.Enum(), SetLoggingLevel: &agentpb.Call_SetLoggingLevel{
			Level: proto.Uint32(99), Duration: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(time.Minute))}}}, 400, "'level'"},
		{"nested containers", &agentpb.Call{Type: agentpb.Call_LAUNCH_NESTED_CONTAINER.Enum()}, 501, "LAUNCH_NESTED_CONTAINER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := operatorCall(t, h, codec.JSON, tt.call)
			if code != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("%d %q, want %d containing %q", code, body, tt.code, tt.body)
			}
		})
	}
}

// SET_LOGGING_LEVEL raises the level for its duration, GET_LOGGING_LEVEL
// reports it, and the level falls back when the duration ends.
func TestOperatorLoggingLevel(t *testing.T) {
	h, fc, lv := operatorFixture(t)
	get := func() uint32 {
		_, r, body := operatorCall(t, h, codec.Protobuf, &agentpb.Call{Type: agentpb.Call_GET_LOGGING_LEVEL.Enum()})
		if r == nil {
			t.Fatalf("GET_LOGGING_LEVEL: %s", body)
		}
		return r.GetGetLoggingLevel().GetLevel()
	}
	if v := get(); v != 0 {
		t.Fatalf("initial level %d", v)
	}
	code, _, body := operatorCall(t, h, codec.JSON, &agentpb.Call{Type: agentpb.Call_SET_LOGGING_LEVEL.Enum(), SetLoggingLevel: &agentpb.Call_SetLoggingLevel{
		Level: proto.Uint32(1), Duration: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(time.Minute))}}})
	if code != 200 {
		t.Fatalf("SET_LOGGING_LEVEL: %d %s", code, body)
	}
	if v := get(); v != 1 || lv.Level() != slog.LevelDebug {
		t.Fatalf("after SET: level %d, slog %v", v, lv.Level())
	}
	fc.Advance(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for get() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("level did not revert after the duration")
		}
		time.Sleep(time.Millisecond)
	}
	if lv.Level() != slog.LevelInfo {
		t.Errorf("slog level %v after revert", lv.Level())
	}
}
