package e2e

import (
	"strings"
	"testing"
)

// The walk-through in docs/maintenance.md is a script a user pastes: run it
// as written (on free ports, with the freshly built mezzo first on the
// PATH) and require it to print what the document promises.
func TestMaintenanceDocWalkthrough(t *testing.T) {
	out := runDocWalkthrough(t, "maintenance.md")
	mustContain(t, out,
		"Maintenance schedule updated: 1 window(s), 1 machine(s).",
		"node1/127.0.0.1  DRAINING",
		"Machines DOWN: their agents are shut down",
		"sleeper TASK_LOST",
		"agent exited",
		"node1/127.0.0.1  DOWN",
		"Machine is `DOWN`",
		"Machines UP: they left the schedule",
		"No machine is in maintenance.",
		"node1")
	if n := strings.Count(out, "node1/127.0.0.1  DOWN"); n != 2 {
		t.Fatalf("DOWN shown %d times, want 2 (before and after the failover):\n%s", n, out)
	}
}
