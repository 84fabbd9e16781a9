package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/master"
	"mezzo/master/endpoints"
	"mezzo/master/mastertest"
	"mezzo/resources"
)

// realMaster is a real master (loop, allocator, snapshot) behind its real
// HTTP endpoints, with one agent subscribed in-process, so the CLI's
// operation commands are checked against what the master accepts and
// answers, not against a fake's idea of it.
type realMaster struct {
	m     *master.Master
	addr  string
	agent string
}

func startRealMaster(t *testing.T, agentRes string) *realMaster {
	t.Helper()
	m, err := master.New(master.Config{ID: "m1", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	id, _ := mastertest.SubscribeAgent(t, m, agentRes)
	mux := http.NewServeMux()
	endpoints.Register(mux, m, endpoints.Options{})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r := &realMaster{m: m, addr: strings.TrimPrefix(srv.URL, "http://"), agent: id}
	for end := time.Now().Add(10 * time.Second); r.total(t).IsEmpty(); {
		if time.Now().After(end) {
			t.Fatal("the agent never showed in the master's snapshot")
		}
		time.Sleep(time.Millisecond) // polling interval, bounded by the deadline
	}
	return r
}

// total is the agent's total in the master's snapshot.
func (r *realMaster) total(t *testing.T) resources.Resources {
	t.Helper()
	for _, a := range r.m.Snapshot().Agents {
		if a.Info.GetId().GetValue() == r.agent {
			x, err := resources.FromProto(a.Total)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
	}
	return resources.Resources{}
}

// The operator's walk-through with the CLI: reserve in text syntax with a
// principal, create a volume, list it, destroy it, unreserve without
// repeating the principal; the agent's total is what it was.
func TestReserveAndVolumesAgainstRealMaster(t *testing.T) {
	rm := startRealMaster(t, "cpus:4;mem:1024;disk:2000")
	before := rm.total(t)
	e, _ := testEnv()
	master := "--master=" + rm.addr
	agent := "--agent=" + rm.agent
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"reserve", agent, "--principal=ops", "cpus(db):2;disk(db):1024", master},
			"Reserved cpus(db):2 (principal ops); disk(db):1024 (principal ops) on agent m1-S0.\n"},
		{[]string{"volumes", "create", agent, "--role=db", "--id=pg", "--size=512", "--path=data", master},
			"Created volume pg (512MB, role db) on agent m1-S0; tasks see it at <sandbox>/data.\n"},
		{[]string{"volumes", "list", master}, `
AGENT  ROLE  ID  SIZE   PATH  PRINCIPAL  IN USE BY
m1-S0  db    pg  512MB  data  ops        -
`},
		{[]string{"volumes", "grow", agent, "--id=pg", "--size=256", master},
			"Grew volume pg (role db) on agent m1-S0 to 768MB.\n"},
		{[]string{"volumes", "shrink", agent, "--id=pg", "--size=128", master},
			"Shrank volume pg (role db) on agent m1-S0 to 640MB.\n"},
		{[]string{"volumes", "list", master}, `
AGENT  ROLE  ID  SIZE   PATH  PRINCIPAL  IN USE BY
m1-S0  db    pg  640MB  data  ops        -
`},
		{[]string{"volumes", "destroy", agent, "--id=pg", master},
			"Destroyed volume pg (role db) on agent m1-S0; its disk stays reserved for the role.\n"},
		{[]string{"volumes", "list", master}, "\nAGENT  ROLE  ID  SIZE  PATH  PRINCIPAL  IN USE BY\n"},
		{[]string{"unreserve", agent, "cpus(db):2;disk(db):1024", master},
			"Unreserved cpus(db):2 (principal ops); disk(db):1024 (principal ops) on agent m1-S0.\n"},
	}
	for _, s := range steps {
		code, out, errs := run(e, s.args[0], s.args[1:]...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", s.args, code, errs)
		}
		if want := strings.TrimPrefix(s.want, "\n"); out != want {
			t.Fatalf("%v: got\n%s\nwant\n%s", s.args, out, want)
		}
		if s.args[0] == "reserve" {
			if got := rm.total(t).ReservedTo("db"); got.Scalar("cpus") != 2 || got.Scalar("disk") != 1024 {
				t.Fatalf("reserved to db after `mezzo reserve`: %v", got)
			}
		}
	}
	if after := rm.total(t); !after.Equal(before) {
		t.Fatalf("total after the walk-through = %v, want %v", after, before)
	}
}

