package cli

import "fmt"

var agentsSpec = spec{
	summary: "list agents (ID, HOSTNAME, CPUS used/total, MEM used/total, TASKS, ACTIVE, DRAIN; -o wide adds ADDRESS, DISK, GPUS, REV CPUS); drain, deactivate or reactivate one (operator DRAIN_AGENT, DEACTIVATE_AGENT, REACTIVATE_AGENT)",
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
	// Revocable cpus (docs/oversubscription.md): the agent's estimate
	// and, with lending, its lendable reservations; used by tasks.
	RevCPUsUsed  float64 `json:"cpus_revocable_used"`
	RevCPUsTotal float64 `json:"cpus_revocable_total"`
	Tasks        int     `json:"tasks"` // staging, starting, running or killing
	Active       bool    `json:"active"`
	// Deactivated and Drain (DRAINING, DRAINED or "") come from
	// /master/slaves, as Mesos's deactivated and drain_info.state.
	Deactivated bool   `json:"deactivated"`
	Drain       string `json:"drain,omitempty"`

	diskUsed, diskTotal, gpusUsed, gpusTotal float64 // -o wide
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
			RevCPUsUsed: a.UsedResources.scalar("cpus_revocable"), RevCPUsTotal: a.Resources.scalar("cpus_revocable"),
			Tasks: a.live(), Active: a.Active, Deactivated: d.Deactivated, Drain: d.DrainInfo.State,
			diskUsed: a.UsedResources.scalar("disk"), diskTotal: a.Resources.scalar("disk"),
			gpusUsed: a.UsedResources.scalar("gpus"), gpusTotal: a.Resources.scalar("gpus"),
		})
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
	header := []string{"ID", "HOSTNAME", "CPUS", "MEM", "TASKS", "ACTIVE", "DRAIN"}
	if c.output == "wide" {
		header = append(header, "ADDRESS", "DISK", "GPUS", "REV CPUS")
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		line := []string{r.ID, r.Hostname,
			num(r.CPUsUsed) + "/" + num(r.CPUsTotal),
			mem(r.MemUsed) + "/" + mem(r.MemTotal),
			fmt.Sprint(r.Tasks), yesNo(r.Active), drainColumn(r)}
		if c.output == "wide" {
			addr, err := agentAddr(r.PID)
			if err != nil {
				addr = "-"
			}
			line = append(line, addr, mem(r.diskUsed)+"/"+mem(r.diskTotal), num(r.gpusUsed)+"/"+num(r.gpusTotal),
				num(r.RevCPUsUsed)+"/"+num(r.RevCPUsTotal))
		}
		lines = append(lines, line)
	}
	return table(c.stdout, header, lines)
}
