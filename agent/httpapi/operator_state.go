package httpapi

import (
	"google.golang.org/protobuf/proto"

	"mezzo/api/agentpb"
	"mezzo/api/mesos"
	"mezzo/internal/opapi"
	"mezzo/internal/secrets"
)

// stateResponse renders the state-derived read calls from one StateView.
func stateResponse(t agentpb.Call_Type, v *StateView) *agentpb.Response {
	switch t {
	case agentpb.Call_GET_FLAGS:
		return &agentpb.Response{
			Type:     agentpb.Response_GET_FLAGS.Enum(),
			GetFlags: &agentpb.Response_GetFlags{Flags: opapi.Flags(v.Flags)},
		}
	case agentpb.Call_GET_VERSION:
		return &agentpb.Response{
			Type:       agentpb.Response_GET_VERSION.Enum(),
			GetVersion: &agentpb.Response_GetVersion{VersionInfo: versionInfo(v)},
		}
	case agentpb.Call_GET_STATE:
		return &agentpb.Response{Type: agentpb.Response_GET_STATE.Enum(), GetState: &agentpb.Response_GetState{
			GetTasks:      getTasks(v),
			GetExecutors:  getExecutors(v),
			GetFrameworks: getFrameworks(v),
		}}
	case agentpb.Call_GET_FRAMEWORKS:
		return &agentpb.Response{Type: agentpb.Response_GET_FRAMEWORKS.Enum(), GetFrameworks: getFrameworks(v)}
	case agentpb.Call_GET_EXECUTORS:
		return &agentpb.Response{Type: agentpb.Response_GET_EXECUTORS.Enum(), GetExecutors: getExecutors(v)}
	case agentpb.Call_GET_TASKS:
		return &agentpb.Response{Type: agentpb.Response_GET_TASKS.Enum(), GetTasks: getTasks(v)}
	case agentpb.Call_GET_AGENT:
		return &agentpb.Response{Type: agentpb.Response_GET_AGENT.Enum(), GetAgent: &agentpb.Response_GetAgent{AgentInfo: agentInfo(v)}}
	}
	return nil
}

// versionInfo is GET_VERSION's VersionInfo: build date and time only when
// the binary carries them.
func versionInfo(v *StateView) *mesos.VersionInfo {
	out := &mesos.VersionInfo{Version: proto.String(v.Version), BuildUser: proto.String(v.BuildUser)}
	if !v.BuildTime.IsZero() {
		out.BuildDate = proto.String(v.BuildTime.UTC().Format("2006-01-02 15:04:05"))
		out.BuildTime = proto.Float64(float64(v.BuildTime.Unix()))
	}
	if v.GitSHA != "" {
		out.GitSha = proto.String(v.GitSHA)
	}
	return out
}

// agentInfo is the agent's AgentInfo (id only once registered).
func agentInfo(v *StateView) *mesos.AgentInfo {
	info := &mesos.AgentInfo{
		Hostname:   proto.String(v.Hostname),
		Resources:  v.Resources,
		Attributes: v.Attributes,
		Domain:     v.Domain,
	}
	if v.Port > 0 {
		info.Port = proto.Int32(int32(v.Port))
	}
	if v.ID != "" {
		info.Id = &mesos.AgentID{Value: proto.String(v.ID)}
	}
	return info
}

func getFrameworks(v *StateView) *agentpb.Response_GetFrameworks {
	out := &agentpb.Response_GetFrameworks{}
	for _, f := range v.Frameworks {
		out.Frameworks = append(out.Frameworks, &agentpb.Response_GetFrameworks_Framework{FrameworkInfo: f.Info})
	}
	for _, f := range v.CompletedFrameworks {
		out.CompletedFrameworks = append(out.CompletedFrameworks, &agentpb.Response_GetFrameworks_Framework{FrameworkInfo: f.Info})
	}
	return out
}

// getExecutors lists executors: a completed framework's executors are all
// completed, as Mesos's agent lists them.
func getExecutors(v *StateView) *agentpb.Response_GetExecutors {
	out := &agentpb.Response_GetExecutors{}
	exec := func(e ExecutorView) *agentpb.Response_GetExecutors_Executor {
		// A command executor's ExecutorInfo carries its task's
		// environment: SECRET variables are shown without their data.
		return &agentpb.Response_GetExecutors_Executor{ExecutorInfo: secrets.RedactedExecutor(e.Info)}
	}
	for _, f := range v.Frameworks {
		for _, e := range f.Executors {
			out.Executors = append(out.Executors, exec(e))
		}
		for _, e := range f.CompletedExecutors {
			out.CompletedExecutors = append(out.CompletedExecutors, exec(e))
		}
	}
	for _, f := range v.CompletedFrameworks {
		for _, e := range append(append([]ExecutorView(nil), f.Executors...), f.CompletedExecutors...) {
			out.CompletedExecutors = append(out.CompletedExecutors, exec(e))
		}
	}
	return out
}

// getTasks sorts tasks as Mesos's agent does: queued (awaiting the
// executor), launched (live), terminated (terminal, update not yet
// acknowledged) and completed (acknowledged, or of a completed executor).
// The agent holds no tasks pending authorization, so pending_tasks stays
// empty.
func getTasks(v *StateView) *agentpb.Response_GetTasks {
	out := &agentpb.Response_GetTasks{}
	for _, f := range v.Frameworks {
		for _, e := range f.Executors {
			out.QueuedTasks = append(out.QueuedTasks, e.Queued...)
			out.LaunchedTasks = append(out.LaunchedTasks, e.Tasks...)
			out.TerminatedTasks = append(out.TerminatedTasks, e.TerminatedTasks...)
			out.CompletedTasks = append(out.CompletedTasks, e.CompletedTasks...)
		}
		for _, e := range f.CompletedExecutors {
			out.CompletedTasks = append(out.CompletedTasks, executorTasks(e)...)
		}
	}
	for _, f := range v.CompletedFrameworks {
		for _, e := range append(append([]ExecutorView(nil), f.Executors...), f.CompletedExecutors...) {
			out.CompletedTasks = append(out.CompletedTasks, executorTasks(e)...)
		}
	}
	return out
}

// executorTasks is every task an ended executor still lists.
func executorTasks(e ExecutorView) []*mesos.Task {
	var out []*mesos.Task
	out = append(out, e.Tasks...)
	out = append(out, e.TerminatedTasks...)
	return append(out, e.CompletedTasks...)
}
