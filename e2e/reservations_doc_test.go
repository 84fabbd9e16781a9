package e2e

import (
	"strings"
	"testing"
)

// The walk-through in docs/reservations.md is a script a user pastes: run
// it as written (on free ports, with the freshly built mezzo first on the
// PATH) and require it to succeed and print what the document promises.
func TestReservationsDocWalkthrough(t *testing.T) {
	// The script's exit code is its last line's (stopping the processes,
	// one of which the walk-through killed already): the output says
	// whether every step did what the document promises.
	out := runDocWalkthrough(t, "reservations.md")
	mustContain(t, out,
		"Reserved cpus(db):1 (principal ops)",
		"Created volume pgdata (512MB, role db)",
		"writer TASK_RUNNING",
		"reader TASK_FINISHED",
		"Destroyed volume pgdata (role db)",
		"Unreserved cpus(db):1 (principal ops)")
	if n := strings.Count(out, "reader TASK_FINISHED"); n != 2 {
		t.Fatalf("the reader finished %d times, want 2 (before and after the failovers):\n%s", n, out)
	}
}
