package endpoints

import (
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/internal/opapi"
	"mezzo/internal/secrets"
	"mezzo/master"
)

// getResponse answers the read-only GET_* calls from s, or returns nil for a
// call this package does not implement.
func (h *handlers) getResponse(c *masterpb.Call, s *master.Snapshot) *masterpb.Response {
	switch c.GetType() {
	case masterpb.Call_GET_HEALTH:
		return &masterpb.Response{
			Type:      masterpb.Response_GET_HEALTH.Enum(),
			GetHealth: &masterpb.Response_GetHealth{Healthy: proto.Bool(true)},
		}
	case masterpb.Call_GET_VERSION:
		return &masterpb.Response{
			Type:       masterpb.Response_GET_VERSION.Enum(),
			GetVersion: &masterpb.Response_GetVersion{VersionInfo: h.versionInfo()},
		}
	case masterpb.Call_GET_FLAGS:
		flags := make([]*mesos.Flag, 0, len(s.Flags))
		for _, f := range s.Flags {
			flags = append(flags, &mesos.Flag{Name: proto.String(f.Name), Value: proto.String(f.Value)})
		}
		return &masterpb.Response{
			Type:     masterpb.Response_GET_FLAGS.Enum(),
			GetFlags: &masterpb.Response_GetFlags{Flags: flags},
		}
	case masterpb.Call_GET_METRICS:
		return &masterpb.Response{
			Type:       masterpb.Response_GET_METRICS.Enum(),
			GetMetrics: &masterpb.Response_GetMetrics{Metrics: opapi.Metrics(h.metrics(s))},
		}
	case masterpb.Call_GET_LOGGING_LEVEL:
		return &masterpb.Response{
			Type:            masterpb.Response_GET_LOGGING_LEVEL.Enum(),
			GetLoggingLevel: &masterpb.Response_GetLoggingLevel{Level: proto.Uint32(opapi.LoggingLevel(h.logging))},
		}
	case masterpb.Call_GET_STATE:
		return &masterpb.Response{Type: masterpb.Response_GET_STATE.Enum(), GetState: getState(s)}
	case masterpb.Call_GET_AGENTS:
		return &masterpb.Response{Type: masterpb.Response_GET_AGENTS.Enum(), GetAgents: getAgents(s)}
	case masterpb.Call_GET_FRAMEWORKS:
		return &masterpb.Response{Type: masterpb.Response_GET_FRAMEWORKS.Enum(), GetFrameworks: getFrameworks(s)}
	case masterpb.Call_GET_EXECUTORS:
		return &masterpb.Response{Type: masterpb.Response_GET_EXECUTORS.Enum(), GetExecutors: getExecutors(s)}
	case masterpb.Call_GET_TASKS:
		return &masterpb.Response{Type: masterpb.Response_GET_TASKS.Enum(), GetTasks: getTasks(s)}
	case masterpb.Call_GET_ROLES:
		return &masterpb.Response{Type: masterpb.Response_GET_ROLES.Enum(), GetRoles: getRoles(s)}
	case masterpb.Call_GET_MASTER:
		gm := &masterpb.Response_GetMaster{MasterInfo: s.Info}
		if !s.StartTime.IsZero() {
			gm.StartTime = proto.Float64(float64(secs(s.StartTime)))
		}
		if s.Elected && !s.ElectedTime.IsZero() {
			gm.ElectedTime = proto.Float64(float64(secs(s.ElectedTime)))
		}
		return &masterpb.Response{Type: masterpb.Response_GET_MASTER.Enum(), GetMaster: gm}
	case masterpb.Call_GET_OPERATIONS:
		// The operations awaiting their framework's acknowledgement, as
		// Mesos lists the operations its master tracks.
		return &masterpb.Response{Type: masterpb.Response_GET_OPERATIONS.Enum(),
			GetOperations: &masterpb.Response_GetOperations{Operations: s.Operations}}
	}
	return nil
}

func (h *handlers) versionInfo() *mesos.VersionInfo {
	b := buildInfo()
	v := &mesos.VersionInfo{Version: proto.String(h.version), BuildUser: proto.String(b.BuildUser)}
	if b.BuildDate != "" {
		v.BuildDate = proto.String(b.BuildDate)
		v.BuildTime = proto.Float64(b.BuildTime)
	}
	if b.GitSHA != "" {
		v.GitSha = proto.String(b.GitSHA)
	}
	return v
}

// timeInfo converts t, or returns nil for the zero time (field unset).
func timeInfo(t time.Time) *mesos.TimeInfo {
	if t.IsZero() {
		return nil
	}
	return &mesos.TimeInfo{Nanoseconds: proto.Int64(t.UnixNano())}
}

