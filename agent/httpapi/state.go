package httpapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/internal/secrets"
	"mezzo/internal/version"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// StateView is the agent's state as /state shows it. The agent fills it
// with copies (the renderer only reads it).
type StateView struct {
	Version   string
	GitSHA    string
	BuildTime time.Time
	BuildUser string
	StartTime time.Time
	// ID is the agent ID ("" until registered).
	ID string
	// PID is "slave(1)@ip:port".
	PID      string
	Hostname string
	// Port is the agent's HTTP port (AgentInfo.port in GET_AGENT).
	Port       int
	Resources  []*mesos.Resource
	Attributes []*mesos.Attribute
	// MasterHostname is the hostname of the master the agent is registered
	// with ("" when not registered).
	MasterHostname string
	Flags          map[string]string
	Capabilities   []string
	Domain         *mesos.DomainInfo
	// Oversubscribed is the agent's oversubscribed total, what it last
	// computed to tell the master (estimate plus the throttle-able
	// resources containers hold); nil when no estimator runs. mezzo only:
	// Mesos's agent /state does not show it (its master's does, in the
	// agent's resources as cpus_revocable).
	Oversubscribed []*mesos.Resource

	Frameworks          []FrameworkView
	CompletedFrameworks []FrameworkView
}

// FrameworkView is one framework on the agent.
type FrameworkView struct {
	Info               *mesos.FrameworkInfo
	Executors          []ExecutorView
	CompletedExecutors []ExecutorView
}

// ExecutorView is one executor of a framework.
type ExecutorView struct {
	Info        *mesos.ExecutorInfo
	ContainerID string
	Directory   string
	// Tasks are the launched, non-terminal tasks; QueuedTasks await the
	// executor's subscription (Queued is the same tasks as Task, in
	// TASK_STAGING); TerminatedTasks have ended but their terminal update
	// is not yet acknowledged; CompletedTasks have ended and are
	// acknowledged.
	Tasks           []*mesos.Task
	QueuedTasks     []*mesos.TaskInfo
	Queued          []*mesos.Task
	TerminatedTasks []*mesos.Task
	CompletedTasks  []*mesos.Task
}

// summary renders resources as Mesos's classic endpoints do.
func summary(rs []*mesos.Resource) map[string]any {
	r, err := resources.FromProto(rs)
	if err != nil {
		return map[string]any{"cpus": 0.0, "gpus": 0.0, "mem": 0.0, "disk": 0.0}
	}
	return r.Summary()
}

