package endpoints

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"

	"mezzo/api/mesos"
	"mezzo/internal/authorizer"
	"mezzo/master"
)

// stateJSON is /master/state (readonly_handler.cpp state()).
type stateJSON struct {
	Version                string            `json:"version"`
	GitSHA                 string            `json:"git_sha,omitempty"`
	BuildDate              string            `json:"build_date"`
	BuildTime              jnum              `json:"build_time"`
	BuildUser              string            `json:"build_user"`
	StartTime              jnum              `json:"start_time"`
	ElectedTime            *jnum             `json:"elected_time,omitempty"`
	ID                     string            `json:"id"`
	PID                    string            `json:"pid"`
	Hostname               string            `json:"hostname"`
	Capabilities           []string          `json:"capabilities"`
	ActivatedSlaves        jnum              `json:"activated_slaves"`
	DeactivatedSlaves      jnum              `json:"deactivated_slaves"`
	UnreachableSlaves      jnum              `json:"unreachable_slaves"`
	Domain                 json.RawMessage   `json:"domain,omitempty"`
	Leader                 string            `json:"leader,omitempty"`
	LeaderInfo             *masterInfoJSON   `json:"leader_info,omitempty"`
	Cluster                string            `json:"cluster,omitempty"`
	LogDir                 string            `json:"log_dir,omitempty"`
	ExternalLogFile        string            `json:"external_log_file,omitempty"`
	Flags                  map[string]string `json:"flags"`
	Slaves                 []agentJSON       `json:"slaves"`
	RecoveredSlaves        []agentInfoJSON   `json:"recovered_slaves"`
	Frameworks             []frameworkJSON   `json:"frameworks"`
	CompletedFrameworks    []frameworkJSON   `json:"completed_frameworks"`
	OrphanTasks            []taskJSON        `json:"orphan_tasks"`
	UnregisteredFrameworks []string          `json:"unregistered_frameworks"`
}

// masterInfoJSON is Mesos's json(MasterInfo) used for leader_info.
type masterInfoJSON struct {
	ID       string          `json:"id"`
	PID      string          `json:"pid"`
	Port     uint32          `json:"port"`
	Hostname string          `json:"hostname"`
	Domain   json.RawMessage `json:"domain,omitempty"`
}

func masterInfoModel(mi *mesos.MasterInfo) *masterInfoJSON {
	m := &masterInfoJSON{ID: mi.GetId(), PID: mi.GetPid(), Port: mi.GetPort(), Hostname: mi.GetHostname()}
	if mi.Domain != nil {
		m.Domain = protoJSON(mi.Domain)
	}
	return m
}

func flagMap(s *master.Snapshot) map[string]string {
	out := make(map[string]string, len(s.Flags))
	for _, f := range s.Flags {
		out[f.Name] = f.Value
	}
	return out
}

func (h *handlers) stateModel(s *master.Snapshot) stateJSON {
	b := buildInfo()
	flags := flagMap(s)
	m := stateJSON{
		Version:                h.version,
		GitSHA:                 b.GitSHA,
		BuildDate:              b.BuildDate,
		BuildTime:              jnum(b.BuildTime),
		BuildUser:              b.BuildUser,
		StartTime:              secs(s.StartTime),
		ID:                     s.Info.GetId(),
		PID:                    s.Info.GetPid(),
		Hostname:               s.Info.GetHostname(),
		Capabilities:           []string{},
		Cluster:                flags["cluster"],
		LogDir:                 flags["log_dir"],
		ExternalLogFile:        flags["external_log_file"],
		Flags:                  flags,
		Slaves:                 make([]agentJSON, 0, len(s.Agents)),
		RecoveredSlaves:        []agentInfoJSON{},
		Frameworks:             make([]frameworkJSON, 0, len(s.Frameworks)),
		CompletedFrameworks:    make([]frameworkJSON, 0, len(s.CompletedFrameworks)),
		OrphanTasks:            tasksModel(s.OrphanTasks, ""),
		UnregisteredFrameworks: []string{},
	}
	if s.Elected && !s.ElectedTime.IsZero() {
		t := secs(s.ElectedTime)
		m.ElectedTime = &t
	}
	for _, c := range s.Info.GetCapabilities() {
		m.Capabilities = append(m.Capabilities, c.GetType().String())
	}
	for _, a := range s.Agents {
		if a.Active {
			m.ActivatedSlaves++
		} else {
			m.DeactivatedSlaves++
		}
		m.Slaves = append(m.Slaves, agentModel(a))
	}
	m.UnreachableSlaves = jnum(len(s.UnreachableAgents))
	m.RecoveredSlaves = recoveredModel(s.RecoveredAgents)
	if s.Info.GetDomain() != nil {
		m.Domain = protoJSON(s.Info.GetDomain())
	}
	if s.Leader != nil {
		m.Leader = s.Leader.GetPid()
		m.LeaderInfo = masterInfoModel(s.Leader)
	}
	for _, f := range s.Frameworks {
		m.Frameworks = append(m.Frameworks, frameworkModel(f))
	}
	for _, f := range s.CompletedFrameworks {
		m.CompletedFrameworks = append(m.CompletedFrameworks, frameworkModel(f))
	}
	return m
}

