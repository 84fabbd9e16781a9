package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"mezzo/internal/clock"
)

// drainStep is what the drain master shows of agent S1 at one poll: its
// drain state ("" none; "away": not registered, e.g. unreachable; "gone":
// not registered and refused as removed) and live tasks.
type drainStep struct {
	state string
	tasks int
}

// drainMaster is a master whose agent S1 goes through scripted drain
// steps, one per /master/slaves poll after the operator call.
type drainMaster struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	calls  []map[string]any
	steps  []drainStep
	cur    drainStep
	status int // answer to the operator call (0: 200)
}

func newDrainMaster(t *testing.T, steps ...drainStep) *drainMaster {
	m := &drainMaster{t: t, steps: steps}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *drainMaster) addr() string { return strings.TrimPrefix(m.srv.URL, "http://") }

func (m *drainMaster) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.URL.Path != "/api/v1" {
		http.NotFound(w, r) // the drain follows the operator API only
		return
	}
	var call map[string]any
	if err := json.NewDecoder(r.Body).Decode(&call); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var out any
	switch call["type"] {
	case "GET_AGENTS":
		if len(m.calls) > 0 && len(m.steps) > 0 {
			m.cur, m.steps = m.steps[0], m.steps[1:]
		}
		if m.cur.state == "down" {
			http.Error(w, "No leader elected", http.StatusServiceUnavailable)
			return
		}
		agents := []any{}
		if m.cur.state != "gone" && m.cur.state != "away" {
			a := map[string]any{"agent_info": map[string]any{"id": map[string]any{"value": "S1"}, "hostname": "a1"},
				"active": m.cur.state == "", "deactivated": m.cur.state != "", "version": "1.12.0"}
			if m.cur.state != "" && m.cur.state != "deactivated" {
				a["drain_info"] = map[string]any{"state": m.cur.state, "config": map[string]any{"mark_gone": false}}
			}
			agents = append(agents, a)
		}
		out = map[string]any{"type": "GET_AGENTS", "get_agents": map[string]any{"agents": agents}}
	case "GET_TASKS":
		tasks := []any{map[string]any{"name": "done", "task_id": map[string]any{"value": "done"},
			"framework_id": map[string]any{"value": "F"}, "agent_id": map[string]any{"value": "S1"}, "state": "TASK_FINISHED"}}
		for i := range m.cur.tasks {
			id := map[string]any{"value": "t" + string(rune('0'+i))}
			tasks = append(tasks, map[string]any{"name": "t", "task_id": id, "framework_id": map[string]any{"value": "F"},
				"agent_id": map[string]any{"value": "S1"}, "state": "TASK_RUNNING"})
		}
		out = map[string]any{"type": "GET_TASKS", "get_tasks": map[string]any{"tasks": tasks}}
	default:
		m.calls = append(m.calls, call)
		if call["type"] == "DEACTIVATE_AGENT" && m.cur.state == "gone" {
			http.Error(w, "Agent S1 was removed from the cluster", http.StatusNotFound)
			return
		}
		if m.status != 0 {
			http.Error(w, "Agent S1 not found", m.status)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// runTicking runs a command whose loop waits on the fake clock, advancing
// the clock whenever it waits, and returns its exit code and output.
func runTicking(t *testing.T, e *env, fc *clock.Fake, args ...string) (int, string, string) {
	t.Helper()
	var out, errw syncBuffer
	done := make(chan int, 1)
	go func() { done <- e.commands()["agents"].Run(args, &out, &errw) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case code := <-done:
			return code, out.String(), errw.String()
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agents %v never ended; stdout %q", args, out.String())
		}
		if fc.Pending() > 0 {
			fc.Advance(time.Second)
		} else {
			time.Sleep(time.Millisecond) // polling for the command to wait or end
		}
	}
}

func TestAgentsDrainFollowsUntilDrained(t *testing.T) {
	// "down": no master answers for a poll (a failover): the CLI says so
	// and keeps following.
	m := newDrainMaster(t, drainStep{"DRAINING", 2}, drainStep{"DRAINING", 2}, drainStep{"down", 0}, drainStep{"DRAINING", 1}, drainStep{"DRAINED", 0})
	e, fc := testEnv()
	code, out, errs := runTicking(t, e, fc, "drain", "S1", "--max-grace-period=10s", "--master="+m.addr())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "agent S1: DRAINING, 2 task(s) left\nagent S1: no master answers (failover?); retrying\n" +
		"agent S1: DRAINING, 1 task(s) left\nagent S1: DRAINED, 0 task(s) left\n"
	if out != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", out, want)
	}
	wantCall := map[string]any{"type": "DRAIN_AGENT", "drain_agent": map[string]any{
		"agent_id": map[string]any{"value": "S1"}, "max_grace_period": map[string]any{"seconds": 10.0}, "mark_gone": false}}
	if len(m.calls) != 1 || !reflect.DeepEqual(m.calls[0], wantCall) {
		t.Fatalf("calls %v, want %v", m.calls, wantCall)
	}
}

