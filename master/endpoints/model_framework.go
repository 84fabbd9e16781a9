package endpoints

import (
	"encoding/json"

	"mezzo/api/mesos"
	"mezzo/internal/secrets"
	"mezzo/master"
)

// frameworkSummaryJSON is Mesos's Summary<Framework>, the part of a
// framework /master/state-summary shows.
type frameworkSummaryJSON struct {
	ID               string         `json:"id"`
	Name             string         `json:"name"`
	PID              string         `json:"pid,omitempty"` // v0 (libprocess) frameworks only; mezzo has none
	UsedResources    map[string]any `json:"used_resources"`
	OfferedResources map[string]any `json:"offered_resources"`
	Capabilities     []string       `json:"capabilities"`
	Hostname         string         `json:"hostname"`
	WebuiURL         string         `json:"webui_url"`
	Active           bool           `json:"active"`
	Connected        bool           `json:"connected"`
	Recovered        bool           `json:"recovered"`
}

// frameworkJSON is the full framework of /master/state and
// /master/frameworks (FullFrameworkWriter).
type frameworkJSON struct {
	frameworkSummaryJSON
	User             string          `json:"user"`
	FailoverTimeout  jnum            `json:"failover_timeout"`
	Checkpoint       bool            `json:"checkpoint"`
	RegisteredTime   jnum            `json:"registered_time"`
	UnregisteredTime jnum            `json:"unregistered_time"`
	Principal        *string         `json:"principal,omitempty"`
	Resources        map[string]any  `json:"resources"`
	ReregisteredTime *jnum           `json:"reregistered_time,omitempty"`
	Roles            []string        `json:"roles,omitempty"`
	Role             *string         `json:"role,omitempty"`
	Tasks            []taskJSON      `json:"tasks"`
	UnreachableTasks []taskJSON      `json:"unreachable_tasks"`
	CompletedTasks   []taskJSON      `json:"completed_tasks"`
	Offers           []offerJSON     `json:"offers"`
	Executors        []executorJSON  `json:"executors"`
	Labels           json.RawMessage `json:"labels,omitempty"`
	// OfferConstraints are always present, {} when there are none (Mesos).
	OfferConstraints json.RawMessage `json:"offer_constraints"`
}

// offerJSON is an outstanding offer inside a framework.
type offerJSON struct {
	ID             string          `json:"id"`
	FrameworkID    string          `json:"framework_id"`
	AllocationInfo json.RawMessage `json:"allocation_info"`
	SlaveID        string          `json:"slave_id"`
	Resources      map[string]any  `json:"resources"`
}

// executorJSON is Mesos's json(ExecutorInfo) plus the agent it runs on.
type executorJSON struct {
	ExecutorID  string          `json:"executor_id"`
	Name        string          `json:"name"`
	FrameworkID string          `json:"framework_id"`
	Command     commandJSON     `json:"command"`
	Resources   map[string]any  `json:"resources"`
	Role        string          `json:"role,omitempty"`
	Labels      json.RawMessage `json:"labels,omitempty"`
	Type        string          `json:"type,omitempty"`
	SlaveID     string          `json:"slave_id"`
}

// commandJSON is Mesos's json(CommandInfo): argv and uris always present.
type commandJSON struct {
	Shell       *bool           `json:"shell,omitempty"`
	Value       *string         `json:"value,omitempty"`
	Argv        []string        `json:"argv"`
	Environment json.RawMessage `json:"environment,omitempty"`
	URIs        []uriJSON       `json:"uris"`
}

type uriJSON struct {
	Value      string `json:"value"`
	Executable bool   `json:"executable"`
}

// multiRole reports whether the framework has the MULTI_ROLE capability:
// such frameworks are shown with "roles", others with "role".
func multiRole(info *mesos.FrameworkInfo) bool {
	for _, c := range info.GetCapabilities() {
		if c.GetType() == mesos.FrameworkInfo_Capability_MULTI_ROLE {
			return true
		}
	}
	return false
}

// frameworkRole is the role a single-role framework's tasks default to.
func frameworkRole(info *mesos.FrameworkInfo) string {
	if multiRole(info) {
		if roles := info.GetRoles(); len(roles) == 1 {
			return roles[0]
		}
		return ""
	}
	return info.GetRole() // proto default "*"
}

// infoOf returns f's FrameworkInfo, never nil, so rendering tolerates a
// partially filled view.
func infoOf(f *master.FrameworkView) *mesos.FrameworkInfo {
	if f.Info == nil {
		return &mesos.FrameworkInfo{}
	}
	return f.Info
}

