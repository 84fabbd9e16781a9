package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// `mezzo run --task=FILE` launches a TaskInfo written in JSON, as
// mesos-execute --task does: task_id and agent_id may be left out.
func TestRunTaskFile(t *testing.T) {
	c := startLocal(t, 1)
	file := filepath.Join(t.TempDir(), "task.json")
	task := `{
  "name": "from-a-file",
  "resources": [
    {"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}},
    {"name": "mem", "type": "SCALAR", "scalar": {"value": 32}}
  ],
  "command": {"shell": true, "value": "test \"$MARKER\" = from-env",
              "environment": {"variables": [{"name": "MARKER", "value": "from-env"}]}},
  "labels": {"labels": [{"key": "origin", "value": "e2e"}]}
}`
	if err := os.WriteFile(file, []byte(task), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--task="+file)
	if code != 0 {
		t.Fatalf("mezzo run --task: exit %d; output:\n%s", code, out)
	}
	mustContain(t, out, "TASK_FINISHED")

	// The file's mistakes are named before anything runs.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":-1}}],"command":{"value":"true"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runCmd(t, 30*time.Second, mezzoBin, "run", "--master="+c.addr, "--task="+bad)
	if code != 125 { // mezzo run's own failures: 2 may be the task's
		t.Fatalf("bad task file: exit %d, want 125; output:\n%s", code, out)
	}
	mustContain(t, out, "--task", bad, "invalid 'resources'")
	code, out = runCmd(t, 30*time.Second, mezzoBin, "run", "--master="+c.addr, "--task="+file, "--", "true")
	if code != 125 {
		t.Fatalf("--task with a command: exit %d, want 125; output:\n%s", code, out)
	}
	mustContain(t, out, "not both")
}

// `mezzo run --role=ROLE` subscribes with the role, so the agent's
// resources reserved to it are offered and used: here only they can hold
// the task.
func TestRunRoleUsesReservation(t *testing.T) {
	c := startLocal(t, 1, "--resources=cpus(db):1;mem(db):256;cpus:0.05;mem:16;disk:100")
	code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--role=db",
		"--resources=cpus:0.5;mem:128", "--", "/bin/true")
	if code != 0 {
		t.Fatalf("mezzo run --role=db: exit %d; output:\n%s", code, out)
	}
	mustContain(t, out, "TASK_FINISHED")

	// A task file naming reserved resources runs under the role too.
	file := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(file, []byte(`{"resources":[
  {"name":"cpus","type":"SCALAR","scalar":{"value":0.5},"reservations":[{"type":"STATIC","role":"db"}]},
  {"name":"mem","type":"SCALAR","scalar":{"value":128},"reservations":[{"type":"STATIC","role":"db"}]}],
  "command":{"value":"/bin/true","shell":false,"arguments":["/bin/true"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--role=db", "--task="+file)
	if code != 0 {
		t.Fatalf("mezzo run --role=db --task: exit %d; output:\n%s", code, out)
	}
	mustContain(t, out, "TASK_FINISHED")

	// Without the role the reservation is not offered and the unreserved
	// rest is too small: the run times out.
	code, out = runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--timeout=2secs",
		"--resources=cpus:0.5;mem:128", "--", "/bin/true")
	if code == 0 {
		t.Fatalf("mezzo run without --role ran on reserved resources; output:\n%s", out)
	}
	mustContain(t, out, "timed out")
}
