package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
)

// drainOpts are the flags of `agents drain|deactivate|reactivate`.
type drainOpts struct {
	maxGrace    *time.Duration
	markGone    *bool
	noWait      *bool
	interval    *time.Duration
	waitTimeout *time.Duration
}

func drainFlags(fs *flag.FlagSet) any {
	return &drainOpts{
		maxGrace: fs.Duration("max-grace-period", -1, "drain: the longest a task gets between SIGTERM and SIGKILL "+
			"(default: each task's own kill policy)"),
		markGone:    fs.Bool("mark-gone", false, "drain: mark the agent gone once drained (it may never re-register under its ID)"),
		noWait:      fs.Bool("no-wait", false, "drain: return once the master accepted the drain instead of following it until DRAINED"),
		interval:    fs.Duration("interval", time.Second, "drain: how often to poll the master while following the drain"),
		waitTimeout: fs.Duration("wait-timeout", 0, "drain: give up following after this long (0: wait until DRAINED)"),
	}
}

// slaveDrainDoc is what the CLI reads of /master/slaves: Mesos's
// deactivated and drain_info.
type slaveDrainDoc struct {
	Slaves []slaveDrain `json:"slaves"`
}

type slaveDrain struct {
	ID          string `json:"id"`
	Active      bool   `json:"active"`
	Deactivated bool   `json:"deactivated"`
	DrainInfo   struct {
		State  string `json:"state"`
		Config struct {
			MaxGracePeriod *struct {
				Nanoseconds int64 `json:"nanoseconds"`
			} `json:"max_grace_period"`
			MarkGone bool `json:"mark_gone"`
		} `json:"config"`
	} `json:"drain_info"`
}

// drainStates reads the drain state of every registered agent (or only
// id's) by agent ID.
func (c *invocation) drainStates(id string) (map[string]slaveDrain, error) {
	path := "/master/slaves"
	if id != "" {
		path += "?" + url.Values{"slave_id": {id}}.Encode()
	}
	var doc slaveDrainDoc
	if err := c.master.getJSON(path, &doc); err != nil {
		return nil, err
	}
	out := make(map[string]slaveDrain, len(doc.Slaves))
	for _, s := range doc.Slaves {
		out[s.ID] = s
	}
	return out, nil
}

// drainColumn is the DRAIN column of `mezzo agents`.
func drainColumn(r agentRow) string {
	switch {
	case r.Drain != "":
		return r.Drain
	case r.Deactivated:
		return "deactivated"
	}
	return "-"
}

// drainResult is the --json output of `agents drain|deactivate|reactivate`.
type drainResult struct {
	AgentID     string `json:"agent_id"`
	Action      string `json:"action"`
	Deactivated bool   `json:"deactivated"`
	// State is DRAINING or DRAINED for a drain ("" otherwise, or when
	// the agent is not registered: unreachable, or not yet back after a
	// failover).
	State string `json:"state,omitempty"`
	// Gone is set when the drained agent was marked gone (--mark-gone).
	Gone  bool `json:"gone,omitempty"`
	Tasks int  `json:"tasks"` // live tasks left on the agent
}