func frameworkSummary(f *master.FrameworkView) frameworkSummaryJSON {
	info := infoOf(f)
	caps := make([]string, 0, len(info.GetCapabilities()))
	for _, c := range info.GetCapabilities() {
		caps = append(caps, c.GetType().String())
	}
	return frameworkSummaryJSON{
		ID:               info.GetId().GetValue(),
		Name:             info.GetName(),
		UsedResources:    summary(f.Used),
		OfferedResources: summary(f.Offered),
		Capabilities:     caps,
		Hostname:         info.GetHostname(),
		WebuiURL:         info.GetWebuiUrl(),
		Active:           f.Active,
		Connected:        f.Connected,
		Recovered:        f.Recovered,
	}
}

func frameworkModel(f *master.FrameworkView) frameworkJSON {
	info := infoOf(f)
	role := frameworkRole(info)
	m := frameworkJSON{
		frameworkSummaryJSON: frameworkSummary(f),
		User:                 info.GetUser(),
		FailoverTimeout:      jnum(info.GetFailoverTimeout()),
		Checkpoint:           info.GetCheckpoint(),
		RegisteredTime:       secs(f.RegisteredTime),
		UnregisteredTime:     secs(f.UnregisteredTime),
		Principal:            info.Principal,
		Resources:            summary(f.Used, f.Offered),
		Tasks:                tasksModel(f.Tasks, role),
		UnreachableTasks:     tasksModel(f.UnreachableTasks, role),
		CompletedTasks:       tasksModel(f.CompletedTasks, role),
		Offers:               make([]offerJSON, 0, len(f.Offers)),
		Executors:            make([]executorJSON, 0, len(f.Executors)),
	}
	if !f.ReregisteredTime.IsZero() && !f.ReregisteredTime.Equal(f.RegisteredTime) {
		t := secs(f.ReregisteredTime)
		m.ReregisteredTime = &t
	}
	if multiRole(info) {
		m.Roles = append([]string{}, info.GetRoles()...)
	} else {
		r := info.GetRole()
		m.Role = &r
	}
	for _, o := range f.Offers {
		m.Offers = append(m.Offers, offerModel(o))
	}
	for _, e := range f.Executors {
		m.Executors = append(m.Executors, executorModel(e.Info, e.AgentID))
	}
	if info.Labels != nil {
		m.Labels = labelsJSON(info.Labels)
	}
	m.OfferConstraints = json.RawMessage("{}")
	if f.OfferConstraints != nil {
		m.OfferConstraints = protoJSON(f.OfferConstraints)
	}
	return m
}

func tasksModel(ts []*mesos.Task, role string) []taskJSON {
	out := make([]taskJSON, 0, len(ts))
	for _, t := range ts {
		if t == nil {
			continue
		}
		out = append(out, taskModel(t, role))
	}
	return out
}

func offerModel(o *mesos.Offer) offerJSON {
	alloc := json.RawMessage("{}")
	if o.AllocationInfo != nil {
		alloc = protoJSON(o.AllocationInfo)
	}
	return offerJSON{
		ID:             o.GetId().GetValue(),
		FrameworkID:    o.GetFrameworkId().GetValue(),
		AllocationInfo: alloc,
		SlaveID:        o.GetAgentId().GetValue(),
		Resources:      summary(o.GetResources()),
	}
}

func executorModel(e *mesos.ExecutorInfo, agentID string) executorJSON {
	if e == nil {
		e = &mesos.ExecutorInfo{}
	}
	m := executorJSON{
		ExecutorID:  e.GetExecutorId().GetValue(),
		Name:        e.GetName(),
		FrameworkID: e.GetFrameworkId().GetValue(),
		Command:     commandModel(e.GetCommand()),
		Resources:   summary(e.GetResources()),
		SlaveID:     agentID,
	}
	if len(e.GetResources()) > 0 {
		m.Role = allocationRole(e.GetResources(), "")
	}
	if e.Labels != nil {
		m.Labels = labelsJSON(e.Labels)
	}
	if e.Type != nil {
		m.Type = e.GetType().String()
	}
	return m
}

func commandModel(c *mesos.CommandInfo) commandJSON {
	m := commandJSON{
		Shell: c.Shell,
		Value: c.Value,
		Argv:  append([]string{}, c.GetArguments()...),
		URIs:  make([]uriJSON, 0, len(c.GetUris())),
	}
	if c.GetEnvironment() != nil {
		m.Environment = protoJSON(secrets.Redacted(c.GetEnvironment())) // a secret's data is shown nowhere
	}
	for _, u := range c.GetUris() {
		m.URIs = append(m.URIs, uriJSON{Value: u.GetValue(), Executable: u.GetExecutable()})
	}
	return m
}
