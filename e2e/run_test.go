package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// `mezzo run` is the README's way to run work: exit 0 only on TASK_FINISHED.
func TestRunFinishesAndFails(t *testing.T) {
	c := startLocal(t, 1)
	code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--", "/bin/echo", "hello")
	if code != 0 {
		t.Fatalf("mezzo run echo: exit %d, want 0; output:\n%s", code, out)
	}
	mustContain(t, out, "TASK_RUNNING", "TASK_FINISHED")

	code, out = runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--", "/bin/false")
	if code == 0 {
		t.Fatalf("mezzo run false: exit 0, want non-zero; output:\n%s", out)
	}
	mustContain(t, out, "TASK_FAILED", "Command exited with status 1")
}

// The quick start in the README: `mezzo local -- CMD` runs CMD on a fresh
// cluster and exits with its result.
func TestLocalRunsCommand(t *testing.T) {
	port := freePort(t)
	code, out := runCmd(t, 90*time.Second, mezzoBin, "local", "--agents=2", "--port="+strconv.Itoa(port),
		"--work_dir="+t.TempDir(), "--", "/bin/sh", "-c", "echo quickstart; exit 0")
	if code != 0 {
		t.Fatalf("mezzo local -- cmd: exit %d; output:\n%s", code, out)
	}
	mustContain(t, out, "2 agent(s)", "TASK_FINISHED")
}

// The task's stdout lands in its sandbox and can be read through /files.
func TestSandboxStdoutThroughFiles(t *testing.T) {
	c := startLocal(t, 1)
	code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--", "/bin/echo", "sandbox-marker")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	_, agentAddr := onlyAgent(t, c)
	// The executor's directory is listed under frameworks[].executors while
	// it winds down and under completed_* afterwards: poll until it shows.
	type executors struct {
		Executors          []struct{ Directory string } `json:"executors"`
		CompletedExecutors []struct{ Directory string } `json:"completed_executors"`
	}
	var dirs []string
	for deadline := time.Now().Add(15 * time.Second); len(dirs) == 0; {
		var agentState struct {
			Frameworks          []executors `json:"frameworks"`
			CompletedFrameworks []executors `json:"completed_frameworks"`
		}
		if err := getJSON("http://"+agentAddr+"/slave(1)/state", &agentState); err != nil {
			t.Fatal(err)
		}
		for _, f := range append(agentState.Frameworks, agentState.CompletedFrameworks...) {
			for _, e := range append(f.Executors, f.CompletedExecutors...) {
				dirs = append(dirs, e.Directory)
			}
		}
		if len(dirs) == 0 && time.Now().After(deadline) {
			t.Fatalf("agent state lists no executor directory")
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
	var read struct {
		Data string `json:"data"`
	}
	if err := getJSON("http://"+agentAddr+"/files/read?offset=0&path="+dirs[0]+"/stdout", &read); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read.Data, "sandbox-marker") {
		t.Fatalf("stdout of the task = %q, want it to contain sandbox-marker", read.Data)
	}
}