// JSON resources are sent as given (labels kept); --json prints what was
// sent.
func TestReserveJSON(t *testing.T) {
	rm := startRealMaster(t, "cpus:4;mem:1024")
	e, _ := testEnv()
	res := `[{"name":"mem","type":"SCALAR","scalar":{"value":256},"reservations":[{"type":"DYNAMIC","role":"web","principal":"p","labels":{"labels":[{"key":"k","value":"v"}]}}]}]`
	code, out, errs := run(e, "reserve", "--agent="+rm.agent, res, "--json", "--master="+rm.addr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got operationResult
	var compact bytes.Buffer
	json.Compact(&compact, []byte(out))
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Operation != "RESERVE" || got.AgentID != rm.agent ||
		!strings.Contains(compact.String(), `"labels":{"labels":[{"key":"k","value":"v"}]}`) {
		t.Fatalf("--json output %s (%v)", out, err)
	}
	// Unreserving in text needs the labels: found on the agent.
	if code, _, errs := run(e, "unreserve", "--agent="+rm.agent, "mem(web):256", "--master="+rm.addr); code != 0 {
		t.Fatalf("unreserve: exit %d: %s", code, errs)
	}
	if r := rm.total(t).ReservedTo("web"); !r.IsEmpty() {
		t.Fatalf("still reserved to web: %v", r)
	}
}

// Refusals: usage errors exit 2 before any request; the master's 4xx exits
// 1 with its reason; nothing changes.
func TestOperationCommandErrors(t *testing.T) {
	rm := startRealMaster(t, "cpus:4;mem:1024;disk:2000")
	before := rm.total(t)
	e, _ := testEnv()
	master := "--master=" + rm.addr
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"reserve", "cpus(db):1", master}, 2, "--agent is required"},
		{[]string{"reserve", "--agent=" + rm.agent, "cpus:1", master}, 2, "cpus has no role; write it as cpus(ROLE):1"},
		{[]string{"reserve", "--agent=" + rm.agent, "cpus(db:1", master}, 2, "mismatched parentheses"},
		{[]string{"reserve", "--agent=" + rm.agent, "[{]", master}, 2, "not a JSON array of Resource"},
		{[]string{"reserve", "--agent=nope", "cpus(db):1", master}, 1, "400 Bad Request: No agent found with specified ID 'nope'"},
		{[]string{"reserve", "--agent=" + rm.agent, "cpus(db):64", master}, 1, "409 Conflict"},
		{[]string{"unreserve", "--agent=" + rm.agent, "cpus(db):1", master}, 1, "409 Conflict"},
		{[]string{"volumes", "create", "--agent=" + rm.agent, "--role=db", "--id=x", "--size=10", master}, 1,
			"has no free disk reserved for role db; reserve some first: mezzo reserve --agent=m1-S0 'disk(db):10'"},
		{[]string{"volumes", "create", "--agent=" + rm.agent, "--id=x", "--size=10", master}, 2, "--role is required"},
		{[]string{"volumes", "destroy", "--agent=" + rm.agent, "--id=x", master}, 1, "has no persistent volume \"x\""},
		{[]string{"volumes", "resize", master}, 2, "unknown action \"resize\""},
		{[]string{"volumes", "grow", "--agent=" + rm.agent, "--id=x", master}, 2, "--size (MB to add or remove) must be positive"},
		{[]string{"volumes", "shrink", "--agent=" + rm.agent, "--id=x", "--size=1", master}, 1, "has no persistent volume \"x\""},
	} {
		t.Run(strings.Join(tc.args[:len(tc.args)-1], " "), func(t *testing.T) {
			code, _, errs := run(e, tc.args[0], tc.args[1:]...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d stderr %q, want %d containing %q", code, errs, tc.code, tc.want)
			}
			if after := rm.total(t); !after.Equal(before) {
				t.Fatalf("total changed: %v → %v", before, after)
			}
		})
	}
}

