package endpoints

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/internal/authorizer"
	"mezzo/internal/opapi"
	"mezzo/master"
)

// maxCallBody bounds an operator call body; the largest legitimate calls
// (maintenance schedules, quota) are far smaller.
const maxCallBody = 16 << 20

// requiredSubMessage names the sub-message each call type must carry, as
// Mesos's validation::master::call::validate requires. Types not listed
// need none.
var requiredSubMessage = map[masterpb.Call_Type]protoreflect.Name{
	masterpb.Call_GET_METRICS:                 "get_metrics",
	masterpb.Call_SET_LOGGING_LEVEL:           "set_logging_level",
	masterpb.Call_LIST_FILES:                  "list_files",
	masterpb.Call_READ_FILE:                   "read_file",
	masterpb.Call_UPDATE_WEIGHTS:              "update_weights",
	masterpb.Call_RESERVE_RESOURCES:           "reserve_resources",
	masterpb.Call_UNRESERVE_RESOURCES:         "unreserve_resources",
	masterpb.Call_CREATE_VOLUMES:              "create_volumes",
	masterpb.Call_DESTROY_VOLUMES:             "destroy_volumes",
	masterpb.Call_GROW_VOLUME:                 "grow_volume",
	masterpb.Call_SHRINK_VOLUME:               "shrink_volume",
	masterpb.Call_UPDATE_MAINTENANCE_SCHEDULE: "update_maintenance_schedule",
	masterpb.Call_START_MAINTENANCE:           "start_maintenance",
	masterpb.Call_STOP_MAINTENANCE:            "stop_maintenance",
	masterpb.Call_DRAIN_AGENT:                 "drain_agent",
	masterpb.Call_DEACTIVATE_AGENT:            "deactivate_agent",
	masterpb.Call_REACTIVATE_AGENT:            "reactivate_agent",
	masterpb.Call_UPDATE_QUOTA:                "update_quota",
	masterpb.Call_SET_QUOTA:                   "set_quota",
	masterpb.Call_REMOVE_QUOTA:                "remove_quota",
	masterpb.Call_TEARDOWN:                    "teardown",
	masterpb.Call_MARK_AGENT_GONE:             "mark_agent_gone",
}

// validateCall checks what Mesos checks before dispatching a master::Call;
// the error names the missing field.
func validateCall(c *masterpb.Call) error {
	if c.Type == nil {
		return errors.New("Expecting 'type' to be present")
	}
	if name, ok := requiredSubMessage[c.GetType()]; ok {
		return opapi.RequirePresent(c, name)
	}
	return nil
}

