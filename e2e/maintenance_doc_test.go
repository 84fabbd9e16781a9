package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The walk-through in docs/maintenance.md is a script a user pastes: run it
// as written (on free ports, with the freshly built mezzo first on the
// PATH) and require it to print what the document promises.
func TestMaintenanceDocWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the documented walk-through needs it", tool)
		}
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "maintenance.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## Walk-through")
	if start < 0 {
		t.Fatal("docs/maintenance.md has no walk-through")
	}
	open := strings.Index(text[start:], "```sh\n")
	if open < 0 {
		t.Fatal("the walk-through has no sh block")
	}
	body := text[start+open+len("```sh\n"):]
	script := body[:strings.Index(body, "```")]
	ports := map[string]string{}
	for _, p := range []string{"5050", "5060", "5070"} {
		ports[p] = strconv.Itoa(freeMasterPort(t))
	}
	ports["5051"] = strconv.Itoa(freePort(t))
	for from := range ports {
		script = strings.ReplaceAll(script, from, "@"+from+"@")
	}
	for from, to := range ports {
		script = strings.ReplaceAll(script, "@"+from+"@", to)
	}
	work := t.TempDir()
	file := filepath.Join(work, "walkthrough.sh")
	if err := os.WriteFile(file, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := runScript(t, 240*time.Second, work, file)
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
