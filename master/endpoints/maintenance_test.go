package endpoints

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"mezzo/api/codec"
	"mezzo/api/maintenancepb"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/master"
)

func (f *fakeSource) UpdateMaintenanceSchedule(_ context.Context, _ master.Principal, s *maintenancepb.Schedule) error {
	return f.write("UpdateMaintenanceSchedule", len(s.GetWindows()))
}

func (f *fakeSource) StartMaintenance(_ context.Context, _ master.Principal, ms []*mesos.MachineID) error {
	return f.write("StartMaintenance", len(ms))
}

func (f *fakeSource) StopMaintenance(_ context.Context, _ master.Principal, ms []*mesos.MachineID) error {
	return f.write("StopMaintenance", len(ms))
}

// The maintenance calls against a real master, over the v1 API and the
// classic endpoints: the agent a1 (10.0.0.2) is scheduled, goes DOWN (it
// leaves the cluster) and comes UP; every refusal is a 400 naming the
// problem.
func TestMaintenanceEndpoints(t *testing.T) {
	m, mux, id := masterWithAgent(t)
	start := testNow.Add(time.Hour).UnixNano()
	sched := `{"windows":[{"machine_ids":[{"hostname":"a1","ip":"10.0.0.2"}],"unavailability":{"start":{"nanoseconds":` +
		jsonInt(start) + `},"duration":{"nanoseconds":3600000000000}}}]}`

	// Refusals first: nothing changes.
	for _, tc := range []struct{ body, want string }{
		{`{"type":"UPDATE_MAINTENANCE_SCHEDULE","update_maintenance_schedule":{"schedule":{"windows":[{"machine_ids":[],"unavailability":{"start":{"nanoseconds":1}}}]}}}`,
			"List of machines in the maintenance window is empty"},
		{`{"type":"UPDATE_MAINTENANCE_SCHEDULE","update_maintenance_schedule":{"schedule":{"windows":[{"machine_ids":[{"hostname":"x"},{"hostname":"X"}],"unavailability":{"start":{"nanoseconds":1}}}]}}}`,
			"appears more than once in the schedule"},
		{`{"type":"START_MAINTENANCE","start_maintenance":{"machines":[{"hostname":"a1","ip":"10.0.0.2"}]}}`,
			"is not part of a maintenance schedule"},
		{`{"type":"STOP_MAINTENANCE","start_maintenance":{},"stop_maintenance":{"machines":[{"hostname":"a1","ip":"10.0.0.2"}]}}`,
			"is not in DOWN mode"},
		{`{"type":"START_MAINTENANCE","start_maintenance":{"machines":[]}}`, "List of machines is empty"},
	} {
		wantStatus(t, v1(mux, tc.body), http.StatusBadRequest, tc.want)
	}
	wantStatus(t, request(t, mux, http.MethodPost, "/master/machine/down", `{"hostname":"a1"}`), http.StatusBadRequest, "JSON array of MachineID")

	// Schedule (v1), read back over both APIs.
	wantStatus(t, v1(mux, `{"type":"UPDATE_MAINTENANCE_SCHEDULE","update_maintenance_schedule":{"schedule":`+sched+`}}`), http.StatusOK, "")
	rec := v1(mux, `{"type":"GET_MAINTENANCE_SCHEDULE"}`)
	resp := &masterpb.Response{}
	if err := codec.Unmarshal(codec.JSON, rec.Body.Bytes(), resp); err != nil || len(resp.GetGetMaintenanceSchedule().GetSchedule().GetWindows()) != 1 {
		t.Fatalf("GET_MAINTENANCE_SCHEDULE: %d %s (%v)", rec.Code, rec.Body, err)
	}
	rec = request(t, mux, http.MethodGet, "/master/maintenance/schedule", "")
	got := &maintenancepb.Schedule{}
	if err := codec.Unmarshal(codec.JSON, rec.Body.Bytes(), got); err != nil || got.GetWindows()[0].GetMachineIds()[0].GetIp() != "10.0.0.2" {
		t.Fatalf("/master/maintenance/schedule: %s (%v)", rec.Body, err)
	}
	rec = request(t, mux, http.MethodGet, "/master/maintenance/status", "")
	st := &maintenancepb.ClusterStatus{}
	if err := codec.Unmarshal(codec.JSON, rec.Body.Bytes(), st); err != nil || len(st.GetDrainingMachines()) != 1 || len(st.GetDownMachines()) != 0 {
		t.Fatalf("status while draining: %s (%v)", rec.Body, err)
	}
	if v := m.Snapshot().Maintenance; v.Agents[id] == nil || v.Agents[id].Mode != mesos.MachineInfo_DRAINING {
		t.Fatalf("agent %s not shown draining: %+v", id, v.Agents)
	}

	// DOWN (classic): the agent is removed; UP (v1) clears the schedule.
	wantStatus(t, request(t, mux, http.MethodPost, "/master/machine/down", `[{"hostname":"a1","ip":"10.0.0.2"}]`), http.StatusOK, "")
	if inSnapshot(m.Snapshot(), id) {
		t.Fatal("agent on a DOWN machine still registered")
	}
	wantStatus(t, v1(mux, `{"type":"UPDATE_MAINTENANCE_SCHEDULE","update_maintenance_schedule":{"schedule":{}}}`),
		http.StatusBadRequest, "is deactivated and cannot be removed from the schedule")
	rec = v1(mux, `{"type":"GET_MAINTENANCE_STATUS"}`)
	if err := codec.Unmarshal(codec.JSON, rec.Body.Bytes(), resp); err != nil || len(resp.GetGetMaintenanceStatus().GetStatus().GetDownMachines()) != 1 {
		t.Fatalf("GET_MAINTENANCE_STATUS after down: %s (%v)", rec.Body, err)
	}
	wantStatus(t, v1(mux, `{"type":"STOP_MAINTENANCE","stop_maintenance":{"machines":[{"hostname":"a1","ip":"10.0.0.2"}]}}`), http.StatusOK, "")
	wantStatus(t, request(t, mux, http.MethodGet, "/master/maintenance/schedule", ""), http.StatusOK, "{}")
	wantStatus(t, request(t, mux, http.MethodGet, "/master/machine/up", ""), http.StatusMethodNotAllowed, "POST")
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// No maintenance call answers 501.
func TestMaintenanceCallsImplemented(t *testing.T) {
	_, mux, _ := masterWithAgent(t)
	for _, body := range []string{
		`{"type":"GET_MAINTENANCE_SCHEDULE"}`, `{"type":"GET_MAINTENANCE_STATUS"}`,
		`{"type":"UPDATE_MAINTENANCE_SCHEDULE","update_maintenance_schedule":{"schedule":{}}}`,
		`{"type":"START_MAINTENANCE","start_maintenance":{"machines":[{"hostname":"zz"}]}}`,
		`{"type":"STOP_MAINTENANCE","stop_maintenance":{"machines":[{"hostname":"zz"}]}}`,
	} {
		if rec := v1(mux, body); rec.Code == http.StatusNotImplemented || rec.Code >= 500 {
			t.Errorf("%s answered %d %s", body, rec.Code, rec.Body)
		}
	}
}

// maintenanceValidator is a Source whose maintenance writes run the
// master's validators and apply nothing, so fuzzing reaches them without a
// running master.
type maintenanceValidator struct{ *fakeSource }

func (maintenanceValidator) UpdateMaintenanceSchedule(_ context.Context, _ master.Principal, s *maintenancepb.Schedule) error {
	return master.ValidateSchedule(s, nil, "schedule")
}

func (maintenanceValidator) StartMaintenance(_ context.Context, _ master.Principal, ms []*mesos.MachineID) error {
	return master.ValidateMachines(ms, "machines")
}

func (maintenanceValidator) StopMaintenance(_ context.Context, _ master.Principal, ms []*mesos.MachineID) error {
	return master.ValidateMachines(ms, "machines")
}

// FuzzMaintenanceBodies feeds arbitrary bodies to POST
// /master/maintenance/schedule and /master/machine/down: never a panic,
// only 200 or 400.
func FuzzMaintenanceBodies(f *testing.F) {
	for _, seed := range []string{
		`{"windows":[{"machine_ids":[{"hostname":"a"}],"unavailability":{"start":{"nanoseconds":1}}}]}`,
		`{"windows":[{"machine_ids":[{"ip":"10.0.0.1"},{"ip":"10.0.0.1"}],"unavailability":{"start":{"nanoseconds":1},"duration":{"nanoseconds":-5}}}]}`,
		`{"windows":[{"machine_ids":[],"unavailability":{}}]}`, `{"windows":[null]}`, `{}`, `[]`, ``, `null`,
		`[{"hostname":"a"},{"ip":"::1"}]`, `[{"ip":"300.1.1.1"}]`, `[{}]`, `[null]`,
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	mux := http.NewServeMux()
	Register(mux, maintenanceValidator{newFakeSource(testSnapshot())}, Options{})
	f.Fuzz(func(t *testing.T, body string, sched bool) {
		path := "/master/machine/down"
		if sched {
			path = "/master/maintenance/schedule"
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}
