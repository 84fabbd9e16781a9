package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 16's traps, with the real binary.

// runSplit runs mezzo with stdout and stderr apart.
func runSplit(t *testing.T, timeout time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mezzoBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mezzo %v timed out after %v; stdout:\n%s\nstderr:\n%s", args, timeout, out.String(), errb.String())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// The README's first command prints the task's output, and mezzo local
// exits with the command's exit status (trap 1: the output stayed in the
// sandbox).
func TestReadmeFirstCommandPrintsOutput(t *testing.T) {
	port := freePort(t)
	code, stdout, stderr := runSplit(t, 90*time.Second, "local", "--agents=2", "--port="+strconv.Itoa(port),
		"--work_dir="+t.TempDir(), "--", "/bin/sh", "-c", "echo hello from mezzo; echo to stderr >&2; exit 3")
	if code != 3 {
		t.Errorf("exit %d, want the command's 3; stderr:\n%s", code, stderr)
	}
	if stdout != "hello from mezzo\n" {
		t.Errorf("stdout %q, want only the task's output; stderr:\n%s", stdout, stderr)
	}
	if !strings.Contains(stderr, "to stderr\n") || !strings.Contains(stderr, "TASK_FAILED") {
		t.Errorf("stderr lacks the task's stderr or its status lines:\n%s", stderr)
	}
}

// mezzo run streams too, generates a fresh task ID per run, and
// --stream=false keeps only the status lines, on stdout.
func TestRunStreamsAndGeneratesIDs(t *testing.T) {
	c := startLocal(t, 1)
	ids := map[string]bool{}
	idRE := regexp.MustCompile(`(?m)^(job-[0-9a-f]{8}) TASK_FINISHED`)
	for range 2 {
		code, stdout, stderr := runSplit(t, 60*time.Second, "run", "--master="+c.addr, "--name=job", "--env=GREETING=hi",
			"--", "/bin/sh", "-c", "echo $GREETING from the task")
		if code != 0 || stdout != "hi from the task\n" {
			t.Fatalf("exit %d stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		m := idRE.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("no generated task ID in:\n%s", stderr)
		}
		ids[m[1]] = true
	}
	if len(ids) != 2 {
		t.Errorf("two runs of the same name used task IDs %v, want two distinct", ids)
	}
	code, stdout, _ := runSplit(t, 60*time.Second, "run", "--master="+c.addr, "--stream=false", "--", "/bin/echo", "quiet")
	if code != 0 || strings.Contains(stdout, "quiet") || !strings.Contains(stdout, "TASK_FINISHED") {
		t.Errorf("--stream=false: exit %d stdout %q", code, stdout)
	}
}

// A task that fits no agent says so while it waits, explain agrees
// (NO_AGENT_FITS, not FILTERED), and --timeout ends it with 124 (trap 3).
func TestRunTooBigSaysWhy(t *testing.T) {
	c := startLocal(t, 2)
	p := startProc(t, "run-big", "run", "--master="+c.addr, "--resources=cpus:5;mem:32", "--timeout=40s", "--", "/bin/true")
	var fw string
	poll(t, "run to say why it waits", 30*time.Second, func() bool {
		m := regexp.MustCompile(`Subscribed with framework ID (\S+)`).FindStringSubmatch(p.logs())
		if m != nil {
			fw = m[1]
		}
		return fw != "" && strings.Contains(p.logs(), "no agent has cpus:5; largest is cpus:4")
	})
	poll(t, "explain to say NO_AGENT_FITS", 30*time.Second, func() bool {
		code, out := runCmd(t, 30*time.Second, mezzoBin, "explain", "--master="+c.addr, fw)
		// mezzo run says what it needs (REQUEST), so the answer comes from
		// that, not only from the offers it declined.
		return code == 0 && strings.Contains(out, "NO_AGENT_FITS") && strings.Contains(out, "REQUEST") && strings.Contains(out, "cpus:4")
	})
	<-p.done
	if code := p.cmd.ProcessState.ExitCode(); code != 124 {
		t.Errorf("exit %d after --timeout, want 124; log:\n%s", code, p.logs())
	}
}

// cliTaskRow is a row of `mezzo tasks -o json`.
type cliTaskRow struct {
	ID          string `json:"id"`
	FrameworkID string `json:"framework_id"`
	State       string `json:"state"`
	Message     string `json:"message"`
	Reason      string `json:"reason"`
}

// The CLI given all three masters behaves the same whichever one leads
// and in whatever order they are listed: followers redirect (trap 2: they
// answered with their own empty view). A failover changes nothing for it;
// kill and describe work through it, and mezzo run exits 137 for a killed
// task.
func TestCLIWhicheverMasterLeads(t *testing.T) {
	c := startHA(t)
	c.startAgent("cli-a1")
	all := strings.Join(c.addrs, ",")
	runner := startProc(t, "run-long", "run", "--master="+all, "--name=long", "--checkpoint",
		"--", "/bin/sh", "-c", "echo marker-from-the-task; exec sleep 600")
	var id string
	poll(t, "the task to run and its output to stream", 60*time.Second, func() bool {
		m := regexp.MustCompile(`(long-[0-9a-f]{8}) TASK_RUNNING`).FindStringSubmatch(runner.logs())
		if m != nil {
			id = m[1]
		}
		return id != "" && strings.Contains(runner.logs(), "marker-from-the-task")
	})
	orders := func() [][]string {
		var out [][]string
		for i := range c.addrs {
			out = append(out, append(append([]string{}, c.addrs[i:]...), c.addrs[:i]...))
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		for _, order := range orders() {
			m := "--master=" + strings.Join(order, ",")
			var rows []cliTaskRow
			poll(t, when+": tasks via "+order[0], 60*time.Second, func() bool {
				code, out := runCmd(t, 30*time.Second, mezzoBin, "tasks", m, "-o", "json")
				rows = nil
				return code == 0 && json.Unmarshal([]byte(out), &rows) == nil && len(rows) == 1 &&
					rows[0].ID == id && rows[0].State == "TASK_RUNNING"
			})
			if code, out := runCmd(t, 30*time.Second, mezzoBin, "logs", m, id); code != 0 || !strings.Contains(out, "marker-from-the-task") {
				t.Fatalf("%s: logs via %s: exit %d\n%s", when, order[0], code, out)
			}
			if code, out := runCmd(t, 30*time.Second, mezzoBin, "describe", m, id); code != 0 || !strings.Contains(out, "TASK_RUNNING") {
				t.Fatalf("%s: describe via %s: exit %d\n%s", when, order[0], code, out)
			}
			if code, out := runCmd(t, 30*time.Second, mezzoBin, "agents", m); code != 0 || !strings.Contains(out, "cli-a1") {
				t.Fatalf("%s: agents via %s: exit %d\n%s", when, order[0], code, out)
			}
		}
	}
	check("first leader")
	leader := c.awaitLeader("")
	c.masters[leader].kill()
	c.awaitLeader(c.addrs[leader])
	// The killed master stays in the list: the CLI skips it.
	check("after failover")

	code, out := runCmd(t, 30*time.Second, mezzoBin, "kill", "--master="+all, id)
	if code != 0 || !strings.Contains(out, "Killing task "+id) {
		t.Fatalf("kill: exit %d\n%s", code, out)
	}
	select {
	case <-runner.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("mezzo run did not end after its task was killed; log:\n%s", runner.logs())
	}
	if code := runner.cmd.ProcessState.ExitCode(); code != 137 {
		t.Errorf("mezzo run exit %d for a killed task, want 137; log:\n%s", code, runner.logs())
	}
	if !strings.Contains(runner.logs(), "TASK_KILLED") {
		t.Errorf("no TASK_KILLED in:\n%s", runner.logs())
	}
	// A cluster nobody answers for is exit code 3.
	dead := "127.0.0.1:" + strconv.Itoa(freePort(t))
	if code, out := runCmd(t, 30*time.Second, mezzoBin, "tasks", "--master="+dead); code != 3 {
		t.Errorf("tasks against a dead master: exit %d, want 3\n%s", code, out)
	}
}