// state serves /master/state.
func (h *handlers) state(w http.ResponseWriter, r *http.Request) {
	h.writeJSON(w, r, h.stateModel(h.snapshotFor(r)))
}

// taskCountsJSON is the per-state task count /master/state-summary adds to
// each agent and framework. Mesos reports exactly these ten states.
type taskCountsJSON struct {
	Staging     int `json:"TASK_STAGING"`
	Starting    int `json:"TASK_STARTING"`
	Running     int `json:"TASK_RUNNING"`
	Killing     int `json:"TASK_KILLING"`
	Finished    int `json:"TASK_FINISHED"`
	Killed      int `json:"TASK_KILLED"`
	Failed      int `json:"TASK_FAILED"`
	Lost        int `json:"TASK_LOST"`
	Error       int `json:"TASK_ERROR"`
	Unreachable int `json:"TASK_UNREACHABLE"`
}

func (c *taskCountsJSON) count(st mesos.TaskState) {
	switch st {
	case mesos.TaskState_TASK_STAGING:
		c.Staging++
	case mesos.TaskState_TASK_STARTING:
		c.Starting++
	case mesos.TaskState_TASK_RUNNING:
		c.Running++
	case mesos.TaskState_TASK_KILLING:
		c.Killing++
	case mesos.TaskState_TASK_FINISHED:
		c.Finished++
	case mesos.TaskState_TASK_KILLED:
		c.Killed++
	case mesos.TaskState_TASK_FAILED:
		c.Failed++
	case mesos.TaskState_TASK_LOST:
		c.Lost++
	case mesos.TaskState_TASK_ERROR:
		c.Error++
	case mesos.TaskState_TASK_UNREACHABLE:
		c.Unreachable++
	}
}

type agentSummaryJSON struct {
	agentJSON
	taskCountsJSON
	FrameworkIDs []string `json:"framework_ids"`
}

type frameworkSummaryCountsJSON struct {
	frameworkSummaryJSON
	taskCountsJSON
	SlaveIDs []string `json:"slave_ids"`
}

type stateSummaryJSON struct {
	Hostname   string                       `json:"hostname"`
	Cluster    string                       `json:"cluster,omitempty"`
	Slaves     []agentSummaryJSON           `json:"slaves"`
	Frameworks []frameworkSummaryCountsJSON `json:"frameworks"`
}