// protoJSON renders m in Mesos's JSON mapping for embedding.
func protoJSON(m proto.Message) json.RawMessage {
	b, err := codec.MarshalJSON(m)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

func resourcesJSON(rs []*mesos.Resource) json.RawMessage {
	var parts []string
	for _, r := range rs {
		parts = append(parts, string(protoJSON(r)))
	}
	return json.RawMessage("[" + strings.Join(parts, ",") + "]")
}

// attributesJSON renders attributes as an object of name to value: scalars
// as numbers, ranges and sets in their text form, text as a string.
func attributesJSON(as []*mesos.Attribute) map[string]any {
	out := map[string]any{}
	for _, a := range as {
		switch a.GetType() {
		case mesos.Value_SCALAR:
			out[a.GetName()] = a.GetScalar().GetValue()
		case mesos.Value_RANGES:
			var rs []string
			for _, r := range a.GetRanges().GetRange() {
				rs = append(rs, fmt.Sprintf("%d-%d", r.GetBegin(), r.GetEnd()))
			}
			out[a.GetName()] = "[" + strings.Join(rs, ", ") + "]"
		case mesos.Value_SET:
			out[a.GetName()] = "{" + strings.Join(a.GetSet().GetItem(), ", ") + "}"
		case mesos.Value_TEXT:
			out[a.GetName()] = a.GetText().GetValue()
		}
	}
	return out
}

func renderState(v *StateView) map[string]any {
	total, _ := resources.FromProto(v.Resources)
	reserved := map[string]any{}
	reservedFull := map[string]json.RawMessage{}
	roles := map[string]bool{}
	for _, r := range total.Proto() {
		if rs := r.GetReservations(); len(rs) > 0 {
			roles[rs[len(rs)-1].GetRole()] = true
		}
	}
	for role := range roles {
		rr := total.ReservedTo(role)
		reserved[role] = rr.Summary()
		reservedFull[role] = resourcesJSON(rr.Proto())
	}
	unreserved := total.Unreserved()
	out := map[string]any{
		"version":                        v.Version,
		"build_date":                     version.Info{BuildTime: v.BuildTime}.BuildDate(),
		"build_time":                     float64(version.Info{BuildTime: v.BuildTime}.BuildUnix()),
		"build_user":                     v.BuildUser,
		"start_time":                     secs(v.StartTime),
		"id":                             v.ID,
		"pid":                            v.PID,
		"hostname":                       v.Hostname,
		"capabilities":                   nonNil(v.Capabilities),
		"resources":                      total.Summary(),
		"reserved_resources":             reserved,
		"unreserved_resources":           unreserved.Summary(),
		"reserved_resources_full":        reservedFull,
		"unreserved_resources_full":      resourcesJSON(unreserved.Proto()),
		"reserved_resources_allocated":   map[string]any{},
		"unreserved_resources_allocated": map[string]any{},
		"resource_providers":             []any{},
		"attributes":                     attributesJSON(v.Attributes),
		"flags":                          v.Flags,
		"frameworks":                     renderFrameworks(v.Frameworks),
		"completed_frameworks":           renderFrameworks(v.CompletedFrameworks),
	}
	if v.Oversubscribed != nil {
		o, err := resources.FromProto(v.Oversubscribed)
		if err == nil {
			out["oversubscribed_resources"] = o.Summary()
			out["oversubscribed_resources_full"] = resourcesJSON(o.Proto())
		}
	}
	if v.GitSHA != "" {
		out["git_sha"] = v.GitSHA
	}
	if v.MasterHostname != "" {
		out["master_hostname"] = v.MasterHostname
	}
	if v.Domain != nil {
		out["domain"] = protoJSON(v.Domain)
	}
	if v.Flags == nil {
		out["flags"] = map[string]string{}
	}
	return out
}

func secs(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func renderFrameworks(fs []FrameworkView) []any {
	out := make([]any, 0, len(fs))
	for _, f := range fs {
		out = append(out, renderFramework(f))
	}
	return out
}

func renderFramework(f FrameworkView) map[string]any {
	info := f.Info
	out := map[string]any{
		"id":                  info.GetId().GetValue(),
		"name":                info.GetName(),
		"user":                info.GetUser(),
		"failover_timeout":    info.GetFailoverTimeout(),
		"checkpoint":          info.GetCheckpoint(),
		"hostname":            info.GetHostname(),
		"executors":           renderExecutors(f.Executors),
		"completed_executors": renderExecutors(f.CompletedExecutors),
	}
	if info.Principal != nil {
		out["principal"] = info.GetPrincipal()
	}
	multiRole := false
	var caps []string
	for _, c := range info.GetCapabilities() {
		caps = append(caps, c.GetType().String())
		if c.GetType() == mesos.FrameworkInfo_Capability_MULTI_ROLE {
			multiRole = true
		}
	}
	if multiRole {
		out["roles"] = nonNil(info.GetRoles())
	} else {
		out["role"] = info.GetRole()
	}
	out["capabilities"] = nonNil(caps)
	return out
}

func renderExecutors(es []ExecutorView) []any {
	out := make([]any, 0, len(es))
	for _, e := range es {
		out = append(out, renderExecutor(e))
	}
	return out
}

func renderExecutor(e ExecutorView) map[string]any {
	info := e.Info
	all := append([]*mesos.Resource(nil), info.GetResources()...)
	for _, t := range e.Tasks {
		all = append(all, t.GetResources()...)
	}
	tasks := make([]any, 0, len(e.Tasks))
	for _, t := range e.Tasks {
		tasks = append(tasks, RenderTask(t))
	}
	queued := make([]any, 0, len(e.QueuedTasks))
	for _, t := range e.QueuedTasks {
		queued = append(queued, renderTaskInfo(t))
	}
	// /state lists terminated and completed tasks together, as Mesos does.
	completed := make([]any, 0, len(e.TerminatedTasks)+len(e.CompletedTasks))
	for _, t := range append(append([]*mesos.Task(nil), e.TerminatedTasks...), e.CompletedTasks...) {
		completed = append(completed, RenderTask(t))
	}
	out := map[string]any{
		"id":              info.GetExecutorId().GetValue(),
		"name":            info.GetName(),
		"source":          info.GetSource(),
		"container":       e.ContainerID,
		"directory":       e.Directory,
		"resources":       summary(all),
		"tasks":           tasks,
		"queued_tasks":    queued,
		"completed_tasks": completed,
	}
	if role := allocationRole(info.GetResources()); role != "" {
		out["role"] = role
	}
	if info.Labels != nil {
		out["labels"] = labelsJSON(info.GetLabels())
	}
	if info.Type != nil {
		out["type"] = info.GetType().String()
	}
	return out
}

func allocationRole(rs []*mesos.Resource) string {
	for _, r := range rs {
		if ai := r.GetAllocationInfo(); ai != nil && ai.Role != nil {
			return r.GetAllocationInfo().GetRole()
		}
	}
	return ""
}

func labelsJSON(l *mesos.Labels) []any {
	out := []any{}
	for _, lb := range l.GetLabels() {
		m := map[string]any{"key": lb.GetKey()}
		if lb.Value != nil {
			m["value"] = lb.GetValue()
		}
		out = append(out, m)
	}
	return out
}

// RenderTask models a Task as Mesos's classic endpoints do.
func RenderTask(t *mesos.Task) map[string]any {
	statuses := make([]any, 0, len(t.GetStatuses()))
	for _, s := range t.GetStatuses() {
		st := map[string]any{"state": s.GetState().String(), "timestamp": s.GetTimestamp()}
		if s.Labels != nil {
			st["labels"] = labelsJSON(s.GetLabels())
		}
		if s.ContainerStatus != nil {
			st["container_status"] = protoJSON(s.GetContainerStatus())
		}
		if s.Healthy != nil {
			st["healthy"] = s.GetHealthy()
		}
		statuses = append(statuses, st)
	}
	out := map[string]any{
		"id":           t.GetTaskId().GetValue(),
		"name":         t.GetName(),
		"framework_id": t.GetFrameworkId().GetValue(),
		"executor_id":  t.GetExecutorId().GetValue(),
		"slave_id":     t.GetAgentId().GetValue(),
		"state":        t.GetState().String(),
		"resources":    summary(t.GetResources()),
		"statuses":     statuses,
	}
	if role := allocationRole(t.GetResources()); role != "" {
		out["role"] = role
	}
	if t.User != nil {
		out["user"] = t.GetUser()
	}
	if t.Labels != nil {
		out["labels"] = labelsJSON(t.GetLabels())
	}
	if t.Discovery != nil {
		out["discovery"] = protoJSON(t.GetDiscovery())
	}
	if t.Container != nil {
		out["container"] = protoJSON(t.GetContainer())
	}
	if t.HealthCheck != nil {
		out["health_check"] = protoJSON(t.GetHealthCheck())
	}
	if len(t.GetLimits()) > 0 {
		limits := map[string]any{}
		keys := make([]string, 0, len(t.GetLimits()))
		for k := range t.GetLimits() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			limits[k] = t.GetLimits()[k].GetValue()
		}
		out["limits"] = limits
	}
	return out
}

func renderTaskInfo(t *mesos.TaskInfo) map[string]any {
	out := map[string]any{
		"id":        t.GetTaskId().GetValue(),
		"name":      t.GetName(),
		"slave_id":  t.GetAgentId().GetValue(),
		"resources": summary(t.GetResources()),
	}
	if t.Command != nil {
		out["command"] = protoJSON(secrets.RedactedCommand(t.GetCommand()))
	}
	if t.Executor != nil {
		out["executor_id"] = t.GetExecutor().GetExecutorId().GetValue()
	}
	if t.Discovery != nil {
		out["discovery"] = protoJSON(t.GetDiscovery())
	}
	return out
}
