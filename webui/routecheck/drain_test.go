package routecheck

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mezzo/master"
)

// An agent's page renders its drain (in node over testdata/dom.js) from a
// real master's /master/state: the agent drained with DRAIN_AGENT (no
// task, so DRAINED at once) shows its state and the drain's config, and
// the reservations page still renders around it.
func TestDrainedAgentRenders(t *testing.T) {
	nodeBin := needNode(t, "node is not installed: the pages are not rendered")
	m, mux, id := masterWithAgent(t, "cpus:4;mem:1024")
	grace := 8 * time.Second
	if err := m.DrainAgent(context.Background(), master.Principal{}, id, &grace, false); err != nil {
		t.Fatal(err)
	}
	// DRAIN_AGENT returns once the drain is recorded; the agent turns
	// DRAINED when the master sees it has nothing left to run, a moment
	// later: wait for that (with a deadline) before rendering.
	state := get(t, mux, "/master/state")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(string(state), `"DRAINED"`); state = get(t, mux, "/master/state") {
		if time.Now().After(deadline) {
			t.Fatalf("the agent is not DRAINED after 30s: %s", state)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "state.json"), state, 0o644)
	os.WriteFile(filepath.Join(dir, "slaves.json"), get(t, mux, "/master/slaves"), 0o644)
	out := runNode(t, nodeBin, filepath.Join("testdata", "render.js"), dir)
	var pages struct{ Agent string }
	if err := json.Unmarshal(out, &pages); err != nil {
		t.Fatalf("node's output %q: %v", out, err)
	}
	for _, want := range []string{"Status", "DRAINED", "max grace 8s"} {
		if !strings.Contains(pages.Agent, want) {
			t.Errorf("the agent's page lacks %q:\n%s", want, pages.Agent)
		}
	}
}
