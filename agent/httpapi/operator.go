package httpapi

import (
	"errors"
	"net/http"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"mezzo/api/agentpb"
	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/internal/authorizer"
	"mezzo/internal/opapi"
)

// maxOperatorBody bounds an operator call's body.
const maxOperatorBody = 1 << 20

// Files is the sandbox browser behind /files/* and the LIST_FILES and
// READ_FILE calls (package agent/files). Its errors may carry an HTTP
// status (an HTTPStatus() int method); others answer 500.
type Files interface {
	http.Handler
	// List returns the entries of the folder at a virtual path.
	List(path string) ([]*mesos.FileInfo, error)
	// Read returns up to length bytes (negative: to the end) from offset
	// and the file's size.
	Read(path string, offset, length int64) ([]byte, int64, error)
	// OwnerOf says whose the attachment serving a virtual path is (see
	// files.Handler.OwnerOf), for access_sandboxes.
	OwnerOf(path string) (owner authorizer.Object, sandbox, found bool)
}

// requiredSubMessage names the sub-message each agent call must carry, as
// Mesos's validation::agent::call::validate requires; others need none.
var requiredSubMessage = map[agentpb.Call_Type]protoreflect.Name{
	agentpb.Call_GET_METRICS:       "get_metrics",
	agentpb.Call_SET_LOGGING_LEVEL: "set_logging_level",
	agentpb.Call_LIST_FILES:        "list_files",
	agentpb.Call_READ_FILE:         "read_file",
}

// validateCall checks what Mesos checks before dispatching an agent::Call;
// the error names the missing field.
func validateCall(c *agentpb.Call) error {
	if c.Type == nil || c.GetType() == agentpb.Call_UNKNOWN {
		return errors.New("Expecting 'type' to be present")
	}
	if name, ok := requiredSubMessage[c.GetType()]; ok {
		return opapi.RequirePresent(c, name)
	}
	return nil
}

// operator serves the agent's v1 operator API (POST /api/v1): the read
// calls (GET_HEALTH, GET_FLAGS, GET_VERSION, GET_METRICS, GET_LOGGING_LEVEL,
// GET_STATE, GET_FRAMEWORKS, GET_EXECUTORS, GET_TASKS, GET_AGENT,
// GET_CONTAINERS, LIST_FILES, READ_FILE) and SET_LOGGING_LEVEL, in JSON or
// protobuf. Checks run in Mesos's order: method (405), Content-Type
// (400/415), body (400/413), validation (400), Accept (406). Calls this
// agent does not implement (nested containers, resource providers) are 501.
func (h *Handler) operator(w http.ResponseWriter, r *http.Request) {
	mt, ok := postType(w, r)
	if !ok {
		return
	}
	call := &agentpb.Call{}
	if e := decodeCall(r, mt, maxOperatorBody, call); e != nil {
		writeError(w, e)
		return
	}
	if err := validateCall(call); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "Failed to validate agent::Call: %v", err))
		return
	}
	respType, err := codec.ResponseType(r)
	if err != nil {
		writeError(w, Errorf(http.StatusNotAcceptable, "Expecting 'Accept' to allow '%s' or '%s'", codec.JSON, codec.Protobuf))
		return
	}
	if err := h.authorizeCall(r, call); err != nil {
		writeError(w, err)
		return
	}
	if call.GetType() == agentpb.Call_SET_LOGGING_LEVEL {
		sl := call.GetSetLoggingLevel()
		if status, err := opapi.SetLoggingLevel(h.logging, sl.GetLevel(), sl.GetDuration()); err != nil {
			writeError(w, &Error{Status: status, Message: err.Error()})
			return
		}
		opapi.WriteEmpty(w)
		return
	}
	resp, err := h.readCall(r, call)
	if err != nil {
		writeError(w, err)
		return
	}
	opapi.WriteMessage(w, respType, resp)
}

