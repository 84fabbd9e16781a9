package cli

import (
	"flag"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

type killOpts struct {
	framework *string
}

var killSpec = spec{
	summary: "kill a task (its framework sees TASK_KILLED, as if it had killed it)",
	usage:   " TASK_ID",
	nargs:   1,
	setup: func(fs *flag.FlagSet) any {
		return &killOpts{framework: fs.String("framework", "", "the task's framework ID (when several frameworks use the task ID)")}
	},
	run: runKill,
}

func runKill(_ *env, c *invocation) error {
	o := c.opts.(*killOpts)
	t, err := findTask(c, c.args[0], *o.framework)
	if err != nil {
		return err
	}
	if terminal(t.State) {
		return fmt.Errorf("task %s of framework %s already ended (%s)", t.ID, t.FrameworkID, t.State)
	}
	form := url.Values{"frameworkId": {t.FrameworkID}, "taskId": {t.ID}}
	if err := c.master.do("POST", "/master/kill-task", []byte(form.Encode()), "application/x-www-form-urlencoded", nil); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, map[string]string{"task_id": t.ID, "framework_id": t.FrameworkID, "agent_id": t.SlaveID, "killed": "requested"})
	}
	fmt.Fprintf(c.stdout, "Killing task %s of framework %s on agent %s\n", t.ID, t.FrameworkID, t.SlaveID)
	return nil
}

// findTask finds one task by ID through /master/tasks; several frameworks
// using the ID need --framework.
func findTask(c *invocation, taskID, frameworkID string) (task, error) {
	q := url.Values{"task_id": {taskID}, "limit": {allTasksLimit}}
	if frameworkID != "" {
		q.Set("framework_id", frameworkID)
	}
	var doc tasksDoc
	if err := c.master.getJSON("/master/tasks?"+q.Encode(), &doc); err != nil {
		return task{}, err
	}
	if len(doc.Tasks) == 0 {
		return task{}, fmt.Errorf("the master knows no task %q (a completed task leaves the master's bounded history eventually)", taskID)
	}
	fws := map[string]bool{}
	for _, t := range doc.Tasks {
		fws[t.FrameworkID] = true
	}
	if len(fws) > 1 {
		ids := make([]string, 0, len(fws))
		for id := range fws {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return task{}, usageError{fmt.Errorf("task ID %q is used by frameworks %s: pass --framework", taskID, strings.Join(ids, ", "))}
	}
	// A task ID may repeat within a framework (a relaunch after it ended):
	// the live one, else the last listed.
	best := doc.Tasks[len(doc.Tasks)-1]
	for _, t := range doc.Tasks {
		if !terminal(t.State) {
			best = t
		}
	}
	return best, nil
}