func runAgentAction(e *env, c *invocation) error {
	if len(c.args) != 2 {
		return usageError{fmt.Errorf("%s needs an AGENT_ID", c.args[0])}
	}
	o := c.opts.(*drainOpts)
	action, id := c.args[0], c.args[1]
	call := &masterpb.Call{}
	aid := &mesos.AgentID{Value: proto.String(id)}
	switch action {
	case "drain":
		d := &masterpb.Call_DrainAgent{AgentId: aid, MarkGone: proto.Bool(*o.markGone)}
		if *o.maxGrace >= 0 {
			d.MaxGracePeriod = durationpb.New(*o.maxGrace)
		}
		call.Type, call.DrainAgent = masterpb.Call_DRAIN_AGENT.Enum(), d
	case "deactivate":
		call.Type, call.DeactivateAgent = masterpb.Call_DEACTIVATE_AGENT.Enum(), &masterpb.Call_DeactivateAgent{AgentId: aid}
	case "reactivate":
		call.Type, call.ReactivateAgent = masterpb.Call_REACTIVATE_AGENT.Enum(), &masterpb.Call_ReactivateAgent{AgentId: aid}
	default:
		return usageError{fmt.Errorf("unknown action %q: expecting drain, deactivate or reactivate", action)}
	}
	if action != "drain" && (*o.maxGrace >= 0 || *o.markGone) {
		return usageError{errors.New("--max-grace-period and --mark-gone apply to drain only")}
	}
	if *o.interval <= 0 {
		return usageError{fmt.Errorf("--interval=%v must be positive", *o.interval)}
	}
	// Whether the agent is registered before the call tells, with
	// --mark-gone, a drained agent that is gone from an unreachable one.
	_, registered, err := c.agentDrain(id)
	if err != nil {
		return err
	}
	body, err := codec.Marshal(codec.JSON, call)
	if err != nil {
		return fmt.Errorf("encoding the %s call: %v", call.GetType(), err)
	}
	if err := c.master.do("POST", "/api/v1", body, string(codec.JSON), nil); err != nil {
		return err
	}
	res := drainResult{AgentID: id, Action: action, Deactivated: action != "reactivate"}
	if action != "drain" {
		if c.json {
			return writeJSON(c.stdout, res)
		}
		_, err := fmt.Fprintf(c.stdout, "Agent %s %sd.\n", id, action)
		return err
	}
	if *o.noWait {
		// The state as the master shows it now: DRAINED already if the
		// agent had no task; none if it is not registered.
		if d, ok, err := c.agentDrain(id); err == nil && ok && d.GetDrainInfo() != nil {
			res.State = d.GetDrainInfo().GetState().String()
		}
		if c.json {
			return writeJSON(c.stdout, res)
		}
		_, err := fmt.Fprintf(c.stdout, "Agent %s is %s; follow it with `mezzo agents`.\n", id, strings.ToLower(orUnknown(res.State)))
		return err
	}
	return c.followDrain(e, o, &res, registered)
}

// followDrain polls the master until the agent is DRAINED (or, with
// --mark-gone, gone), printing a line whenever its state or live task
// count changes (to stderr with --json, whose stdout is the result alone).
func (c *invocation) followDrain(e *env, o *drainOpts, res *drainResult, seen bool) error {
	progress := c.stdout
	if c.json {
		progress = c.stderr
	}
	var deadline time.Time
	if *o.waitTimeout > 0 {
		deadline = e.clock.Now().Add(*o.waitTimeout)
	}
	last := ""
	var failingSince time.Time
	for polls := 0; ; polls++ {
		if polls > 0 {
			if !deadline.IsZero() && !e.clock.Now().Before(deadline) {
				return fmt.Errorf("agent %s is still %s with %d task(s) after %v", res.AgentID, orUnknown(res.State), res.Tasks, *o.waitTimeout)
			}
			if e.maxPolls > 0 && polls >= e.maxPolls {
				return fmt.Errorf("agent %s is still %s after %d polls", res.AgentID, orUnknown(res.State), polls)
			}
			t := e.clock.NewTimer(*o.interval)
			<-t.C()
		}
		// The operator API, not /master/slaves: followers serve the
		// classic read endpoints from their own (empty) state, while they
		// redirect /api/v1 to the leader.
		d, registered, err := c.agentDrain(res.AgentID)
		if err == nil && registered {
			res.Tasks, err = c.liveTasks(res.AgentID)
		}
		if err != nil {
			// No master answers: a leader failover in progress. The drain
			// goes on in the registry; keep following for a while.
			if failingSince.IsZero() {
				failingSince = e.clock.Now()
			}
			if e.clock.Now().Sub(failingSince) >= maxUnavailable {
				return err
			}
			if line := fmt.Sprintf("agent %s: no master answers (failover?); retrying", res.AgentID); line != last {
				fmt.Fprintln(progress, line)
				last = line
			}
			continue
		}
		failingSince = time.Time{}
		line := ""
		switch {
		case !registered && *o.markGone && seen && c.agentGone(res.AgentID):
			res.State, res.Gone, res.Tasks = "DRAINED", true, 0
			fmt.Fprintf(progress, "agent %s: DRAINED and marked gone\n", res.AgentID)
			return c.drainDone(res)
		case !registered:
			line = fmt.Sprintf("agent %s: not registered (unreachable or recovering); it drains when it re-registers", res.AgentID)
		default:
			seen = true
			res.State, res.Deactivated = d.GetDrainInfo().GetState().String(), d.GetDeactivated()
			if d.GetDrainInfo() == nil {
				res.State = ""
			}
			line = fmt.Sprintf("agent %s: %s, %d task(s) left", res.AgentID, orUnknown(res.State), res.Tasks)
			if res.State == "" {
				return fmt.Errorf("agent %s is no longer draining (reactivated?)", res.AgentID)
			}
		}
		if line != last {
			fmt.Fprintln(progress, line)
			last = line
		}
		if res.State == "DRAINED" && !*o.markGone {
			return c.drainDone(res)
		}
	}
}