func TestAgentsDrainJSONAndMarkGone(t *testing.T) {
	m := newDrainMaster(t, drainStep{"DRAINING", 1}, drainStep{"away", 0}, drainStep{"gone", 0})
	e, fc := testEnv()
	code, out, errs := runTicking(t, e, fc, "drain", "S1", "--mark-gone", "--json", "--master="+m.addr())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not the JSON result: %q", out)
	}
	want := map[string]any{"agent_id": "S1", "action": "drain", "deactivated": true, "state": "DRAINED", "gone": true, "tasks": 0.0}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("result %v, want %v", res, want)
	}
	if !strings.Contains(errs, "agent S1: DRAINING, 1 task(s) left") || !strings.Contains(errs, "not registered") ||
		!strings.Contains(errs, "DRAINED and marked gone") {
		t.Fatalf("progress on stderr: %q", errs)
	}
	if d := m.calls[0]["drain_agent"].(map[string]any); d["mark_gone"] != true || d["max_grace_period"] != nil {
		t.Fatalf("call %v: want mark_gone and no max_grace_period", d)
	}
}

func TestAgentsDrainGivesUp(t *testing.T) {
	m := newDrainMaster(t, drainStep{"DRAINING", 1})
	e, fc := testEnv()
	code, _, errs := runTicking(t, e, fc, "drain", "S1", "--wait-timeout=5s", "--master="+m.addr())
	if code != 1 || !strings.Contains(errs, "still DRAINING with 1 task(s) after 5s") {
		t.Fatalf("exit %d: %q", code, errs)
	}
}

func TestAgentsDeactivateReactivate(t *testing.T) {
	for _, c := range []struct {
		action, call, field string
	}{{"deactivate", "DEACTIVATE_AGENT", "deactivate_agent"}, {"reactivate", "REACTIVATE_AGENT", "reactivate_agent"}} {
		m := newDrainMaster(t)
		e, _ := testEnv()
		code, out, errs := run(e, "agents", c.action, "S1", "--master="+m.addr())
		if code != 0 || out != "Agent S1 "+c.action+"d.\n" {
			t.Fatalf("%s: exit %d, out %q, err %q", c.action, code, out, errs)
		}
		want := map[string]any{"type": c.call, c.field: map[string]any{"agent_id": map[string]any{"value": "S1"}}}
		if len(m.calls) != 1 || !reflect.DeepEqual(m.calls[0], want) {
			t.Fatalf("%s: calls %v, want %v", c.action, m.calls, want)
		}
	}
}

func TestAgentsActionErrors(t *testing.T) {
	m := newDrainMaster(t)
	tests := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"drain"}, 2, "drain needs an AGENT_ID"},
		{[]string{"evict", "S1"}, 2, `unknown action "evict"`},
		{[]string{"deactivate", "S1", "--mark-gone"}, 2, "apply to drain only"},
		{[]string{"drain", "S1", "x"}, 2, "expecting 0 argument(s)"},
		{[]string{"drain", "S1", "--interval=0s"}, 2, "--interval=0s must be positive"},
	}
	for _, tc := range tests {
		e, _ := testEnv()
		code, _, errs := run(e, "agents", append(tc.args, "--master="+m.addr())...)
		if code != tc.code || !strings.Contains(errs, tc.inStderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d with %q", tc.args, code, errs, tc.code, tc.inStderr)
		}
	}
	if len(m.calls) != 0 {
		t.Fatalf("a refused command line reached the master: %v", m.calls)
	}
	m.status = http.StatusNotFound
	e, _ := testEnv()
	if code, _, errs := run(e, "agents", "drain", "S1", "--master="+m.addr()); code != 1 || !strings.Contains(errs, "Agent S1 not found") {
		t.Fatalf("master's 404: exit %d, %q", code, errs)
	}
}

func TestAgentsDrainNoWait(t *testing.T) {
	m := newDrainMaster(t, drainStep{"DRAINING", 3})
	e, _ := testEnv()
	code, out, errs := run(e, "agents", "drain", "S1", "--no-wait", "--json", "--master="+m.addr())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["state"] != "DRAINING" || res["agent_id"] != "S1" {
		t.Fatalf("--no-wait --json: %q (%v)", out, err)
	}
}
