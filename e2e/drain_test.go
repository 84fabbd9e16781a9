package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/recordio"
	"mezzo/api/schedulerpb"
)

// drainFramework is a v1 scheduler that follows the leader: it subscribes
// to whichever master leads, re-subscribes under its framework ID when its
// stream ends (a leader killed), acknowledges every update, records its
// tasks' states with the time it received them, and declines offers
// (refuse 1s, so an agent that could be offered is offered again soon)
// except the first one from agent launchOn, on which it launches launch.
type drainFramework struct {
	t      *testing.T
	addrs  []string
	launch *mesos.TaskInfo

	mu       sync.Mutex
	fwID     string
	subs     int                    // subscriptions made
	states   map[string][]taskSeen  // task ID -> states received
	offers   map[int]map[string]int // subscription -> agent ID -> offers received
	launched bool
}

type taskSeen struct {
	state mesos.TaskState
	at    time.Time
}

func (f *drainFramework) run(ctx context.Context) {
	for ctx.Err() == nil {
		for _, addr := range f.addrs {
			if ctx.Err() != nil {
				return
			}
			if leads(addr) {
				f.session(ctx, addr)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond): // retry interval while no master leads
		}
	}
}

// session is one subscription to the master at addr, until its stream ends.
func (f *drainFramework) session(ctx context.Context, addr string) {
	f.mu.Lock()
	info := &mesos.FrameworkInfo{User: proto.String("root"), Name: proto.String("drain-e2e"),
		Checkpoint: proto.Bool(true), FailoverTimeout: proto.Float64(3600)}
	if f.fwID != "" {
		info.Id = &mesos.FrameworkID{Value: proto.String(f.fwID)}
	}
	f.subs++
	sub := f.subs
	f.mu.Unlock()
	body, _ := proto.Marshal(&schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(), FrameworkId: info.Id,
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: info}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/v1/scheduler", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Accept", "application/x-protobuf")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	stream := resp.Header.Get("Mesos-Stream-Id")
	call := func(c *schedulerpb.Call) {
		f.mu.Lock()
		c.FrameworkId = &mesos.FrameworkID{Value: proto.String(f.fwID)}
		f.mu.Unlock()
		b, _ := proto.Marshal(c)
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/v1/scheduler", bytes.NewReader(b))
		r.Header.Set("Content-Type", "application/x-protobuf")
		r.Header.Set("Mesos-Stream-Id", stream)
		if resp, err := http.DefaultClient.Do(r); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	rd := recordio.NewReader(resp.Body, 0)
	for {
		rec, err := rd.Next()
		if err != nil {
			return
		}
		ev := &schedulerpb.Event{}
		if proto.Unmarshal(rec, ev) != nil {
			return
		}
		switch ev.GetType() {
		case schedulerpb.Event_SUBSCRIBED:
			f.mu.Lock()
			f.fwID = ev.GetSubscribed().GetFrameworkId().GetValue()
			f.mu.Unlock()
			// Learn the tasks' states from this master (the updates held
			// by the agent come anyway, but reconciliation is cheap).
			call(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{}})
		case schedulerpb.Event_OFFERS:
			for _, o := range ev.GetOffers().GetOffers() {
				agent := o.GetAgentId().GetValue()
				f.mu.Lock()
				if f.offers[sub] == nil {
					f.offers[sub] = map[string]int{}
				}
				f.offers[sub][agent]++
				use := !f.launched && agent == f.launch.GetAgentId().GetValue()
				f.launched = f.launched || use
				f.mu.Unlock()
				if use {
					call(&schedulerpb.Call{Type: schedulerpb.Call_ACCEPT.Enum(), Accept: &schedulerpb.Call_Accept{
						OfferIds:   []*mesos.OfferID{o.GetId()},
						Operations: []*mesos.Offer_Operation{{Type: mesos.Offer_Operation_LAUNCH.Enum(), Launch: &mesos.Offer_Operation_Launch{TaskInfos: []*mesos.TaskInfo{f.launch}}}}}})
					continue
				}
				call(&schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(), Decline: &schedulerpb.Call_Decline{
					OfferIds: []*mesos.OfferID{o.GetId()}, Filters: &mesos.Filters{RefuseSeconds: proto.Float64(1)}}})
			}
		case schedulerpb.Event_UPDATE:
			st := ev.GetUpdate().GetStatus()
			f.mu.Lock()
			id := st.GetTaskId().GetValue()
			if seen := f.states[id]; len(seen) == 0 || seen[len(seen)-1].state != st.GetState() {
				f.states[id] = append(seen, taskSeen{st.GetState(), time.Now()})
			}
			f.mu.Unlock()
			if len(st.GetUuid()) > 0 {
				call(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
					AgentId: st.GetAgentId(), TaskId: st.GetTaskId(), Uuid: st.GetUuid()}})
			}
		}
	}
}