// operator serves POST /api/v1 (and /master/api/v1), the v1 operator API.
// Checks run in Mesos's order: leadership (307 to the leader, 503 without
// one), method (405), Content-Type (400/415), body (400), validation (400),
// Accept (406); then the call.
func (h *handlers) operator(w http.ResponseWriter, r *http.Request) {
	s := h.snapshot()
	if !s.Elected {
		redirectToLeader(w, r, s)
		return
	}
	if !requirePost(w, r) {
		return
	}
	reqType, code, err := codec.RequestType(r)
	if err != nil {
		writeText(w, code, err.Error())
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	call := &masterpb.Call{}
	if err := codec.Unmarshal(reqType, body, call); err != nil {
		msg := "Failed to parse body into Call protobuf: "
		if reqType == codec.JSON {
			msg = "Failed to convert JSON into Call protobuf: "
		}
		writeText(w, http.StatusBadRequest, msg+err.Error())
		return
	}
	if err := validateCall(call); err != nil {
		writeText(w, http.StatusBadRequest, "Failed to validate master::Call: "+err.Error())
		return
	}
	respType, err := codec.ResponseType(r)
	if err != nil {
		writeText(w, http.StatusNotAcceptable, err.Error())
		return
	}
	if action, obj, ok := readAction(call.GetType()); ok && !h.allow(w, r, action, obj) {
		return
	}
	s = h.viewer(r).Filter(s) // every answer below shows only what the caller may view

	switch call.GetType() {
	case masterpb.Call_SUBSCRIBE:
		h.subscribe(w, r, respType)
		return
	case masterpb.Call_TEARDOWN:
		h.teardownFramework(w, r, call.GetTeardown().GetFrameworkId().GetValue())
		return
	case masterpb.Call_UPDATE_WEIGHTS, masterpb.Call_UPDATE_QUOTA, masterpb.Call_SET_QUOTA, masterpb.Call_REMOVE_QUOTA:
		h.roleWriteCall(w, r, call)
		return
	case masterpb.Call_SET_LOGGING_LEVEL:
		sl := call.GetSetLoggingLevel()
		if status, err := opapi.SetLoggingLevel(h.logging, sl.GetLevel(), sl.GetDuration()); err != nil {
			writeText(w, status, err.Error())
			return
		}
		opapi.WriteEmpty(w)
		return
	case masterpb.Call_MARK_AGENT_GONE:
		h.markAgentGone(w, r, call.GetMarkAgentGone().GetAgentId().GetValue())
		return
	}
	if h.maintenanceCall(w, r, call, s, respType) {
		return
	}
	if h.drainCall(w, r, call) {
		return
	}
	if agentID, op, ok := operationCall(call); ok {
		h.applyOperation(w, r, agentID, op)
		return
	}
	resp := rolesResponse(call, s)
	if resp == nil {
		resp = h.getResponse(call, s)
	}
	if resp == nil {
		writeText(w, http.StatusNotImplemented,
			fmt.Sprintf("Operator call '%s' is not implemented by this master", call.GetType()))
		return
	}
	h.writeMessage(w, respType, resp)
}

// readAction is the action that governs an operator call's answer as a
// whole, for the calls that are all or nothing (the GET_* calls that
// list things are filtered instead; writes are the master's to
// authorize).
func readAction(t masterpb.Call_Type) (authorizer.Action, authorizer.Object, bool) {
	switch t {
	case masterpb.Call_GET_FLAGS:
		return authorizer.ViewFlags, authorizer.AnyObject, true
	case masterpb.Call_GET_METRICS:
		return authorizer.GetEndpoint, authorizer.Value("/metrics/snapshot"), true
	case masterpb.Call_SET_LOGGING_LEVEL:
		return authorizer.SetLogLevel, authorizer.AnyObject, true
	}
	return "", authorizer.Object{}, false
}

// writeMessage answers 200 with m encoded as mt.
func (h *handlers) writeMessage(w http.ResponseWriter, mt codec.MediaType, m proto.Message) {
	body, err := codec.Marshal(mt, m)
	if err != nil {
		h.log.Error("endpoints: encoding operator response", "err", err)
		writeText(w, http.StatusInternalServerError, "Failed to encode response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", string(mt))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// teardownFramework tears a framework down for the TEARDOWN call and the
// classic /master/teardown form: 400 for an unknown framework, 200 with an
// empty body and no Content-Type on success (mesos-go rejects a 200 with a
// Content-Type for its "no data" calls).
func (h *handlers) teardownFramework(w http.ResponseWriter, r *http.Request, id string) {
	if !hasFramework(h.snapshot(), id) {
		writeText(w, http.StatusBadRequest, "No framework found with specified ID")
		return
	}
	if err := h.src.Teardown(r.Context(), principal(r), id); err != nil {
		// The framework may have gone between the check and the call; an
		// error that knows its HTTP status (master.APIError) decides.
		status := errorStatus(err)
		if !hasFramework(h.snapshot(), id) {
			status = http.StatusBadRequest
		}
		writeText(w, status, "Failed to tear down framework: "+err.Error())
		return
	}
	w.Header().Del("Content-Type")
	w.WriteHeader(http.StatusOK)
}

func hasFramework(s *master.Snapshot, id string) bool {
	for _, f := range s.Frameworks {
		if f.Info.GetId().GetValue() == id {
			return true
		}
	}
	return false
}

// redirectToLeader answers a request to a master that does not lead: 307 to
// the leader with a protocol-relative Location ("//host:port/path?query",
// which mesos-go and browsers resolve), or 503 when no leader is known.
func redirectToLeader(w http.ResponseWriter, r *http.Request, s *master.Snapshot) {
	if s.Leader == nil {
		writeText(w, http.StatusServiceUnavailable, "No leader elected")
		return
	}
	host := s.Leader.GetHostname()
	if host == "" {
		host = leaderIP(s.Leader.GetIp())
	}
	w.Header().Set("Location", "//"+net.JoinHostPort(host, strconv.FormatUint(uint64(s.Leader.GetPort()), 10))+r.URL.RequestURI())
	w.WriteHeader(http.StatusTemporaryRedirect)
}

// leaderIP decodes MasterInfo.ip, which Mesos stores in network byte order
// read as a host (little-endian) integer: the first octet is the low byte.
func leaderIP(ip uint32) string {
	return net.IPv4(byte(ip), byte(ip>>8), byte(ip>>16), byte(ip>>24)).String()
}

// markAgentGone serves MARK_AGENT_GONE: 200 once the registry records the
// agent as gone; it may never re-register under its ID.
func (h *handlers) markAgentGone(w http.ResponseWriter, r *http.Request, agentID string) {
	if agentID == "" {
		writeText(w, http.StatusBadRequest, "Failed to validate master::Call: Expecting 'mark_agent_gone.agent_id' to be present")
		return
	}
	h.writeEmptyOr(w, h.src.MarkAgentGone(r.Context(), principal(r), agentID))
}
