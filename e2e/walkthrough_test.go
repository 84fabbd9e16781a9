package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runDocWalkthrough runs the sh block under "## Walk-through" in
// docs/<name> as a user who pastes it would (on free ports, with the
// freshly built mezzo first on the PATH) and returns its output. It skips
// the test when bash or curl is missing, except in CI (CI set), where
// .ci/run installs them and a missing one fails.
func runDocWalkthrough(t *testing.T, name string) string {
	t.Helper()
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed (CI is set, so this fails rather than skips): the documented walk-through needs it", tool)
			}
			t.Skipf("%s is not installed: the documented walk-through needs it", tool)
		}
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## Walk-through")
	if start < 0 {
		t.Fatalf("docs/%s has no walk-through", name)
	}
	open := strings.Index(text[start:], "```sh\n")
	if open < 0 {
		t.Fatal("the walk-through has no sh block")
	}
	body := text[start+open+len("```sh\n"):]
	script := body[:strings.Index(body, "```")]
	// The document's ports, each replaced by a free one (masters need their
	// port + 1000 free too, for Raft).
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
	return runScript(t, 240*time.Second, work, file)
}

// runScript runs a bash script with mezzo first on the PATH, in dir, in
// its own process group, which is killed when the script ends (the
// processes it left in the background) or times out.
func runScript(t *testing.T, timeout time.Duration, dir, file string) string {
	t.Helper()
	cmd := exec.Command("bash", file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "TMPDIR="+dir)
	var out lockedWriter
	var buf strings.Builder
	out.w = &buf
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
		out.mu.Lock()
		defer out.mu.Unlock()
		return buf.String()
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		out.mu.Lock()
		defer out.mu.Unlock()
		t.Fatalf("the walk-through did not finish within %v:\n%s", timeout, buf.String())
		return ""
	}
}
