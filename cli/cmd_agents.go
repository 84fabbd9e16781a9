package cli

import "fmt"

var agentsSpec = spec{
	summary: "list agents (ID, HOSTNAME, CPUS used/total, MEM used/total, TASKS, ACTIVE, DRAIN); drain, deactivate or reactivate one (operator DRAIN_AGENT, DEACTIVATE_AGENT, REACTIVATE_AGENT)",
	usage:   " [drain|deactivate|reactivate AGENT_ID]",
	maxargs: 2,
	setup:   drainFlags,
	run:     runAgents,
}

// agentRow is one line of `mezzo agents`, also its --json element.
type agentRow struct {
	ID        string  `json:"id"`
	Hostname  string  `json:"hostname"`
	PID       string  `json:"pid"`
	CPUsUsed  float64 `json:"cpus_used"`
	CPUsTotal float64 `json:"cpus_total"`
	MemUsed   float64 `json:"mem_used"`
	MemTotal  float64 `json:"mem_total"`
	Tasks     int     `json:"tasks"` // staging, starting, running or killing
	Active    bool    `json:"active"`
	// Deactivated and Drain (DRAINING, DRAINED or "") come from
	// /master/slaves, as Mesos's deactivated and drain_info.state.
	Deactivated bool   `json:"deactivated"`
	Drain       string `json:"drain,omitempty"`
}

func runAgents(e *env, c *invocation) error {
	if len(c.args) > 0 {
		return runAgentAction(e, c)
	}
	// state-summary carries per-agent task counts; /master/slaves does not,
	// but it has the drain state.
	var doc stateSummaryDoc
	if err := c.master.getJSON("/master/state-summary", &doc); err != nil {
		return err
	}
	drains, err := c.drainStates("")
	if err != nil {
		return err
	}
	rows := make([]agentRow, 0, len(doc.Slaves))
	for _, a := range doc.Slaves {
		d := drains[a.ID]
		rows = append(rows, agentRow{
			ID: a.ID, Hostname: a.Hostname, PID: a.PID,
			CPUsUsed: a.UsedResources.scalar("cpus"), CPUsTotal: a.Resources.scalar("cpus"),
			MemUsed: a.UsedResources.scalar("mem"), MemTotal: a.Resources.scalar("mem"),
			Tasks: a.live(), Active: a.Active, Deactivated: d.Deactivated, Drain: d.DrainInfo.State,
		})
	}
	if c.json {
		return writeJSON(c.stdout, rows)
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		lines = append(lines, []string{r.ID, r.Hostname,
			num(r.CPUsUsed) + "/" + num(r.CPUsTotal),
			mem(r.MemUsed) + "/" + mem(r.MemTotal),
			fmt.Sprint(r.Tasks), yesNo(r.Active), drainColumn(r)})
	}
	return table(c.stdout, []string{"ID", "HOSTNAME", "CPUS", "MEM", "TASKS", "ACTIVE", "DRAIN"}, lines)
}
