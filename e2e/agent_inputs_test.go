package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The reproductions, through `mezzo run --task` on `mezzo local`:
// a task fetching file:///etc/shadow fails and says the fetcher refused it
// (no --fetcher_allowed_dirs); a VALUE secret reaches the task's
// environment; a REFERENCE secret fails the task with a reason.
func TestRunTaskFetcherAndSecrets(t *testing.T) {
	c := startLocal(t, 1)
	dir := t.TempDir()
	run := func(name, task string) (int, string) {
		t.Helper()
		file := filepath.Join(dir, name+".json")
		if err := os.WriteFile(file, []byte(task), 0o644); err != nil {
			t.Fatal(err)
		}
		return runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--name="+name, "--task="+file)
	}
	const res = `"resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}},
	              {"name": "mem", "type": "SCALAR", "scalar": {"value": 32}}]`

	code, out := run("shadow", `{`+res+`, "command": {"value": "cat shadow", "uris": [{"value": "file:///etc/shadow"}]}}`)
	if code == 0 {
		t.Fatalf("a task fetching /etc/shadow finished; output:\n%s", out)
	}
	mustContain(t, out, "TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED", "the fetcher refused local path", "--fetcher_allowed_dirs")

	code, out = run("secret", `{`+res+`, "command": {"value": "test \"$DB_PASSWORD\" = s3cr3t",
	  "environment": {"variables": [{"name": "DB_PASSWORD", "type": "SECRET",
	    "secret": {"type": "VALUE", "value": {"data": "czNjcjN0"}}}]}}}`)
	if code != 0 {
		t.Fatalf("a task with a VALUE secret: exit %d; output:\n%s", code, out)
	}
	mustContain(t, out, "TASK_FINISHED")

	code, out = run("reference", `{`+res+`, "command": {"value": "true",
	  "environment": {"variables": [{"name": "TOKEN", "type": "SECRET",
	    "secret": {"type": "REFERENCE", "reference": {"name": "vault/token"}}}]}}}`)
	if code == 0 {
		t.Fatalf("a task with a REFERENCE secret finished; output:\n%s", out)
	}
	mustContain(t, out, "TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED", "vault/token", "no secret resolver")
}
