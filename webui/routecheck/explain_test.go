package routecheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mezzo/master/allocator"
)

// The framework page says why a framework gets no offers in the
// allocator's words (issue 16, trap 3: a task that fits no agent showed
// "offers possible"). The explanations are built from the allocator's own
// type, so the page is checked against the shape the master sends.
func TestFrameworkPageExplainsNoAgentFits(t *testing.T) {
	nodeBin := needNode(t, "node is not installed: the framework page's explanation is not rendered")
	const why = "the framework asked (REQUEST) for cpus:5;mem:32 on one agent, which no agent it may use could ever offer this role (largest: cpus:2;mem:1024)"
	exs := []allocator.Explanation{
		{FrameworkID: "F1", Active: true, Roles: []allocator.RoleExplanation{{Role: "*", Reason: allocator.ReasonNoAgentFits,
			Message: why, Agents: allocator.AgentCounts{Eligible: 2}}}},
		{FrameworkID: "F2", Active: true, Roles: []allocator.RoleExplanation{{Role: "web", Reason: allocator.ReasonEligible,
			Message: "2 agent(s) can be offered", Agents: allocator.AgentCounts{Eligible: 2}}}},
	}
	b, _ := json.Marshal(exs)
	file := filepath.Join(t.TempDir(), "explain.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var texts []string
	if err := json.Unmarshal(runNode(t, nodeBin, filepath.Join("testdata", "explain.js"), file), &texts); err != nil || len(texts) != 2 {
		t.Fatalf("node printed %q (%v)", texts, err)
	}
	for _, want := range []string{"no offers: NO_AGENT_FITS", why} {
		if !strings.Contains(texts[0], want) {
			t.Errorf("NO_AGENT_FITS renders without %q:\n%s", want, texts[0])
		}
	}
	if strings.Contains(texts[0], "offers possible") {
		t.Errorf("NO_AGENT_FITS renders as offers possible:\n%s", texts[0])
	}
	if !strings.Contains(texts[1], "offers possible") {
		t.Errorf("ELIGIBLE renders without \"offers possible\":\n%s", texts[1])
	}
}
