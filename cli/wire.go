package cli

// The JSON documents the CLI reads, with only the fields it uses. Field
// names are those of Mesos's classic endpoints (/master/state and friends).

// resourceSummary is a classic-endpoint resource object:
// {"cpus": 1, "mem": 128, "disk": 0, "gpus": 0, "ports": "[31000-31005]"}.
type resourceSummary map[string]any

// scalar returns a scalar resource's quantity (0 when absent or not a number).
func (r resourceSummary) scalar(name string) float64 {
	if v, ok := r[name].(float64); ok {
		return v
	}
	return 0
}

type taskStatus struct {
	State     string  `json:"state"`
	Timestamp float64 `json:"timestamp"`
}

type task struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	FrameworkID string          `json:"framework_id"`
	ExecutorID  string          `json:"executor_id"`
	SlaveID     string          `json:"slave_id"`
	State       string          `json:"state"`
	Role        string          `json:"role"`
	Resources   resourceSummary `json:"resources"`
	Statuses    []taskStatus    `json:"statuses"`
}

type tasksDoc struct {
	Tasks []task `json:"tasks"`
}

// taskCounts are the per-state counts /master/state-summary adds.
type taskCounts struct {
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

// live is the number of tasks that are not terminal.
func (c taskCounts) live() int { return c.Staging + c.Starting + c.Running + c.Killing }

type agentSummary struct {
	ID            string          `json:"id"`
	Hostname      string          `json:"hostname"`
	PID           string          `json:"pid"`
	Active        bool            `json:"active"`
	Resources     resourceSummary `json:"resources"`
	UsedResources resourceSummary `json:"used_resources"`
	taskCounts
	FrameworkIDs []string `json:"framework_ids"`
}

type stateSummaryDoc struct {
	Hostname string         `json:"hostname"`
	Slaves   []agentSummary `json:"slaves"`
}

type agentsDoc struct {
	Slaves []agentSummary `json:"slaves"`
}

type offer struct {
	ID        string          `json:"id"`
	SlaveID   string          `json:"slave_id"`
	Resources resourceSummary `json:"resources"`
}

type framework struct {
	ID               string          `json:"id"`
	Name             string          `json:"name"`
	Active           bool            `json:"active"`
	Connected        bool            `json:"connected"`
	Role             *string         `json:"role"`
	Roles            []string        `json:"roles"`
	UsedResources    resourceSummary `json:"used_resources"`
	OfferedResources resourceSummary `json:"offered_resources"`
	Tasks            []task          `json:"tasks"`
	UnreachableTasks []task          `json:"unreachable_tasks"`
	CompletedTasks   []task          `json:"completed_tasks"`
	Offers           []offer         `json:"offers"`
}

// roles returns the framework's roles whichever field carries them.
func (f framework) roles() []string {
	if len(f.Roles) > 0 {
		return f.Roles
	}
	if f.Role != nil {
		return []string{*f.Role}
	}
	return nil
}

type frameworksDoc struct {
	Frameworks          []framework `json:"frameworks"`
	CompletedFrameworks []framework `json:"completed_frameworks"`
}

type roleQuota struct {
	Guarantee map[string]float64 `json:"guarantee"`
	Limit     map[string]float64 `json:"limit"`
	Consumed  map[string]float64 `json:"consumed"`
}

type role struct {
	Name       string          `json:"name"`
	Weight     float64         `json:"weight"`
	Quota      roleQuota       `json:"quota"`
	Allocated  resourceSummary `json:"allocated"`
	Offered    resourceSummary `json:"offered"`
	Reserved   resourceSummary `json:"reserved"`
	Frameworks []string        `json:"frameworks"`
}

type rolesDoc struct {
	Roles []role `json:"roles"`
}

type agentCounts struct {
	Eligible            int `json:"eligible"`
	NothingFree         int `json:"nothing_free"`
	OverQuotaLimit      int `json:"over_quota_limit"`
	BelowMinAllocatable int `json:"below_min_allocatable"`
	OfferConstraints    int `json:"offer_constraints"`
	GPUAgent            int `json:"gpu_agent"`
	Filtered            int `json:"filtered"`
}

type roleExplanation struct {
	Role    string      `json:"role"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Agents  agentCounts `json:"agents"`
}

type explanation struct {
	FrameworkID string            `json:"framework_id"`
	Active      bool              `json:"active"`
	LastOffer   *float64          `json:"last_offer,omitempty"`
	Roles       []roleExplanation `json:"roles"`
}

// The agent's /state, down to the executors' sandboxes.
type agentTaskRef struct {
	ID string `json:"id"`
}

type agentExecutor struct {
	ID             string         `json:"id"`
	Directory      string         `json:"directory"`
	Tasks          []agentTaskRef `json:"tasks"`
	QueuedTasks    []agentTaskRef `json:"queued_tasks"`
	CompletedTasks []agentTaskRef `json:"completed_tasks"`
}

type agentFramework struct {
	ID                 string          `json:"id"`
	Executors          []agentExecutor `json:"executors"`
	CompletedExecutors []agentExecutor `json:"completed_executors"`
}

type agentState struct {
	ID                  string           `json:"id"`
	Frameworks          []agentFramework `json:"frameworks"`
	CompletedFrameworks []agentFramework `json:"completed_frameworks"`
}

// readResult is /files/read's answer.
type readResult struct {
	Data   string `json:"data"`
	Offset int64  `json:"offset"`
}