// `volumes list` says which live tasks use each volume (from GET_STATE),
// per agent and role, and filters by --agent and --role.
func TestVolumesListInUse(t *testing.T) {
	vol := func(role, id, path string, size float64) *mesos.Resource {
		return &mesos.Resource{Name: proto.String("disk"), Type: mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(size)},
			Reservations: []*mesos.Resource_ReservationInfo{{Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(),
				Role: proto.String(role), Principal: proto.String("ops")}},
			Disk: &mesos.Resource_DiskInfo{Persistence: &mesos.Resource_DiskInfo_Persistence{Id: proto.String(id), Principal: proto.String("ops")},
				Volume: &mesos.Volume{ContainerPath: proto.String(path), Mode: mesos.Volume_RW.Enum()}}}
	}
	agent := func(id string, rs ...*mesos.Resource) *masterpb.Response_GetAgents_Agent {
		return &masterpb.Response_GetAgents_Agent{AgentInfo: &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String(id)},
			Hostname: proto.String(id + ".example")}, Active: proto.Bool(true), Version: proto.String("1.12.0"), TotalResources: rs}
	}
	tk := func(id, agent string, st mesos.TaskState, rs ...*mesos.Resource) *mesos.Task {
		return &mesos.Task{Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)},
			FrameworkId: &mesos.FrameworkID{Value: proto.String("f")}, AgentId: &mesos.AgentID{Value: proto.String(agent)},
			State: st.Enum(), Resources: rs}
	}
	resp := &masterpb.Response{Type: masterpb.Response_GET_STATE.Enum(), GetState: &masterpb.Response_GetState{
		GetAgents: &masterpb.Response_GetAgents{Agents: []*masterpb.Response_GetAgents_Agent{
			agent("S1", vol("db", "pg", "data", 1024), vol("kafka", "log", "log", 2048)),
			agent("S0", vol("db", "pg", "pgdata", 512)),
		}},
		GetTasks: &masterpb.Response_GetTasks{Tasks: []*mesos.Task{
			tk("writer", "S1", mesos.TaskState_TASK_RUNNING, vol("db", "pg", "data", 1024)),
			tk("reader", "S1", mesos.TaskState_TASK_STAGING, vol("db", "pg", "data", 1024)),
			tk("old", "S1", mesos.TaskState_TASK_FINISHED, vol("kafka", "log", "log", 2048)),
			tk("elsewhere", "S0", mesos.TaskState_TASK_RUNNING),
		}},
	}}
	body, err := codec.Marshal(codec.JSON, resp)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := &masterpb.Call{}
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/api/v1" || codec.Unmarshal(codec.JSON, b, call) != nil || call.GetType() != masterpb.Call_GET_STATE {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	master := "--master=" + strings.TrimPrefix(srv.URL, "http://")
	e, _ := testEnv()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, `
AGENT  ROLE   ID   SIZE   PATH    PRINCIPAL  IN USE BY
S0     db     pg   512MB  pgdata  ops        -
S1     db     pg   1GB    data    ops        reader,writer
S1     kafka  log  2GB    log     ops        -
`},
		{[]string{"list", "--agent=S1", "--role=db"}, `
AGENT  ROLE  ID  SIZE  PATH  PRINCIPAL  IN USE BY
S1     db    pg  1GB   data  ops        reader,writer
`},
	} {
		code, out, errs := run(e, "volumes", append(tc.args, master)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if want := strings.TrimPrefix(tc.want, "\n"); out != want {
			t.Errorf("volumes %v: got\n%s\nwant\n%s", tc.args, out, want)
		}
	}
	code, out, _ := run(e, "volumes", "list", "--json", "--agent=S1", "--role=db", master)
	want := `[{"agent_id":"S1","hostname":"S1.example","role":"db","id":"pg","size":1024,"container_path":"data","principal":"ops","in_use_by":["reader","writer"]}]`
	var got, w any
	json.Unmarshal([]byte(out), &got)
	json.Unmarshal([]byte(want), &w)
	if code != 0 || !jsonEqual(got, w) {
		t.Fatalf("volumes list --json = %s, want %s", out, want)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