// readCall answers a read-only call from the backend's views.
func (h *Handler) readCall(r *http.Request, call *agentpb.Call) (*agentpb.Response, error) {
	switch call.GetType() {
	case agentpb.Call_GET_HEALTH:
		return &agentpb.Response{
			Type:      agentpb.Response_GET_HEALTH.Enum(),
			GetHealth: &agentpb.Response_GetHealth{Healthy: proto.Bool(true)},
		}, nil
	case agentpb.Call_GET_METRICS:
		m, err := h.b.Metrics()
		if err != nil {
			return nil, err
		}
		return &agentpb.Response{
			Type:       agentpb.Response_GET_METRICS.Enum(),
			GetMetrics: &agentpb.Response_GetMetrics{Metrics: opapi.Metrics(m)},
		}, nil
	case agentpb.Call_GET_LOGGING_LEVEL:
		return &agentpb.Response{
			Type:            agentpb.Response_GET_LOGGING_LEVEL.Enum(),
			GetLoggingLevel: &agentpb.Response_GetLoggingLevel{Level: proto.Uint32(opapi.LoggingLevel(h.logging))},
		}, nil
	case agentpb.Call_GET_CONTAINERS:
		usage, err := h.b.Containers()
		if err != nil {
			return nil, err
		}
		return getContainersResponse(usage), nil
	case agentpb.Call_LIST_FILES:
		if h.files == nil {
			return nil, Errorf(http.StatusNotFound, "No file browser on this agent")
		}
		infos, err := h.files.List(call.GetListFiles().GetPath())
		if err != nil {
			return nil, fileError(err)
		}
		return &agentpb.Response{
			Type:      agentpb.Response_LIST_FILES.Enum(),
			ListFiles: &agentpb.Response_ListFiles{FileInfos: infos},
		}, nil
	case agentpb.Call_GET_OPERATIONS:
		// Mesos's agent lists the operations it was asked to apply and
		// has not yet finished. mezzo's master applies an operation
		// itself and hands the agent the resulting set in one
		// CHECKPOINT_RESOURCES, so no operation is ever pending here:
		// the answer is always empty, never a 501.
		return &agentpb.Response{
			Type:          agentpb.Response_GET_OPERATIONS.Enum(),
			GetOperations: &agentpb.Response_GetOperations{},
		}, nil
	case agentpb.Call_READ_FILE:
		if h.files == nil {
			return nil, Errorf(http.StatusNotFound, "No file browser on this agent")
		}
		rf := call.GetReadFile()
		length := int64(-1)
		if rf.Length != nil {
			length = int64(min(rf.GetLength(), 1<<62))
		}
		data, size, err := h.files.Read(rf.GetPath(), int64(min(rf.GetOffset(), 1<<62)), length)
		if err != nil {
			return nil, fileError(err)
		}
		return &agentpb.Response{
			Type:     agentpb.Response_READ_FILE.Enum(),
			ReadFile: &agentpb.Response_ReadFile{Size: proto.Uint64(uint64(size)), Data: data},
		}, nil
	}
	// The remaining read calls render the agent's state.
	switch call.GetType() {
	case agentpb.Call_GET_FLAGS, agentpb.Call_GET_VERSION, agentpb.Call_GET_STATE, agentpb.Call_GET_FRAMEWORKS,
		agentpb.Call_GET_EXECUTORS, agentpb.Call_GET_TASKS, agentpb.Call_GET_AGENT:
	default:
		return nil, Errorf(http.StatusNotImplemented, "Call '%s' is not supported by this agent", call.GetType())
	}
	v, err := h.stateFor(r)
	if err != nil {
		return nil, err
	}
	return stateResponse(call.GetType(), v), nil
}

// authorizeCall checks an operator call that is all or nothing for r's
// caller (the state calls are filtered instead): nil or the 403.
func (h *Handler) authorizeCall(r *http.Request, call *agentpb.Call) error {
	switch call.GetType() {
	case agentpb.Call_SET_LOGGING_LEVEL:
		return h.check(r, authorizer.SetLogLevel, authorizer.AnyObject)
	case agentpb.Call_GET_FLAGS:
		return h.check(r, authorizer.ViewFlags, authorizer.AnyObject)
	case agentpb.Call_GET_METRICS:
		return h.check(r, authorizer.GetEndpoint, authorizer.Value("/metrics/snapshot"))
	case agentpb.Call_GET_CONTAINERS:
		return h.check(r, authorizer.GetEndpoint, authorizer.Value("/monitor/statistics"))
	case agentpb.Call_LIST_FILES:
		return h.checkFile(r, call.GetListFiles().GetPath())
	case agentpb.Call_READ_FILE:
		return h.checkFile(r, call.GetReadFile().GetPath())
	}
	return nil
}

// fileError keeps the status a file browser error carries (404, 400).
func fileError(err error) error {
	var se interface{ HTTPStatus() int }
	if errors.As(err, &se) {
		return &Error{Status: se.HTTPStatus(), Message: err.Error()}
	}
	return err
}
