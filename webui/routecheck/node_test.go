package routecheck

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// needNode returns the path of node, which runs the pages' own code in
// these tests. Without it a developer's run skips with why (what the
// test would have checked); CI sets CI=true, where a missing node is a
// failure, not a silent skip (.ci/run installs it).
func needNode(t *testing.T, why string) string {
	t.Helper()
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node is not installed (CI is set, so this fails rather than skips): %s", why)
		}
		t.Skip(why)
	}
	return nodeBin
}

// runNode runs node (nodeBin, from needNode) with args, allowing it 30s,
// and returns its stdout; a failure ends the test with node's stderr.
func runNode(t *testing.T, nodeBin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, nodeBin, args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	return out
}
