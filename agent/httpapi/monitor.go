package httpapi

import (
	"net/http"
	"sort"

	"mezzo/api/agentpb"
	"mezzo/api/codec"
	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// ContainerUsage is one executor's container with its measured usage, for
// /monitor/statistics and the GET_CONTAINERS operator call.
type ContainerUsage struct {
	FrameworkID  string
	ExecutorID   string
	ExecutorName string
	Source       string
	ContainerID  string
	ExecutorPid  int
	// Statistics is nil when the container could not be measured (e.g. it
	// ended meanwhile); /monitor/statistics leaves such containers out.
	Statistics *mesos.ResourceStatistics
}

// maxOperatorBody bounds an operator call's body.
const maxOperatorBody = 1 << 20

// monitorStatistics serves /monitor/statistics(.json) as Mesos's agent
// does: a JSON array with, per executor, framework_id, executor_id,
// executor_name, source and statistics (ResourceStatistics in Mesos's JSON
// mapping).
func (h *Handler) monitorStatistics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		writeError(w, Errorf(http.StatusMethodNotAllowed, "Expecting 'GET', received '%s'", r.Method))
		return
	}
	usage, err := h.b.Containers()
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]any, 0, len(usage))
	for _, u := range usage {
		if u.Statistics == nil {
			continue
		}
		out = append(out, map[string]any{
			"framework_id":  u.FrameworkID,
			"executor_id":   u.ExecutorID,
			"executor_name": u.ExecutorName,
			"source":        u.Source,
			"statistics":    protoJSON(u.Statistics),
		})
	}
	writeJSON(w, r, out)
}

// operator serves the agent's v1 operator API (POST /api/v1). It answers
// GET_HEALTH, GET_METRICS and GET_CONTAINERS; other calls are 501.
func (h *Handler) operator(w http.ResponseWriter, r *http.Request) {
	mt, ok := postType(w, r)
	if !ok {
		return
	}
	respType, err := codec.ResponseType(r)
	if err != nil {
		writeError(w, Errorf(http.StatusNotAcceptable, "Expecting 'Accept' to allow '%s' or '%s'", codec.JSON, codec.Protobuf))
		return
	}
	call := &agentpb.Call{}
	if e := decodeCall(r, mt, maxOperatorBody, call); e != nil {
		writeError(w, e)
		return
	}
	var resp *agentpb.Response
	switch call.GetType() {
	case agentpb.Call_GET_HEALTH:
		resp = &agentpb.Response{
			Type:      agentpb.Response_GET_HEALTH.Enum(),
			GetHealth: &agentpb.Response_GetHealth{Healthy: proto.Bool(true)},
		}
	case agentpb.Call_GET_METRICS:
		m, err := h.b.Metrics()
		if err != nil {
			writeError(w, err)
			return
		}
		resp = &agentpb.Response{Type: agentpb.Response_GET_METRICS.Enum(), GetMetrics: &agentpb.Response_GetMetrics{}}
		for _, k := range sortedKeys(m) {
			resp.GetMetrics.Metrics = append(resp.GetMetrics.Metrics, &mesos.Metric{Name: proto.String(k), Value: proto.Float64(m[k])})
		}
	case agentpb.Call_GET_CONTAINERS:
		usage, err := h.b.Containers()
		if err != nil {
			writeError(w, err)
			return
		}
		resp = getContainersResponse(usage)
	case agentpb.Call_UNKNOWN:
		writeError(w, Errorf(http.StatusBadRequest, "Failed to validate agent::Call: Expecting 'type' to be present"))
		return
	default:
		writeError(w, Errorf(http.StatusNotImplemented, "Call '%s' is not supported by this agent yet", call.GetType()))
		return
	}
	out, err := codec.Marshal(respType, resp)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", string(respType))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// getContainersResponse renders GET_CONTAINERS: every executor container
// with its status (container id, executor pid) and, when measured, its
// ResourceStatistics.
func getContainersResponse(usage []ContainerUsage) *agentpb.Response {
	gc := &agentpb.Response_GetContainers{}
	for _, u := range usage {
		c := &agentpb.Response_GetContainers_Container{
			FrameworkId:        &mesos.FrameworkID{Value: proto.String(u.FrameworkID)},
			ExecutorId:         &mesos.ExecutorID{Value: proto.String(u.ExecutorID)},
			ExecutorName:       proto.String(u.ExecutorName),
			ContainerId:        &mesos.ContainerID{Value: proto.String(u.ContainerID)},
			ContainerStatus:    &mesos.ContainerStatus{ContainerId: &mesos.ContainerID{Value: proto.String(u.ContainerID)}},
			ResourceStatistics: u.Statistics,
		}
		if u.ExecutorPid > 0 {
			c.ContainerStatus.ExecutorPid = proto.Uint32(uint32(u.ExecutorPid))
		}
		gc.Containers = append(gc.Containers, c)
	}
	return &agentpb.Response{Type: agentpb.Response_GET_CONTAINERS.Enum(), GetContainers: gc}
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