func getState(s *master.Snapshot) *masterpb.Response_GetState {
	return &masterpb.Response_GetState{
		GetTasks:      getTasks(s),
		GetExecutors:  getExecutors(s),
		GetFrameworks: getFrameworks(s),
		GetAgents:     getAgents(s),
	}
}

// agentProto is one agent as GET_AGENTS shows it.
func agentProto(a *master.AgentView) *masterpb.Response_GetAgents_Agent {
	return &masterpb.Response_GetAgents_Agent{
		AgentInfo:          a.Info,
		Active:             proto.Bool(a.Active),
		Deactivated:        proto.Bool(a.Deactivated),
		DrainInfo:          a.DrainInfo,
		Version:            proto.String(a.Version),
		Pid:                proto.String(a.PID),
		RegisteredTime:     timeInfo(a.RegisteredTime),
		ReregisteredTime:   timeInfo(a.ReregisteredTime),
		TotalResources:     a.Total,
		AllocatedResources: a.Used,
		OfferedResources:   a.Offered,
		Capabilities:       a.Capabilities,
	}
}

func getAgents(s *master.Snapshot) *masterpb.Response_GetAgents {
	out := &masterpb.Response_GetAgents{}
	for _, a := range s.Agents {
		out.Agents = append(out.Agents, agentProto(a))
	}
	return out
}

// frameworkProto is one framework as GET_FRAMEWORKS shows it; re-registered
// time only when it differs from the registration, as Mesos does.
func frameworkProto(f *master.FrameworkView) *masterpb.Response_GetFrameworks_Framework {
	fw := &masterpb.Response_GetFrameworks_Framework{
		FrameworkInfo:      f.Info,
		Active:             proto.Bool(f.Active),
		Connected:          proto.Bool(f.Connected),
		Recovered:          proto.Bool(f.Recovered),
		RegisteredTime:     timeInfo(f.RegisteredTime),
		UnregisteredTime:   timeInfo(f.UnregisteredTime),
		Offers:             f.Offers,
		AllocatedResources: f.Used,
		OfferedResources:   f.Offered,
	}
	if !f.ReregisteredTime.Equal(f.RegisteredTime) {
		fw.ReregisteredTime = timeInfo(f.ReregisteredTime)
	}
	return fw
}

func getFrameworks(s *master.Snapshot) *masterpb.Response_GetFrameworks {
	out := &masterpb.Response_GetFrameworks{}
	inverse := maintenanceOf(s).InverseOffers
	for _, f := range s.Frameworks {
		p := frameworkProto(f)
		p.InverseOffers = inverse[f.Info.GetId().GetValue()]
		out.Frameworks = append(out.Frameworks, p)
	}
	for _, f := range s.CompletedFrameworks {
		out.CompletedFrameworks = append(out.CompletedFrameworks, frameworkProto(f))
	}
	return out
}

func getExecutors(s *master.Snapshot) *masterpb.Response_GetExecutors {
	out := &masterpb.Response_GetExecutors{}
	for _, group := range [][]*master.FrameworkView{s.Frameworks, s.CompletedFrameworks} {
		for _, f := range group {
			for _, e := range f.Executors {
				out.Executors = append(out.Executors, &masterpb.Response_GetExecutors_Executor{
					ExecutorInfo: secrets.RedactedExecutor(e.Info), // a secret's data is shown nowhere
					AgentId:      &mesos.AgentID{Value: proto.String(e.AgentID)},
				})
			}
		}
	}
	return out
}

func getTasks(s *master.Snapshot) *masterpb.Response_GetTasks {
	out := &masterpb.Response_GetTasks{OrphanTasks: s.OrphanTasks}
	for _, group := range [][]*master.FrameworkView{s.Frameworks, s.CompletedFrameworks} {
		for _, f := range group {
			out.Tasks = append(out.Tasks, f.Tasks...)
			out.UnreachableTasks = append(out.UnreachableTasks, f.UnreachableTasks...)
			out.CompletedTasks = append(out.CompletedTasks, f.CompletedTasks...)
		}
	}
	return out
}

func getRoles(s *master.Snapshot) *masterpb.Response_GetRoles {
	out := &masterpb.Response_GetRoles{}
	for _, r := range s.Roles {
		weight := r.Weight
		if weight <= 0 {
			weight = 1
		}
		role := &mesos.Role{Name: proto.String(r.Name), Weight: proto.Float64(weight)}
		for _, id := range r.Frameworks {
			role.Frameworks = append(role.Frameworks, &mesos.FrameworkID{Value: proto.String(id)})
		}
		role.Resources = append(append([]*mesos.Resource{}, r.Allocated...), r.Offered...)
		out.Roles = append(out.Roles, role)
	}
	return out
}
