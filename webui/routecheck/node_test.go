package routecheck

import (
	"os"
	"os/exec"
	"testing"
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
