package endpoints

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/master"
	"mezzo/master/mastertest"
	"mezzo/resources"
)

// agentResources is the agent of the operation tests: unreserved cpus, mem
// and disk, and disk statically reserved for "static".
const agentResources = "cpus:4;mem:1024;disk:1000;disk(static):100"

// masterWithAgent starts a real master (loop, allocator, snapshot), has one
// agent subscribe to it in-process with agentResources, and registers the
// endpoints over it. It returns the mux and the agent's ID. The agent's
// event stream is drained in the background (its CHECKPOINT_RESOURCES are
// not looked at here: the agent side has its own tests).
func masterWithAgent(t testing.TB) (*master.Master, *http.ServeMux, string) {
	t.Helper()
	clk := clock.NewFake(testNow)
	m, err := master.New(master.Config{ID: "m1", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test",
		Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	id, st := mastertest.SubscribeAgent(t, m, agentResources)
	// The snapshot is published after the loop's batch: wait for it.
	for end := time.Now().Add(10 * time.Second); !inSnapshot(m.Snapshot(), id); {
		if time.Now().After(end) {
			t.Fatal("the admitted agent never showed in the snapshot")
		}
		time.Sleep(time.Millisecond) // polling interval, bounded by the deadline
	}
	t.Cleanup(st.Close)
	mux := http.NewServeMux()
	Register(mux, m, Options{Version: "1.12.0", Clock: clk})
	return m, mux, id
}

func inSnapshot(s *master.Snapshot, id string) bool {
	for _, a := range s.Agents {
		if a.Info.GetId().GetValue() == id {
			return true
		}
	}
	return false
}

// agentTotal is the agent's total in the master's latest snapshot.
func agentTotal(t testing.TB, m *master.Master, id string) resources.Resources {
	t.Helper()
	for _, a := range m.Snapshot().Agents {
		if a.Info.GetId().GetValue() == id {
			r, err := resources.FromProto(a.Total)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("agent %s not in the snapshot", id)
	return resources.Resources{}
}

// v1 posts an operator call as JSON.
func v1(mux http.Handler, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/api/v1", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return do(mux, req)
}

// form posts a classic form to path.
func form(mux http.Handler, path string, values url.Values) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(values.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(mux, req)
}

const (
	dbCPUs     = `{"name":"cpus","type":"SCALAR","scalar":{"value":1},"reservations":[{"type":"DYNAMIC","role":"db","principal":"ops","labels":{"labels":[{"key":"team","value":"storage"}]}}]}`
	dbDisk     = `{"name":"disk","type":"SCALAR","scalar":{"value":200},"reservations":[{"type":"DYNAMIC","role":"db","principal":"ops"}]}`
	dbVolume   = `{"name":"disk","type":"SCALAR","scalar":{"value":200},"reservations":[{"type":"DYNAMIC","role":"db","principal":"ops"}],"disk":{"persistence":{"id":"v1","principal":"ops"},"volume":{"container_path":"data","mode":"RW"}}}`
	freeVolume = `{"name":"disk","type":"SCALAR","scalar":{"value":10},"disk":{"persistence":{"id":"v2"},"volume":{"container_path":"data","mode":"RW"}}}`
)

func reserveCall(agent, rs string) string {
	return `{"type":"RESERVE_RESOURCES","reserve_resources":{"agent_id":{"value":"` + agent + `"},"resources":[` + rs + `]}}`
}

// The walk-through over the v1 API, then over the classic forms, against a
// real master: each step answers 202 and shows in the agent's total; the
// inverse steps give the original total back.
func TestOperationsApply(t *testing.T) {
	for _, api := range []string{"v1", "classic"} {
		t.Run(api, func(t *testing.T) {
			m, mux, id := masterWithAgent(t)
			before := agentTotal(t, m, id)
			step := func(typ, field, path, rs string) {
				t.Helper()
				var rec *httptest.ResponseRecorder
				if api == "v1" {
					key := strings.ToLower(typ)
					rec = v1(mux, `{"type":"`+typ+`","`+key+`":{"agent_id":{"value":"`+id+`"},"`+field+`":[`+rs+`]}}`)
				} else {
					rec = form(mux, path, url.Values{"slaveId": {id}, field: {"[" + rs + "]"}})
				}
				if rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
					t.Fatalf("%s: %d %q, want an empty 202", typ, rec.Code, rec.Body)
				}
			}
			step("RESERVE_RESOURCES", "resources", "/master/reserve", dbCPUs+","+dbDisk)
			total := agentTotal(t, m, id)
			if got := total.ReservedTo("db"); got.Scalar("cpus") != 1 || got.Scalar("disk") != 200 {
				t.Fatalf("reserved to db after RESERVE: %v", got)
			}
			step("CREATE_VOLUMES", "volumes", "/master/create-volumes", dbVolume)
			if vols := agentTotal(t, m, id).PersistentVolumes().Proto(); len(vols) != 1 ||
				vols[0].GetDisk().GetPersistence().GetId() != "v1" {
				t.Fatalf("volumes after CREATE: %v", vols)
			}
			// /master/slaves shows the volume and the labels in the full form.
			rec := do(mux, httptest.NewRequest(http.MethodGet, "/master/slaves", nil))
			for _, want := range []string{`"persistence":{"id":"v1","principal":"ops"}`, `"key":"team","value":"storage"`} {
				if !strings.Contains(rec.Body.String(), want) {
					t.Fatalf("/master/slaves lacks %s:\n%s", want, rec.Body)
				}
			}
			step("DESTROY_VOLUMES", "volumes", "/master/destroy-volumes", dbVolume)
			step("UNRESERVE_RESOURCES", "resources", "/master/unreserve", dbCPUs+","+dbDisk)
			if after := agentTotal(t, m, id); !after.Equal(before) {
				t.Fatalf("total after the inverse operations = %v, want %v", after, before)
			}
		})
	}
}

// A protobuf body works as JSON does, and the pre-refinement format
// (role + reservation) of old clients is accepted.
func TestOperationsProtobufAndPreRefinement(t *testing.T) {
	m, mux, id := masterWithAgent(t)
	call := &masterpb.Call{Type: masterpb.Call_RESERVE_RESOURCES.Enum(), ReserveResources: &masterpb.Call_ReserveResources{
		AgentId: &mesos.AgentID{Value: proto.String(id)},
		Resources: []*mesos.Resource{{Name: proto.String("mem"), Type: mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(128)}, Role: proto.String("db"),
			Reservation: &mesos.Resource_ReservationInfo{Principal: proto.String("ops")}}},
	}}
	body, err := codec.Marshal(codec.Protobuf, call)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v1", bytes.NewReader(body))
	req.Header.Set("Content-Type", string(codec.Protobuf))
	if rec := do(mux, req); rec.Code != http.StatusAccepted {
		t.Fatalf("protobuf RESERVE: %d %s", rec.Code, rec.Body)
	}
	if got := agentTotal(t, m, id).ReservedTo("db").Scalar("mem"); got != 128 {
		t.Fatalf("mem reserved to db = %v, want 128", got)
	}
	rec := form(mux, "/unreserve", url.Values{"slaveId": {id},
		"resources": {`[{"name":"mem","type":"SCALAR","scalar":{"value":128},"role":"db","reservation":{"principal":"ops"}}]`}})
	if rec.Code != http.StatusAccepted {
		t.Fatalf("pre-refinement /unreserve: %d %s", rec.Code, rec.Body)
	}
}

// Bad requests: a clear 4xx naming the problem, and nothing changes.
func TestOperationsRefused(t *testing.T) {
	m, mux, id := masterWithAgent(t)
	if rec := v1(mux, reserveCall(id, dbDisk)); rec.Code != http.StatusAccepted {
		t.Fatalf("setup RESERVE: %d %s", rec.Code, rec.Body)
	}
	if rec := form(mux, "/master/create-volumes", url.Values{"slaveId": {id}, "volumes": {"[" + dbVolume + "]"}}); rec.Code != http.StatusAccepted {
		t.Fatalf("setup CREATE: %d %s", rec.Code, rec.Body)
	}
	before := m.Snapshot()
	type tc struct {
		name   string
		send   func() *httptest.ResponseRecorder
		status int
		want   string
	}
	classic := func(path string, v url.Values) func() *httptest.ResponseRecorder {
		return func() *httptest.ResponseRecorder { return form(mux, path, v) }
	}
	call := func(body string) func() *httptest.ResponseRecorder {
		return func() *httptest.ResponseRecorder { return v1(mux, body) }
	}
	for _, c := range []tc{
		{"unknown agent", call(reserveCall("nope", dbCPUs)), 400, "No agent found with specified ID 'nope'"},
		{"unknown agent, classic", classic("/master/reserve", url.Values{"slaveId": {"nope"}, "resources": {"[" + dbCPUs + "]"}}),
			400, "No agent found"},
		{"not available", call(reserveCall(id, strings.Replace(dbCPUs, `"value":1`, `"value":100`, 1))), 409, "not available"},
		{"unreserve what is not reserved", classic("/master/unreserve", url.Values{"slaveId": {id},
			"resources": {"[" + strings.Replace(dbCPUs, `"value":1`, `"value":3`, 1) + "]"}}), 409, "not available"},
		{"volume on unreserved disk", call(`{"type":"CREATE_VOLUMES","create_volumes":{"agent_id":{"value":"` + id + `"},"volumes":[` + freeVolume + `]}}`),
			400, "cannot be created from unreserved"},
		{"duplicate persistence ID", classic("/master/create-volumes", url.Values{"slaveId": {id}, "volumes": {"[" + dbVolume + "]"}}),
			400, "is already used on the agent"},
		{"unreserving a volume's disk", call(`{"type":"UNRESERVE_RESOURCES","unreserve_resources":{"agent_id":{"value":"` + id + `"},"resources":[` + dbDisk + `]}}`),
			409, "not available"},
		{"missing slaveId", classic("/master/reserve", url.Values{"resources": {"[]"}}), 400, "Missing 'slaveId'"},
		{"missing resources", classic("/master/reserve", url.Values{"slaveId": {id}}), 400, "Missing 'resources'"},
		{"missing volumes", classic("/master/destroy-volumes", url.Values{"slaveId": {id}, "resources": {"[]"}}), 400, "Missing 'volumes'"},
		{"resources not an array", classic("/master/reserve", url.Values{"slaveId": {id}, "resources": {dbCPUs}}), 400, "expecting a JSON array"},
		{"resource not a Resource", classic("/master/reserve", url.Values{"slaveId": {id}, "resources": {`[{"name":7}]`}}), 400, "element [0]"},
		{"empty reserve", classic("/master/reserve", url.Values{"slaveId": {id}, "resources": {"[]"}}), 400, "must not be empty"},
		{"reserving unreserved (no reservation)", classic("/master/reserve", url.Values{"slaveId": {id},
			"resources": {`[{"name":"cpus","type":"SCALAR","scalar":{"value":1}}]`}}), 400, "Invalid RESERVE operation"},
		{"v1 without sub-message", call(`{"type":"DESTROY_VOLUMES"}`), 400, "Expecting 'destroy_volumes' to be present"},
		{"grow without agent", call(`{"type":"GROW_VOLUME","grow_volume":{"volume":` + dbVolume + `,"addition":` + dbDisk + `}}`),
			400, "agent_id"},
		{"GET on a classic endpoint", func() *httptest.ResponseRecorder {
			return do(mux, httptest.NewRequest(http.MethodGet, "/master/reserve", nil))
		}, 405, "Expecting one of { 'POST' }"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := c.send()
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.want) {
				t.Fatalf("got %d %q, want %d containing %q", rec.Code, rec.Body, c.status, c.want)
			}
			assertUnchanged(t, before, m.Snapshot())
		})
	}
}