// maxUnavailable is how long a drain is followed while no master answers.
const maxUnavailable = 2 * time.Minute

// agentGone reports whether the master refuses the agent as removed. An
// agent that left the registered list after it was seen draining is
// either gone (--mark-gone) or unreachable (or not yet back after a
// failover); the operator API lists neither. DEACTIVATE_AGENT tells them
// apart without changing anything: the draining agent is deactivated
// already, and a removed one is answered 404.
func (c *invocation) agentGone(id string) bool {
	call := &masterpb.Call{Type: masterpb.Call_DEACTIVATE_AGENT.Enum(),
		DeactivateAgent: &masterpb.Call_DeactivateAgent{AgentId: &mesos.AgentID{Value: proto.String(id)}}}
	body, err := codec.Marshal(codec.JSON, call)
	if err != nil {
		return false
	}
	for _, m := range c.master.masters {
		status, _, err := c.master.send("POST", "http://"+m+"/api/v1", body, string(codec.JSON))
		if err != nil || status == http.StatusServiceUnavailable {
			continue
		}
		return status == http.StatusNotFound
	}
	return false
}

func (c *invocation) drainDone(res *drainResult) error {
	if c.json {
		return writeJSON(c.stdout, res)
	}
	return nil
}

// operatorGet makes a v1 operator GET_* call and decodes its answer.
func (c *invocation) operatorGet(t masterpb.Call_Type) (*masterpb.Response, error) {
	body, err := codec.Marshal(codec.JSON, &masterpb.Call{Type: t.Enum()})
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.master.do("POST", "/api/v1", body, string(codec.JSON), &raw); err != nil {
		return nil, err
	}
	resp := &masterpb.Response{}
	if err := codec.Unmarshal(codec.JSON, raw, resp); err != nil {
		return nil, fmt.Errorf("decoding the %s response: %v", t, err)
	}
	return resp, nil
}

// agentDrain reads the agent from GET_AGENTS: its drain_info and
// deactivated, and whether it is registered.
func (c *invocation) agentDrain(id string) (*masterpb.Response_GetAgents_Agent, bool, error) {
	resp, err := c.operatorGet(masterpb.Call_GET_AGENTS)
	if err != nil {
		return nil, false, err
	}
	for _, a := range resp.GetGetAgents().GetAgents() {
		if a.GetAgentInfo().GetId().GetValue() == id {
			return a, true, nil
		}
	}
	return nil, false, nil
}

// liveTasks counts the agent's tasks that are not terminal (GET_TASKS).
func (c *invocation) liveTasks(id string) (int, error) {
	resp, err := c.operatorGet(masterpb.Call_GET_TASKS)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range resp.GetGetTasks().GetTasks() {
		if t.GetAgentId().GetValue() == id && !mesos.IsTerminal(t.GetState()) {
			n++
		}
	}
	return n, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "not draining"
	}
	return s
}
