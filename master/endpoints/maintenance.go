package endpoints

import (
	"encoding/json"
	"fmt"
	"net/http"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/maintenancepb"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/internal/authorizer"
	"mezzo/master"
)

// Maintenance endpoints: the v1 operator calls UPDATE_MAINTENANCE_SCHEDULE,
// GET_MAINTENANCE_SCHEDULE, GET_MAINTENANCE_STATUS, START_MAINTENANCE and
// STOP_MAINTENANCE, and the classic /master/maintenance/schedule (GET,
// POST), /master/maintenance/status (GET), /master/machine/down and
// /master/machine/up (POST, a JSON array of MachineID). Writes answer 200
// with an empty body, or the master's refusal (400 naming the field).

// maintenanceCall answers the v1 maintenance calls; false if c is not one.
func (h *handlers) maintenanceCall(w http.ResponseWriter, r *http.Request, c *masterpb.Call, s *master.Snapshot, mt codec.MediaType) bool {
	switch c.GetType() {
	case masterpb.Call_GET_MAINTENANCE_SCHEDULE:
		if !h.allow(w, r, authorizer.GetMaintenanceSchedule, authorizer.AnyObject) {
			return true
		}
		h.writeMessage(w, mt, &masterpb.Response{
			Type: masterpb.Response_GET_MAINTENANCE_SCHEDULE.Enum(),
			GetMaintenanceSchedule: &masterpb.Response_GetMaintenanceSchedule{
				Schedule: maintenanceOf(s).Schedule},
		})
	case masterpb.Call_GET_MAINTENANCE_STATUS:
		if !h.allow(w, r, authorizer.GetMaintenanceStatus, authorizer.AnyObject) {
			return true
		}
		h.writeMessage(w, mt, &masterpb.Response{
			Type: masterpb.Response_GET_MAINTENANCE_STATUS.Enum(),
			GetMaintenanceStatus: &masterpb.Response_GetMaintenanceStatus{
				Status: maintenanceOf(s).Status},
		})
	case masterpb.Call_UPDATE_MAINTENANCE_SCHEDULE:
		h.writeEmptyOr(w, h.src.UpdateMaintenanceSchedule(r.Context(), principal(r), c.GetUpdateMaintenanceSchedule().GetSchedule()))
	case masterpb.Call_START_MAINTENANCE:
		h.writeEmptyOr(w, h.src.StartMaintenance(r.Context(), principal(r), c.GetStartMaintenance().GetMachines()))
	case masterpb.Call_STOP_MAINTENANCE:
		h.writeEmptyOr(w, h.src.StopMaintenance(r.Context(), principal(r), c.GetStopMaintenance().GetMachines()))
	default:
		return false
	}
	return true
}

// maintenanceOf is the snapshot's maintenance, empty if it has none.
func maintenanceOf(s *master.Snapshot) *master.MaintenanceView {
	if s.Maintenance != nil {
		return s.Maintenance
	}
	return &master.MaintenanceView{Schedule: &maintenancepb.Schedule{}, Status: &maintenancepb.ClusterStatus{}}
}

// maintenanceSchedule serves /master/maintenance/schedule: GET renders the
// schedule as JSON; POST replaces it with the JSON Schedule in the body.
func (h *handlers) maintenanceSchedule(w http.ResponseWriter, r *http.Request) {
	s := h.snapshot()
	if !s.Elected {
		redirectToLeader(w, r, s)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if !h.allow(w, r, authorizer.GetMaintenanceSchedule, authorizer.AnyObject) {
			return
		}
		h.writeProtoJSON(w, r, maintenanceOf(s).Schedule)
	case http.MethodPost:
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		sched := &maintenancepb.Schedule{}
		if err := codec.Unmarshal(codec.JSON, body, sched); err != nil {
			writeText(w, http.StatusBadRequest, "Failed to convert JSON into a Schedule protobuf: "+err.Error())
			return
		}
		h.writeEmptyOr(w, h.src.UpdateMaintenanceSchedule(r.Context(), principal(r), sched))
	default:
		w.Header().Set("Allow", "GET, POST")
		writeText(w, http.StatusMethodNotAllowed, "Expecting one of { 'GET', 'POST' }, but received '"+r.Method+"'")
	}
}

// maintenanceStatus serves GET /master/maintenance/status.
func (h *handlers) maintenanceStatus(w http.ResponseWriter, r *http.Request) {
	s := h.snapshot()
	if !s.Elected {
		redirectToLeader(w, r, s)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		writeText(w, http.StatusMethodNotAllowed, "Expecting one of { 'GET' }, but received '"+r.Method+"'")
		return
	}
	if !h.allow(w, r, authorizer.GetMaintenanceStatus, authorizer.AnyObject) {
		return
	}
	h.writeProtoJSON(w, r, maintenanceOf(s).Status)
}

// machines serves POST /master/machine/down (up false) and
// /master/machine/up: the body is a JSON array of MachineID.
func (h *handlers) machines(up bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, ok := h.leaderPostBody(w, r)
		if !ok {
			return
		}
		ids, err := parseMachineIDs(body)
		if err != nil {
			writeText(w, http.StatusBadRequest, err.Error())
			return
		}
		if up {
			h.writeEmptyOr(w, h.src.StopMaintenance(r.Context(), principal(r), ids))
		} else {
			h.writeEmptyOr(w, h.src.StartMaintenance(r.Context(), principal(r), ids))
		}
	}
}

// parseMachineIDs decodes a JSON array of MachineID.
func parseMachineIDs(body []byte) ([]*mesos.MachineID, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("Failed to parse the list of machines (expecting a JSON array of MachineID): %v", err)
	}
	ids := make([]*mesos.MachineID, len(raw))
	for i, x := range raw {
		ids[i] = &mesos.MachineID{}
		if err := codec.Unmarshal(codec.JSON, x, ids[i]); err != nil {
			return nil, fmt.Errorf("Failed to convert machines[%d] to a MachineID: %v", i, err)
		}
	}
	return ids, nil
}

// writeProtoJSON answers 200 with m rendered as JSON.
func (h *handlers) writeProtoJSON(w http.ResponseWriter, r *http.Request, m proto.Message) {
	b, err := codec.Marshal(codec.JSON, m)
	if err != nil {
		writeText(w, http.StatusInternalServerError, "Failed to render JSON: "+err.Error())
		return
	}
	h.writeJSON(w, r, json.RawMessage(b))
}