// assertUnchanged requires the agents' totals, the roles' reservations and
// the tracked operations of two snapshots to be equal.
func assertUnchanged(t testing.TB, before, after *master.Snapshot) {
	t.Helper()
	if len(before.Agents) != len(after.Agents) {
		t.Fatalf("agents changed: %d → %d", len(before.Agents), len(after.Agents))
	}
	for i, a := range before.Agents {
		b, _ := resources.FromProto(a.Total)
		c, _ := resources.FromProto(after.Agents[i].Total)
		if !b.Equal(c) {
			t.Fatalf("agent %s's total changed: %v → %v", a.Info.GetId().GetValue(), b, c)
		}
	}
	reserved := func(s *master.Snapshot) map[string]string {
		out := map[string]string{}
		for _, r := range s.Roles {
			x, _ := resources.FromProto(r.Reserved)
			out[r.Name] = x.String()
		}
		return out
	}
	if b, a := reserved(before), reserved(after); !equalMaps(b, a) {
		t.Fatalf("roles' reservations changed: %v → %v", b, a)
	}
	if len(before.Operations) != len(after.Operations) {
		t.Fatalf("tracked operations changed: %d → %d", len(before.Operations), len(after.Operations))
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// GET_OPERATIONS on a real master: an operator's operations carry no id
// and are not tracked, so a fresh cluster lists none, in protobuf too.
func TestGetOperationsRealMaster(t *testing.T) {
	_, mux, _ := masterWithAgent(t)
	if rec := v1(mux, reserveCall("m1-S0", dbCPUs)); rec.Code != http.StatusAccepted {
		t.Fatalf("RESERVE: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v1", strings.NewReader(`{"type":"GET_OPERATIONS"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", string(codec.Protobuf))
	rec := do(mux, req)
	got := &masterpb.Response{}
	if rec.Code != http.StatusOK {
		t.Fatalf("GET_OPERATIONS: %d %s", rec.Code, rec.Body)
	}
	if err := codec.Unmarshal(codec.Protobuf, rec.Body.Bytes(), got); err != nil || got.GetType() != masterpb.Response_GET_OPERATIONS ||
		got.GetGetOperations() == nil || len(got.GetGetOperations().GetOperations()) != 0 {
		t.Fatalf("GET_OPERATIONS on a fresh master = %v (%v)", got, err)
	}
}

// No call of this area answers 501 any more.
func TestOperationCallsImplemented(t *testing.T) {
	_, mux, id := masterWithAgent(t)
	for _, typ := range []string{"RESERVE_RESOURCES", "UNRESERVE_RESOURCES", "CREATE_VOLUMES", "DESTROY_VOLUMES", "GROW_VOLUME", "SHRINK_VOLUME"} {
		key := strings.ToLower(typ)
		rec := v1(mux, `{"type":"`+typ+`","`+key+`":{"agent_id":{"value":"`+id+`"}}}`)
		if rec.Code == http.StatusNotImplemented || rec.Code >= 500 {
			t.Errorf("%s answered %d %s", typ, rec.Code, rec.Body)
		}
	}
}

// A follower sends the operation endpoints to the leader (307, the path
// kept) before reading the body, and answers 503 without a leader; it
// applies nothing.
func TestOperationsOnFollower(t *testing.T) {
	snap := testSnapshot()
	snap.Elected = false
	snap.Leader = &mesos.MasterInfo{Hostname: proto.String("leader.example"), Port: proto.Uint32(5050)}
	src := newFakeSource(snap)
	mux, _ := newTestServer(t, src)
	for _, path := range []string{"/master/reserve", "/master/unreserve", "/master/create-volumes", "/master/destroy-volumes"} {
		rec := form(mux, path, url.Values{"slaveId": {"m1-S0"}, "resources": {"[" + dbCPUs + "]"}})
		if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "//leader.example:5050"+path {
			t.Errorf("%s on a follower: %d Location %q", path, rec.Code, rec.Header().Get("Location"))
		}
	}
	if rec := v1(mux, reserveCall("m1-S0", dbCPUs)); rec.Code != http.StatusTemporaryRedirect {
		t.Errorf("RESERVE_RESOURCES on a follower: %d", rec.Code)
	}
	snap.Leader = nil
	if rec := form(mux, "/master/reserve", url.Values{"slaveId": {"m1-S0"}}); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/master/reserve without a leader: %d", rec.Code)
	}
	if len(src.writes) != 0 {
		t.Fatalf("a follower applied %v", src.writes)
	}
}