// stateSummaryModel computes the counts and the agent↔framework mapping from
// the registered frameworks' tasks (active, unreachable and completed), as
// Mesos does, so the two halves of the document agree.
func stateSummaryModel(s *master.Snapshot) stateSummaryJSON {
	agentCounts := map[string]*taskCountsJSON{}
	agentFws := map[string]map[string]bool{}
	m := stateSummaryJSON{
		Hostname:   s.Info.GetHostname(),
		Cluster:    flagMap(s)["cluster"],
		Slaves:     make([]agentSummaryJSON, 0, len(s.Agents)),
		Frameworks: make([]frameworkSummaryCountsJSON, 0, len(s.Frameworks)),
	}
	for _, f := range s.Frameworks {
		fid := f.Info.GetId().GetValue()
		fm := frameworkSummaryCountsJSON{frameworkSummaryJSON: frameworkSummary(f)}
		agents := map[string]bool{}
		for _, group := range [][]*mesos.Task{f.Tasks, f.UnreachableTasks, f.CompletedTasks} {
			for _, t := range group {
				aid := t.GetAgentId().GetValue()
				fm.count(t.GetState())
				agents[aid] = true
				if agentCounts[aid] == nil {
					agentCounts[aid] = &taskCountsJSON{}
					agentFws[aid] = map[string]bool{}
				}
				agentCounts[aid].count(t.GetState())
				agentFws[aid][fid] = true
			}
		}
		fm.SlaveIDs = sortedKeys(agents)
		m.Frameworks = append(m.Frameworks, fm)
	}
	for _, a := range s.Agents {
		aid := a.Info.GetId().GetValue()
		am := agentSummaryJSON{agentJSON: agentModel(a), FrameworkIDs: sortedKeys(agentFws[aid])}
		if c := agentCounts[aid]; c != nil {
			am.taskCountsJSON = *c
		}
		m.Slaves = append(m.Slaves, am)
	}
	return m
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stateSummary serves /master/state-summary.
func (h *handlers) stateSummary(w http.ResponseWriter, r *http.Request) {
	h.writeJSON(w, r, stateSummaryModel(h.snapshotFor(r)))
}

// frameworks serves /master/frameworks?framework_id=.
func (h *handlers) frameworks(w http.ResponseWriter, r *http.Request) {
	s := h.snapshotFor(r)
	want, filter := queryValue(r, "framework_id")
	keep := func(f *master.FrameworkView) bool {
		return !filter || f.Info.GetId().GetValue() == want
	}
	out := struct {
		Frameworks             []frameworkJSON `json:"frameworks"`
		CompletedFrameworks    []frameworkJSON `json:"completed_frameworks"`
		UnregisteredFrameworks []string        `json:"unregistered_frameworks"`
	}{[]frameworkJSON{}, []frameworkJSON{}, []string{}}
	for _, f := range s.Frameworks {
		if keep(f) {
			out.Frameworks = append(out.Frameworks, frameworkModel(f))
		}
	}
	for _, f := range s.CompletedFrameworks {
		if keep(f) {
			out.CompletedFrameworks = append(out.CompletedFrameworks, frameworkModel(f))
		}
	}
	h.writeJSON(w, r, out)
}

// slaves serves /master/slaves?slave_id=.
func (h *handlers) slaves(w http.ResponseWriter, r *http.Request) {
	s := h.snapshotFor(r)
	want, filter := queryValue(r, "slave_id")
	out := struct {
		Slaves          []agentFullJSON `json:"slaves"`
		RecoveredSlaves []agentInfoJSON `json:"recovered_slaves"`
	}{[]agentFullJSON{}, []agentInfoJSON{}}
	for _, a := range s.Agents {
		if !filter || a.Info.GetId().GetValue() == want {
			out.Slaves = append(out.Slaves, agentFullModel(a))
		}
	}
	if !filter {
		out.RecoveredSlaves = recoveredModel(s.RecoveredAgents)
	}
	h.writeJSON(w, r, out)
}

// queryValue returns a query parameter and whether it was given.
func queryValue(r *http.Request, key string) (string, bool) {
	vs, ok := r.URL.Query()[key]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// DefaultTaskLimit is /master/tasks' default page size (Mesos TASK_LIMIT).
const DefaultTaskLimit = 100

// tasks serves /master/tasks?framework_id=&task_id=&limit=&offset=&order=.
// Tasks of registered and completed frameworks (active, unreachable and
// completed) are sorted by their first status's timestamp, newest first
// unless order=asc; tasks without statuses sort last (first for asc).
func (h *handlers) tasks(w http.ResponseWriter, r *http.Request) {
	s := h.snapshotFor(r)
	limit, offset := DefaultTaskLimit, 0
	unlimited := false
	if v, ok := queryValue(r, "limit"); ok {
		// As Mesos: a value that is not an integer means the default; a
		// negative one wraps to "no limit" there, and means it here.
		if n, err := strconv.Atoi(v); err == nil {
			if n < 0 {
				unlimited = true
			} else {
				limit = n
			}
		}
	}
	if v, ok := queryValue(r, "offset"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			offset = n
		}
	}
	order, _ := queryValue(r, "order")
	fwID, byFw := queryValue(r, "framework_id")
	taskID, byTask := queryValue(r, "task_id")

	type entry struct {
		t    *mesos.Task
		role string
	}
	var all []entry
	for _, group := range [][]*master.FrameworkView{s.Frameworks, s.CompletedFrameworks} {
		for _, f := range group {
			if byFw && f.Info.GetId().GetValue() != fwID {
				continue
			}
			role := frameworkRole(infoOf(f))
			for _, ts := range [][]*mesos.Task{f.Tasks, f.UnreachableTasks, f.CompletedTasks} {
				for _, t := range ts {
					if byTask && t.GetTaskId().GetValue() != taskID {
						continue
					}
					all = append(all, entry{t, role})
				}
			}
		}
	}
	asc := order == "asc"
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i].t.GetStatuses(), all[j].t.GetStatuses()
		switch {
		case len(a) == 0 && len(b) == 0:
			return false
		case len(a) == 0:
			return asc
		case len(b) == 0:
			return !asc
		}
		if asc {
			return a[0].GetTimestamp() < b[0].GetTimestamp()
		}
		return a[0].GetTimestamp() > b[0].GetTimestamp()
	})
	out := struct {
		Tasks []taskJSON `json:"tasks"`
	}{[]taskJSON{}}
	if offset >= 0 && offset < len(all) {
		end := len(all)
		if !unlimited && offset+limit < end {
			end = offset + limit
		}
		for _, e := range all[offset:end] {
			out.Tasks = append(out.Tasks, taskModel(e.t, e.role))
		}
	}
	h.writeJSON(w, r, out)
}

