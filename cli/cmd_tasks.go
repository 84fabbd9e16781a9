package cli

import (
	"flag"
	"fmt"
	"net/url"
	"strings"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
)

type tasksOpts struct {
	framework *string
	state     *string
	all       *bool
}

var tasksSpec = spec{
	summary: "list tasks (ID, NAME, FRAMEWORK, AGENT, STATE, CPUS, MEM, AGE; -o wide adds ROLE, HEALTH, REASON, MESSAGE)",
	setup: func(fs *flag.FlagSet) any {
		return &tasksOpts{
			framework: fs.String("framework", "", "only tasks of this framework ID"),
			state:     fs.String("state", "", "only tasks in this state (TASK_RUNNING, running, ...)"),
			all:       fs.Bool("all", false, "include finished, failed, killed, lost and errored tasks"),
		}
	},
	run: runTasks,
}

// taskStates are the states a task can be in, in lifecycle order.
var taskStates = []string{
	"TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_FINISHED",
	"TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR", "TASK_DROPPED",
	"TASK_UNREACHABLE", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_UNKNOWN",
}

// normalizeState accepts "TASK_RUNNING", "task_running" or "running".
func normalizeState(s string) (string, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(u, "TASK_") {
		u = "TASK_" + u
	}
	for _, st := range taskStates {
		if st == u {
			return u, nil
		}
	}
	return "", fmt.Errorf("--state=%q: unknown task state; expecting one of %s", s, strings.Join(taskStates, ", "))
}

// allTasksLimit asks /master/tasks for every task: the endpoint pages with
// a default limit of 100, and Mesos rejects a negative limit.
const allTasksLimit = "2147483647"

// taskRow is one line of `mezzo tasks`, also its --json element.
type taskRow struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	FrameworkID string  `json:"framework_id"`
	AgentID     string  `json:"agent_id"`
	State       string  `json:"state"`
	Role        string  `json:"role,omitempty"`
	CPUs        float64 `json:"cpus"`
	Mem         float64 `json:"mem"`
	Started     float64 `json:"started,omitempty"` // first status, seconds since the epoch
	// The latest status's details (-o json and -o wide), from the
	// operator API's GET_TASKS: the classic /master/tasks leaves them out.
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Source  string `json:"source,omitempty"`
	Healthy *bool  `json:"healthy,omitempty"`
}

func runTasks(e *env, c *invocation) error {
	o := c.opts.(*tasksOpts)
	want := ""
	if *o.state != "" {
		st, err := normalizeState(*o.state)
		if err != nil {
			return usageError{err}
		}
		want = st
	}
	q := url.Values{"limit": {allTasksLimit}}
	if *o.framework != "" {
		q.Set("framework_id", *o.framework)
	}
	var doc tasksDoc
	if err := c.master.getJSON("/master/tasks?"+q.Encode(), &doc); err != nil {
		return err
	}
	rows := []taskRow{}
	for _, t := range doc.Tasks {
		switch {
		case want != "" && t.State != want:
			continue
		case want == "" && !*o.all && terminal(t.State):
			continue
		}
		rows = append(rows, taskRow{
			ID: t.ID, Name: t.Name, FrameworkID: t.FrameworkID, AgentID: t.SlaveID,
			State: t.State, Role: t.Role,
			CPUs: t.Resources.scalar("cpus"), Mem: t.Resources.scalar("mem"),
			Started: started(t),
		})
	}
	if c.output == "name" {
		for _, r := range rows {
			fmt.Fprintln(c.stdout, r.ID)
		}
		return nil
	}
	if c.json || c.output == "wide" {
		if err := addLatestStatus(c, rows); err != nil {
			return err
		}
	}
	if c.json {
		return writeJSON(c.stdout, rows)
	}
	now := e.clock.Now()
	header := []string{"ID", "NAME", "FRAMEWORK", "AGENT", "STATE", "CPUS", "MEM", "AGE"}
	if c.output == "wide" {
		header = append(header, "ROLE", "HEALTH", "REASON", "MESSAGE")
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		line := []string{r.ID, dash(r.Name), r.FrameworkID, r.AgentID, r.State, num(r.CPUs), mem(r.Mem), age(now, r.Started)}
		if c.output == "wide" {
			line = append(line, dash(r.Role), health(r.Healthy), dash(r.Reason), dash(oneLine(r.Message)))
		}
		lines = append(lines, line)
	}
	return table(c.stdout, header, lines)
}

// addLatestStatus fills each row's message, reason, source and health from
// the latest status GET_TASKS reports for it.
func addLatestStatus(c *invocation, rows []taskRow) error {
	if len(rows) == 0 {
		return nil
	}
	tasks, err := operatorTasks(c)
	if err != nil {
		return err
	}
	byID := map[[2]string]*mesos.TaskStatus{}
	for _, t := range tasks {
		if n := len(t.GetStatuses()); n > 0 {
			byID[[2]string{t.GetFrameworkId().GetValue(), t.GetTaskId().GetValue()}] = t.GetStatuses()[n-1]
		}
	}
	for i := range rows {
		st := byID[[2]string{rows[i].FrameworkID, rows[i].ID}]
		if st == nil {
			continue
		}
		rows[i].Message = st.GetMessage()
		if st.Reason != nil {
			rows[i].Reason = st.GetReason().String()
		}
		if st.Source != nil {
			rows[i].Source = st.GetSource().String()
		}
		rows[i].Healthy = st.Healthy
	}
	return nil
}

// operatorTasks reads every task the leader knows (live, unreachable and
// completed) through the operator API's GET_TASKS, whose statuses keep
// their message, reason, source and health.
func operatorTasks(c *invocation) ([]*mesos.Task, error) {
	resp, err := c.operatorCall(&masterpb.Call{Type: masterpb.Call_GET_TASKS.Enum()})
	if err != nil {
		return nil, err
	}
	g := resp.GetGetTasks()
	var out []*mesos.Task
	for _, group := range [][]*mesos.Task{g.GetTasks(), g.GetUnreachableTasks(), g.GetCompletedTasks(), g.GetOrphanTasks()} {
		out = append(out, group...)
	}
	return out, nil
}

// health renders a status's healthy flag: healthy, unhealthy or "-".
func health(h *bool) string {
	switch {
	case h == nil:
		return "-"
	case *h:
		return "healthy"
	}
	return "unhealthy"
}

// oneLine keeps a message on one table line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
