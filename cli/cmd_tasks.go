package cli

import (
	"flag"
	"fmt"
	"net/url"
	"strings"
)

type tasksOpts struct {
	framework *string
	state     *string
	all       *bool
}

var tasksSpec = spec{
	summary: "list tasks (ID, NAME, FRAMEWORK, AGENT, STATE, CPUS, MEM, AGE)",
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
	if c.json {
		return writeJSON(c.stdout, rows)
	}
	now := e.clock.Now()
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		lines = append(lines, []string{r.ID, dash(r.Name), r.FrameworkID, r.AgentID, r.State, num(r.CPUs), mem(r.Mem), age(now, r.Started)})
	}
	return table(c.stdout, []string{"ID", "NAME", "FRAMEWORK", "AGENT", "STATE", "CPUS", "MEM", "AGE"}, lines)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