type roleJSON struct {
	Name       string         `json:"name"`
	Weight     jnum           `json:"weight"`
	Quota      roleQuotaJSON  `json:"quota"`
	Resources  map[string]any `json:"resources"`
	Allocated  map[string]any `json:"allocated"`
	Offered    map[string]any `json:"offered"`
	Reserved   map[string]any `json:"reserved"`
	Frameworks []string       `json:"frameworks"`
}

// roleQuotaJSON is a role's quota in /master/roles (Mesos 1.9+):
// guarantee, limit and consumed as {name: quantity}; empty objects for a
// role without quota.
type roleQuotaJSON struct {
	Role      string          `json:"role"`
	Guarantee map[string]jnum `json:"guarantee"`
	Limit     map[string]jnum `json:"limit"`
	Consumed  map[string]jnum `json:"consumed"`
}

func roleQuotaModel(r *master.RoleView) roleQuotaJSON {
	q := roleQuotaJSON{Role: r.Name, Guarantee: map[string]jnum{}, Limit: map[string]jnum{}, Consumed: map[string]jnum{}}
	if r.Quota == nil {
		return q
	}
	for k, v := range r.Quota.Guarantees {
		q.Guarantee[k] = jnum(v)
	}
	for k, v := range r.Quota.Limits {
		q.Limit[k] = jnum(v)
	}
	for k, v := range r.Quota.Consumed {
		q.Consumed[k] = jnum(v)
	}
	return q
}

// roles serves /master/roles. A role's "resources" is what is allocated to
// it plus what it is offered, as in Mesos. The weight defaults to 1.0.
func (h *handlers) roles(w http.ResponseWriter, r *http.Request) {
	s := h.snapshotFor(r)
	out := struct {
		Roles []roleJSON `json:"roles"`
	}{make([]roleJSON, 0, len(s.Roles))}
	for _, role := range s.Roles {
		weight := role.Weight
		if weight <= 0 {
			weight = 1
		}
		out.Roles = append(out.Roles, roleJSON{
			Name:       role.Name,
			Weight:     jnum(weight),
			Quota:      roleQuotaModel(role),
			Resources:  summary(role.Allocated, role.Offered),
			Allocated:  summary(role.Allocated),
			Offered:    summary(role.Offered),
			Reserved:   summary(role.Reserved),
			Frameworks: append([]string{}, role.Frameworks...),
		})
	}
	h.writeJSON(w, r, out)
}

// flags serves /master/flags: {"flags": {name: value}}.
func (h *handlers) flags(w http.ResponseWriter, r *http.Request) {
	if !h.allow(w, r, authorizer.ViewFlags, authorizer.AnyObject) {
		return
	}
	h.writeJSON(w, r, struct {
		Flags map[string]string `json:"flags"`
	}{flagMap(h.snapshot())})
}

// recoveredModel lists the agents a newly elected master recovered from
// the registry that have not re-registered yet. The registry keeps their
// infos encoded, so only the ID is rendered.
func recoveredModel(ids []string) []agentInfoJSON {
	out := make([]agentInfoJSON, 0, len(ids))
	for _, id := range ids {
		out = append(out, agentInfoJSON{ID: id, Attributes: map[string]any{}})
	}
	return out
}
