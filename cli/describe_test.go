package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestOutputFormats: -o json is --json for every listing command; -o wide
// adds the latest status's details; -o name prints IDs; anything else is a
// usage error.
func TestOutputFormats(t *testing.T) {
	m := newFakeMaster(t)
	for _, args := range [][]string{{"tasks", "--all"}, {"agents"}, {"frameworks", "--all"}, {"roles"}, {"explain", "m1-0000"}} {
		e, _ := testEnv()
		_, viaJSON, _ := run(e, args[0], append(args[1:], "--json", "--master="+m.addr())...)
		code, viaO, errs := run(e, args[0], append(args[1:], "-o", "json", "--master="+m.addr())...)
		if code != 0 || viaO != viaJSON {
			t.Errorf("%v: -o json (exit %d, %s) differs from --json:\n%s\nvs\n%s", args, code, errs, viaO, viaJSON)
		}
	}
	e, _ := testEnv()
	code, out, errs := run(e, "tasks", "--all", "-o", "wide", "--master="+m.addr())
	want := `
ID      NAME         FRAMEWORK  AGENT  STATE          CPUS  MEM    AGE  ROLE  HEALTH     REASON                    MESSAGE
t-run   task t-run   m1-0000    m1-S0  TASK_RUNNING   1     128MB  59s  web   unhealthy  -                         health check failed: exit 1
t-done  task t-done  m1-0000    m1-S0  TASK_FINISHED  0.5   0      1m   web   -          -                         Command exited with status 0
t-old   task t-old   m1-0001    m1-S1  TASK_KILLED    1     0      2m   *     -          REASON_FRAMEWORK_REMOVED  Framework removed
`
	if code != 0 || out != strings.TrimPrefix(want, "\n") {
		t.Errorf("tasks -o wide: exit %d %s\n%s\nwant\n%s", code, errs, out, strings.TrimPrefix(want, "\n"))
	}
	code, out, errs = run(e, "agents", "-o", "wide", "--master="+m.addr())
	wantAgents := `
ID     HOSTNAME        CPUS  MEM           TASKS  ACTIVE  DRAIN        ADDRESS        DISK     GPUS  REV CPUS
m1-S0  agent1.example  1/5   128MB/1.25GB  1      yes     -            10.0.0.1:5051  0/100MB  0/0   0/0
m1-S1  agent2.example  0/2   0/512MB       0      no      deactivated  10.0.0.2:5051  0/0      0/0   0/0
`
	if code != 0 || out != strings.TrimPrefix(wantAgents, "\n") {
		t.Errorf("agents -o wide: exit %d %s\n%s", code, errs, out)
	}
	code, out, _ = run(e, "tasks", "--all", "-o", "name", "--master="+m.addr())
	if code != 0 || out != "t-run\nt-done\nt-old\n" {
		t.Errorf("tasks -o name: exit %d %q", code, out)
	}
	code, _, errs = run(e, "tasks", "-o", "yaml", "--master="+m.addr())
	if code != ExitUsage || !strings.Contains(errs, `-o="yaml": expecting table, wide, json or name`) {
		t.Errorf("-o yaml: exit %d %q", code, errs)
	}
}

func TestDescribe(t *testing.T) {
	m := newFakeMaster(t)
	e, _ := testEnv()
	code, out, errs := run(e, "describe", "t-run", "--master="+m.addr())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, line := range []string{
		"Task:      t-run", "Framework: m1-0000", "Agent:     m1-S0", "State:     TASK_RUNNING",
		"Message:   health check failed: exit 1", "Health:    no health check", "History:",
		"TASK_RUNNING", "EXECUTOR",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("describe lacks %q:\n%s", line, out)
		}
	}
	code, out, errs = run(e, "describe", "t-run", "-o", "json", "--master="+m.addr())
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("describe -o json: exit %d %s\n%s", code, errs, out)
	}
	st := doc["statuses"].([]any)
	if last := st[len(st)-1].(map[string]any); last["message"] != "health check failed: exit 1" || last["healthy"] != false {
		t.Errorf("latest status %v", last)
	}
	if code, _, errs := run(e, "describe", "nope", "--master="+m.addr()); code != ExitFailed || !strings.Contains(errs, `knows no task "nope"`) {
		t.Errorf("unknown task: exit %d %q", code, errs)
	}
}

func TestKill(t *testing.T) {
	m := newFakeMaster(t)
	e, _ := testEnv()
	code, out, errs := run(e, "kill", "t-run", "--master="+m.addr())
	if code != 0 || out != "Killing task t-run of framework m1-0000 on agent m1-S0\n" {
		t.Fatalf("exit %d out %q err %q", code, out, errs)
	}
	if !reflect.DeepEqual(m.kills, []string{"m1-0000 t-run"}) {
		t.Errorf("master got kills %q", m.kills)
	}
	// An ended task is not killed again; an unknown one is an error.
	for _, tc := range []struct{ task, want string }{
		{"t-done", "already ended (TASK_FINISHED)"},
		{"nope", `knows no task "nope"`},
	} {
		if code, _, errs := run(e, "kill", tc.task, "--master="+m.addr()); code != ExitFailed || !strings.Contains(errs, tc.want) {
			t.Errorf("kill %s: exit %d %q, want %q", tc.task, code, errs, tc.want)
		}
	}
	if len(m.kills) != 1 {
		t.Errorf("master got kills %q", m.kills)
	}
}

// TestExplainNoAgentFits: issue 16's trap — explain said FILTERED (and the
// UI "offers possible") for a task no agent could ever hold.
func TestExplainNoAgentFits(t *testing.T) {
	m := newFakeMaster(t)
	e, _ := testEnv()
	code, out, errs := run(e, "explain", "m1-0009", "--master="+m.addr())
	want := `Framework m1-0009 is active (connected). It was last offered resources 10s ago (2023-11-14T22:15:50Z).

Role "*": what it waits for fits no agent (NO_AGENT_FITS)
  The framework declined offers holding everything of agents at least as large as each of the 2 it may use: if it waits for resources, what it needs fits no agent of the cluster, whose largest totals are cpus:2;mem:1024; add a larger agent or ask for less (a framework with nothing to launch should SUPPRESS).
  Active agents: 2 eligible.
`
	if code != 0 || out != want {
		t.Errorf("exit %d %s\n%s\nwant\n%s", code, errs, out, want)
	}
}