// first returns when task first reached state (zero if it has not).
func (f *drainFramework) first(task string, state mesos.TaskState) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.states[task] {
		if s.state == state {
			return s.at
		}
	}
	return time.Time{}
}

func (f *drainFramework) offersFrom(agent string, fromSub int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for sub, byAgent := range f.offers {
		if sub >= fromSub {
			n += byAgent[agent]
		}
	}
	return n
}

// slaveDrain is an agent of /master/slaves as the drain test reads it.
type slaveDrain struct {
	ID          string `json:"id"`
	Active      bool   `json:"active"`
	Deactivated bool   `json:"deactivated"`
	DrainInfo   *struct {
		State  string `json:"state"`
		Config struct {
			MaxGracePeriod struct {
				Nanoseconds int64 `json:"nanoseconds"`
			} `json:"max_grace_period"`
			MarkGone bool `json:"mark_gone"`
		} `json:"config"`
	} `json:"drain_info"`
}

func slaveOn(addr, id string) (*slaveDrain, error) {
	var doc struct {
		Slaves []slaveDrain `json:"slaves"`
	}
	if err := getJSON("http://"+addr+"/master/slaves?slave_id="+id, &doc); err != nil {
		return nil, err
	}
	if len(doc.Slaves) == 0 {
		return nil, errors.New("agent " + id + " not registered")
	}
	return &doc.Slaves[0], nil
}

