package httpapi

import (
	"net/http"

	"mezzo/api/agentpb"
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
