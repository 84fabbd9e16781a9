package cli

import (
	"flag"
	"fmt"
	"strings"
)

type frameworksOpts struct{ all *bool }

var frameworksSpec = spec{
	summary: "list frameworks (ID, NAME, ROLE(S), ACTIVE, TASKS, CPUS, MEM)",
	setup: func(fs *flag.FlagSet) any {
		return &frameworksOpts{all: fs.Bool("all", false, "include completed (torn down) frameworks")}
	},
	run: runFrameworks,
}

// frameworkRow is one line of `mezzo frameworks`, also its --json element.
type frameworkRow struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Roles     []string `json:"roles"`
	Active    bool     `json:"active"`
	Connected bool     `json:"connected"`
	Completed bool     `json:"completed,omitempty"`
	Tasks     int      `json:"tasks"` // non-terminal tasks
	Offers    int      `json:"offers"`
	CPUs      float64  `json:"cpus"` // used
	Mem       float64  `json:"mem"`  // used
}

func runFrameworks(e *env, c *invocation) error {
	o := c.opts.(*frameworksOpts)
	var doc frameworksDoc
	if err := c.master.getJSON("/master/frameworks", &doc); err != nil {
		return err
	}
	rows := []frameworkRow{}
	add := func(f framework, completed bool) {
		roles := f.roles()
		if roles == nil {
			roles = []string{}
		}
		rows = append(rows, frameworkRow{
			ID: f.ID, Name: f.Name, Roles: roles, Active: f.Active, Connected: f.Connected,
			Completed: completed, Tasks: len(f.Tasks), Offers: len(f.Offers),
			CPUs: f.UsedResources.scalar("cpus"), Mem: f.UsedResources.scalar("mem"),
		})
	}
	for _, f := range doc.Frameworks {
		add(f, false)
	}
	if *o.all {
		for _, f := range doc.CompletedFrameworks {
			add(f, true)
		}
	}
	if c.output == "name" {
		for _, r := range rows {
			fmt.Fprintln(c.stdout, r.ID)
		}
		return nil
	}
	if c.json {
		return writeJSON(c.stdout, rows)
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		active := yesNo(r.Active)
		if r.Completed {
			active = "completed"
		} else if !r.Connected {
			active += " (disconnected)"
		}
		lines = append(lines, []string{r.ID, dash(r.Name), dash(strings.Join(r.Roles, ",")), active,
			fmt.Sprint(r.Tasks), num(r.CPUs), mem(r.Mem)})
	}
	return table(c.stdout, []string{"ID", "NAME", "ROLES", "ACTIVE", "TASKS", "CPUS", "MEM"}, lines)
}
