package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/resources"
)

type describeOpts struct {
	framework *string
}

var describeSpec = spec{
	summary: "show one task: where it runs, its resources, its latest reason, message and health, and its status history",
	usage:   " TASK_ID",
	nargs:   1,
	setup: func(fs *flag.FlagSet) any {
		return &describeOpts{framework: fs.String("framework", "", "the task's framework ID (when several frameworks use the task ID)")}
	},
	run: runDescribe,
}

func runDescribe(e *env, c *invocation) error {
	o := c.opts.(*describeOpts)
	tasks, err := operatorTasks(c)
	if err != nil {
		return err
	}
	t, err := pickTask(tasks, c.args[0], *o.framework)
	if err != nil {
		return err
	}
	if c.json {
		data, err := codec.Marshal(codec.JSON, t)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, data, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err = c.stdout.Write(buf.Bytes())
		return err
	}
	return writeDescription(c, e.clock.Now(), t)
}

// pickTask chooses the task named id (of frameworkID, when given): a live
// one over an ended one with the same ID.
func pickTask(tasks []*mesos.Task, id, frameworkID string) (*mesos.Task, error) {
	var found []*mesos.Task
	fws := map[string]bool{}
	for _, t := range tasks {
		if t.GetTaskId().GetValue() != id || (frameworkID != "" && t.GetFrameworkId().GetValue() != frameworkID) {
			continue
		}
		found = append(found, t)
		fws[t.GetFrameworkId().GetValue()] = true
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("the master knows no task %q (a completed task leaves the master's bounded history eventually)", id)
	case len(fws) > 1:
		ids := make([]string, 0, len(fws))
		for f := range fws {
			ids = append(ids, f)
		}
		sort.Strings(ids)
		return nil, usageError{fmt.Errorf("task ID %q is used by frameworks %s: pass --framework", id, strings.Join(ids, ", "))}
	}
	best := found[len(found)-1]
	for _, t := range found {
		if !mesos.IsTerminal(t.GetState()) {
			best = t
		}
	}
	return best, nil
}

func writeDescription(c *invocation, now time.Time, t *mesos.Task) error {
	var latest *mesos.TaskStatus
	if n := len(t.GetStatuses()); n > 0 {
		latest = t.GetStatuses()[n-1]
	}
	res := "-"
	if r, err := resources.FromProto(t.GetResources()); err == nil && !r.IsEmpty() {
		res = r.String()
	}
	fields := [][2]string{
		{"Task", t.GetTaskId().GetValue()},
		{"Name", dash(t.GetName())},
		{"Framework", t.GetFrameworkId().GetValue()},
		{"Agent", t.GetAgentId().GetValue()},
		{"Executor", dash(t.GetExecutorId().GetValue())},
		{"User", dash(t.GetUser())},
		{"State", t.GetState().String()},
		{"Resources", res},
		{"Container", containerText(t.GetContainer())},
		{"Reason", dash(reasonText(latest))},
		{"Message", dash(latest.GetMessage())},
		{"Health", healthText(t, latest)},
	}
	for _, f := range fields {
		fmt.Fprintf(c.stdout, "%-10s %s\n", f[0]+":", f[1])
	}
	fmt.Fprintln(c.stdout, "History:")
	lines := make([][]string, 0, len(t.GetStatuses()))
	for _, s := range t.GetStatuses() {
		when := "-"
		if ts := s.GetTimestamp(); ts > 0 {
			when = fromSecs(ts).UTC().Format(time.RFC3339) + " (" + age(now, ts) + " ago)"
		}
		src := "-"
		if s.Source != nil {
			src = strings.TrimPrefix(s.GetSource().String(), "SOURCE_")
		}
		lines = append(lines, []string{"  " + when, s.GetState().String(), src, dash(reasonText(s)), health(s.Healthy), dash(oneLine(s.GetMessage()))})
	}
	return table(c.stdout, []string{"  TIME", "STATE", "SOURCE", "REASON", "HEALTH", "MESSAGE"}, lines)
}

func reasonText(s *mesos.TaskStatus) string {
	if s == nil || s.Reason == nil {
		return ""
	}
	return s.GetReason().String()
}

// healthText is the latest health, and the kind of check when the task has
// one ("no health check" otherwise).
func healthText(t *mesos.Task, latest *mesos.TaskStatus) string {
	hc := t.GetHealthCheck()
	if hc == nil {
		return "no health check"
	}
	kind := strings.ToLower(hc.GetType().String())
	if latest == nil || latest.Healthy == nil {
		return "not yet checked (" + kind + " check)"
	}
	return health(latest.Healthy) + " (" + kind + " check)"
}

func containerText(ci *mesos.ContainerInfo) string {
	if ci == nil {
		return "-"
	}
	s := ci.GetType().String()
	if img := ci.GetDocker().GetImage(); img != "" {
		s += " " + img
	} else if img := ci.GetMesos().GetImage(); img != nil {
		s += " " + img.GetDocker().GetName()
	}
	return s
}
