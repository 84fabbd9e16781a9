package endpoints

import (
	"encoding/json"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
)

// taskJSON is a task as /master/state and /master/tasks show it
// (src/common/http.cpp json(Task)).
type taskJSON struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	FrameworkID string          `json:"framework_id"`
	ExecutorID  string          `json:"executor_id"` // "" for command tasks
	SlaveID     string          `json:"slave_id"`
	State       string          `json:"state"`
	Resources   map[string]any  `json:"resources"`
	Limits      map[string]jnum `json:"limits,omitempty"`
	Role        string          `json:"role"`
	Statuses    []statusJSON    `json:"statuses"`
	User        *string         `json:"user,omitempty"`
	Labels      json.RawMessage `json:"labels,omitempty"`
	Discovery   json.RawMessage `json:"discovery,omitempty"`
	Container   json.RawMessage `json:"container,omitempty"`
	HealthCheck json.RawMessage `json:"health_check,omitempty"`
}

// statusJSON is one entry of a task's statuses[] (json(TaskStatus)): the
// state, timestamp, labels, container status and health, as Mesos, plus
// (a mezzo extension, for the web UI's task page and the CLI) the source,
// reason and message, without which a failed task's history says nothing
// of why. The data payload is never shown.
type statusJSON struct {
	State           string          `json:"state"`
	Timestamp       jnum            `json:"timestamp"`
	Source          string          `json:"source,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	Message         string          `json:"message,omitempty"`
	Labels          json.RawMessage `json:"labels,omitempty"`
	ContainerStatus json.RawMessage `json:"container_status,omitempty"`
	Healthy         *bool           `json:"healthy,omitempty"`
}

// taskModel renders t. fallbackRole is the role to show when the task's
// resources carry no allocation_info (Mesos always has it).
func taskModel(t *mesos.Task, fallbackRole string) taskJSON {
	m := taskJSON{
		ID:          t.GetTaskId().GetValue(),
		Name:        t.GetName(),
		FrameworkID: t.GetFrameworkId().GetValue(),
		ExecutorID:  t.GetExecutorId().GetValue(),
		SlaveID:     t.GetAgentId().GetValue(),
		State:       t.GetState().String(),
		Resources:   summary(t.GetResources()),
		Role:        allocationRole(t.GetResources(), fallbackRole),
		Statuses:    make([]statusJSON, 0, len(t.GetStatuses())),
		User:        t.User,
	}
	if len(t.GetLimits()) > 0 {
		m.Limits = map[string]jnum{}
		for k, v := range t.GetLimits() {
			m.Limits[k] = jnum(v.GetValue())
		}
	}
	for _, s := range t.GetStatuses() {
		m.Statuses = append(m.Statuses, statusModel(s))
	}
	if t.Labels != nil {
		m.Labels = labelsJSON(t.Labels)
	}
	if t.Discovery != nil {
		m.Discovery = protoJSON(t.Discovery)
	}
	if t.Container != nil {
		m.Container = protoJSON(t.Container)
	}
	if t.HealthCheck != nil {
		m.HealthCheck = protoJSON(t.HealthCheck)
	}
	return m
}

func statusModel(s *mesos.TaskStatus) statusJSON {
	m := statusJSON{
		State:     s.GetState().String(),
		Timestamp: jnum(s.GetTimestamp()),
		Healthy:   s.Healthy,
		Message:   s.GetMessage(),
	}
	if s.Source != nil {
		m.Source = s.GetSource().String()
	}
	if s.Reason != nil {
		m.Reason = s.GetReason().String()
	}
	if s.Labels != nil {
		m.Labels = labelsJSON(s.Labels)
	}
	if s.ContainerStatus != nil {
		m.ContainerStatus = containerStatusJSON(s.ContainerStatus)
	}
	return m
}

// allocationRole is the role of the first resource's allocation_info (a
// task's resources are all allocated to one role).
func allocationRole(rs []*mesos.Resource, fallback string) string {
	for _, r := range rs {
		if r.AllocationInfo != nil && r.AllocationInfo.Role != nil {
			return r.AllocationInfo.GetRole()
		}
	}
	return fallback
}

// protoJSON embeds a protobuf sub-object in Mesos's JSON mapping.
func protoJSON(m proto.Message) json.RawMessage {
	b, _ := codec.MarshalJSON(m)
	return b
}

// labelsJSON is Mesos's json(Labels): a bare array of {key, value} objects,
// not the {"labels": [...]} wrapper the protobuf mapping would give.
func labelsJSON(l *mesos.Labels) json.RawMessage {
	buf := []byte{'['}
	for i, label := range l.GetLabels() {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = codec.AppendJSON(buf, label)
	}
	return append(buf, ']')
}

// containerStatusJSON is Mesos's json(ContainerStatus): container_id,
// network_infos (with labels as a bare array) and cgroup_info; executor_pid
// is not shown.
func containerStatusJSON(cs *mesos.ContainerStatus) json.RawMessage {
	type netJSON struct {
		Groups       []string          `json:"groups,omitempty"`
		Labels       json.RawMessage   `json:"labels,omitempty"`
		IPAddresses  []json.RawMessage `json:"ip_addresses,omitempty"`
		Name         *string           `json:"name,omitempty"`
		PortMappings []json.RawMessage `json:"port_mappings,omitempty"`
	}
	var out struct {
		ContainerID  json.RawMessage `json:"container_id,omitempty"`
		NetworkInfos []netJSON       `json:"network_infos,omitempty"`
		CgroupInfo   json.RawMessage `json:"cgroup_info,omitempty"`
	}
	if cs.ContainerId != nil {
		out.ContainerID = protoJSON(cs.ContainerId)
	}
	for _, ni := range cs.GetNetworkInfos() {
		n := netJSON{Groups: ni.GetGroups(), Name: ni.Name}
		if ni.Labels != nil {
			n.Labels = labelsJSON(ni.Labels)
		}
		for _, ip := range ni.GetIpAddresses() {
			n.IPAddresses = append(n.IPAddresses, protoJSON(ip))
		}
		for _, pm := range ni.GetPortMappings() {
			n.PortMappings = append(n.PortMappings, protoJSON(pm))
		}
		out.NetworkInfos = append(out.NetworkInfos, n)
	}
	if cs.CgroupInfo != nil {
		out.CgroupInfo = protoJSON(cs.CgroupInfo)
	}
	b, _ := encodeJSON(out)
	return b
}