// Issue 15, drain through the real binaries: an agent runs a task that
// ignores SIGTERM (its own kill policy would wait 5 minutes); `mezzo
// agents drain --max-grace-period=8s` on all three masters; as soon as the
// leader shows the agent DRAINING it is SIGKILLed. The new leader loads the
// drain from the registry: the re-registering agent stays deactivated (no
// offer from it on the new leader), the task is SIGKILLed at the grace
// period (TASK_KILLED, long before its own 5 minutes), the re-subscribed
// framework's acknowledgement makes the agent DRAINED, which the CLI,
// following the drain through the failover, reports (--json). REACTIVATE
// then brings the agent's offers back.
func TestDrainSurvivesLeaderKill(t *testing.T) {
	c := startHA(t)
	_, agentID := c.startAgent("drain-a1")
	stubborn := &mesos.TaskInfo{Name: proto.String("stubborn"), TaskId: &mesos.TaskID{Value: proto.String("stubborn")},
		AgentId:    &mesos.AgentID{Value: proto.String(agentID)},
		Resources:  []*mesos.Resource{dynScalar("cpus", 0.5, "*", false), dynScalar("mem", 32, "*", false)},
		Command:    &mesos.CommandInfo{Value: proto.String(`trap "" TERM; sleep 1000`)},
		KillPolicy: &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(5 * time.Minute))}}}
	f := &drainFramework{t: t, addrs: c.addrs, launch: stubborn, states: map[string][]taskSeen{}, offers: map[int]map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	fwDone := make(chan struct{})
	go func() { f.run(ctx); close(fwDone) }()
	t.Cleanup(func() { cancel(); <-fwDone })
	poll(t, "the stubborn task to run", 60*time.Second, func() bool {
		return !f.first("stubborn", mesos.TaskState_TASK_RUNNING).IsZero()
	})

	// The CLI drains and follows; its stdout is the JSON result.
	var stdout, stderr lockedWriter
	stdout.w, stderr.w = &bytes.Buffer{}, &bytes.Buffer{}
	cli := exec.Command(mezzoBin, "agents", "drain", agentID, "--max-grace-period=8s", "--json",
		"--interval=200ms", "--wait-timeout=3m", "--master="+strings.Join(c.addrs, ","))
	cli.Stdout, cli.Stderr = &stdout, &stderr
	drainStart := time.Now()
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	cliDone := make(chan error, 1)
	go func() { cliDone <- cli.Wait() }()
	t.Cleanup(func() {
		cli.Process.Kill()
		if t.Failed() {
			t.Logf("--- drain CLI stderr:\n%s\n--- stdout:\n%s", stderr.w, stdout.w)
		}
	})

	leader := c.awaitLeader("")
	poll(t, "the leader to show the agent DRAINING", 30*time.Second, func() bool {
		s, err := slaveOn(c.addrs[leader], agentID)
		return err == nil && s.DrainInfo != nil && s.DrainInfo.State == "DRAINING"
	})
	s, _ := slaveOn(c.addrs[leader], agentID)
	if s.Active || !s.Deactivated || s.DrainInfo.Config.MaxGracePeriod.Nanoseconds != int64(8*time.Second) {
		t.Fatalf("draining agent on the leader: %+v", s)
	}
	if !f.first("stubborn", mesos.TaskState_TASK_KILLED).IsZero() {
		t.Log("the task was killed before the leader was; the failover still tests the DRAINED step")
	}
	f.mu.Lock()
	subsBefore := f.subs
	f.mu.Unlock()
	c.masters[leader].kill()
	next := c.awaitLeader(c.addrs[leader])

	select {
	case err := <-cliDone:
		if err != nil {
			t.Fatalf("mezzo agents drain: %v", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("mezzo agents drain did not end")
	}
	var res struct {
		AgentID     string `json:"agent_id"`
		State       string `json:"state"`
		Deactivated bool   `json:"deactivated"`
		Tasks       int    `json:"tasks"`
	}
	if err := json.Unmarshal(stdout.w.(*bytes.Buffer).Bytes(), &res); err != nil {
		t.Fatalf("CLI stdout is not its JSON result: %v", err)
	}
	if res.AgentID != agentID || res.State != "DRAINED" || !res.Deactivated || res.Tasks != 0 {
		t.Fatalf("CLI result %+v", res)
	}
	if !strings.Contains(stderr.w.(*bytes.Buffer).String(), "DRAINING") {
		t.Fatalf("CLI showed no progress: %q", stderr.w)
	}

	// The task was SIGKILLed at the drain's grace period, not its own.
	killed := f.first("stubborn", mesos.TaskState_TASK_KILLED)
	if killed.IsZero() {
		t.Fatalf("the task never reached TASK_KILLED: %v", f.states["stubborn"])
	}
	if took := killed.Sub(drainStart); took < 8*time.Second || took > 2*time.Minute {
		t.Fatalf("task killed %v after the drain: want the 8s grace period (SIGTERM ignored), well before its own 5m", took)
	}
	now, err := slaveOn(c.addrs[next], agentID)
	if err != nil || now.DrainInfo == nil || now.DrainInfo.State != "DRAINED" || now.Active || !now.Deactivated {
		t.Fatalf("new leader's view of the agent: %+v %v", now, err)
	}
	if n := f.offersFrom(agentID, subsBefore+1); n != 0 {
		t.Fatalf("the new leader offered the draining agent %d time(s)", n)
	}

	// REACTIVATE_AGENT: the agent is offered again.
	code, out := runCmd(t, time.Minute, mezzoBin, "agents", "reactivate", agentID, "--master="+strings.Join(c.addrs, ","))
	if code != 0 {
		t.Fatalf("mezzo agents reactivate: exit %d: %s", code, out)
	}
	f.mu.Lock()
	subsNow := f.subs
	f.mu.Unlock()
	poll(t, "an offer from the reactivated agent", 60*time.Second, func() bool {
		return f.offersFrom(agentID, subsNow) > 0
	})
	if now, err := slaveOn(c.addrs[next], agentID); err != nil || now.DrainInfo != nil || !now.Active || now.Deactivated {
		t.Fatalf("reactivated agent: %+v %v", now, err)
	}
}
