package master

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/master/registrar"
	"mezzo/resources"
)

// The harness's registrar gains the drain write here, held like the others.
func (h *heldRegistrar) UpdateDrain(id string, d registrar.Drain, done func(error)) {
	h.do(func(dn func(error)) { h.inner.UpdateDrain(id, d, dn) }, done)
}

// call runs a drain entry point on the harness's state and returns its
// answer once the loop's posted work has run (nil when not yet answered).
func (h *harness) drainCall(fn func(s *state, finish func(error))) (answered bool, err error) {
	fn(h.s, func(e error) { answered, err = true, e })
	h.settle()
	return answered, err
}

func graceCfg(grace time.Duration, gone bool) *mesos.DrainConfig {
	return &mesos.DrainConfig{MaxGracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(grace))}, MarkGone: proto.Bool(gone)}
}

// runningTask launches task id on a through f and reports it RUNNING
// (acknowledged), leaving a's and f's queues empty.
func runningTask(h *harness, f *fakeFramework, a *fakeAgent, id string, kp *mesos.KillPolicy) {
	h.t.Helper()
	o := h.offer(f, a, "*", "cpus:1;mem:128")
	ti := cmdTask(id, a.id, "cpus:1;mem:128")
	ti.KillPolicy = kp
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(ti)))
	a.drain()
	u := a.update(f.id, id, mesos.TaskState_TASK_RUNNING, true)
	f.updates()
	drainAck(f, a, id, u)
	a.drain()
}

func drainAck(f *fakeFramework, a *fakeAgent, task string, u []byte) {
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
		AgentId: agentID(a.id), TaskId: &mesos.TaskID{Value: proto.String(task)}, Uuid: u}})
}

// kills returns the KILL_TASK events among evs, by task ID.
func kills(evs []*protocol.AgentEvent) map[string]*protocol.AgentEvent_KillTask {
	out := map[string]*protocol.AgentEvent_KillTask{}
	for _, ev := range evs {
		if ev.GetType() == protocol.AgentEvent_KILL_TASK {
			out[ev.GetKillTask().GetTaskId().GetValue()] = ev.GetKillTask()
		}
	}
	return out
}

func drainStateOf(h *harness, id string) mesos.DrainState {
	return h.s.drainOf(id).Info.GetState()
}

// TestDrainWithTasks: DRAIN_AGENT acts only once the registry holds it; it
// rescinds the agent's offers, deactivates it in the allocator and kills
// every task with a grace period capped at max_grace_period; the agent is
// DRAINED only once every task's terminal update is acknowledged
// (mesos.proto DrainState: "all tasks ... terminal and acknowledged").
func TestDrainWithTasks(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:1024")
	f := h.subscribe(fwInfo("fw"))
	long := &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(time.Minute))}}
	short := &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(time.Second))}}
	runningTask(h, f, a, "slow", long)
	runningTask(h, f, a, "quick", short)
	h.offer(f, a, "*", "cpus:1") // outstanding: must be rescinded

	h.reg.hold = true
	answered, _ := h.drainCall(func(s *state, fin func(error)) { s.drainAgent(a.id, graceCfg(10*time.Second, false), fin) })
	if answered || h.s.agents[a.id].deactivated || len(kills(a.drain())) != 0 || h.alloc.has("DeactivateAgent "+a.id) {
		t.Fatal("master acted on DRAIN_AGENT before the registry held it")
	}
	h.reg.hold = false
	h.reg.release()
	h.settle()
	if drainStateOf(h, a.id) != mesos.DrainState_DRAINING || !h.reg.inner.Drain(a.id).Deactivated ||
		h.reg.inner.Drain(a.id).Info.GetState() != mesos.DrainState_DRAINING {
		t.Fatalf("after the write: master %v, registry %+v", drainStateOf(h, a.id), h.reg.inner.Drain(a.id))
	}
	if !h.alloc.has("DeactivateAgent " + a.id) {
		t.Fatal("allocator not told to deactivate the agent")
	}
	if evs := f.drain(); len(evs) != 1 || evs[0].GetType() != schedulerpb.Event_RESCIND {
		t.Fatalf("framework got %v, want the outstanding offer rescinded", eventTypes(evs))
	}
	k := kills(a.drain())
	if len(k) != 2 {
		t.Fatalf("kills = %v, want both tasks", k)
	}
	for task, want := range map[string]time.Duration{"slow": 10 * time.Second, "quick": time.Second} {
		if got := time.Duration(k[task].GetKillPolicy().GetGracePeriod().GetNanoseconds()); got != want {
			t.Errorf("%s killed with grace %v, want %v", task, got, want)
		}
	}
	v := h.s.snapshot(h.now).Agents[0]
	if v.Active || !v.Deactivated || v.DrainInfo.GetState() != mesos.DrainState_DRAINING ||
		v.DrainInfo.GetConfig().GetMaxGracePeriod().GetNanoseconds() != int64(10*time.Second) {
		t.Fatalf("snapshot agent: active %v deactivated %v drain %v", v.Active, v.Deactivated, v.DrainInfo)
	}

	// Both tasks end; one update is acknowledged, the other not yet.
	uq := a.update(f.id, "quick", mesos.TaskState_TASK_KILLED, true)
	us := a.update(f.id, "slow", mesos.TaskState_TASK_KILLED, true)
	f.updates()
	drainAck(f, a, "quick", uq)
	if drainStateOf(h, a.id) != mesos.DrainState_DRAINING {
		t.Fatal("DRAINED before every terminal update was acknowledged")
	}
	drainAck(f, a, "slow", us)
	if drainStateOf(h, a.id) != mesos.DrainState_DRAINED || h.reg.inner.Drain(a.id).Info.GetState() != mesos.DrainState_DRAINED {
		t.Fatalf("after the last ack: master %v, registry %+v", drainStateOf(h, a.id), h.reg.inner.Drain(a.id))
	}
	if h.s.agents[a.id] == nil || h.s.gone[a.id] {
		t.Fatal("agent removed without mark_gone")
	}
	// No offers from a drained agent.
	if h.s.agents[a.id].active() {
		t.Fatal("drained agent is active")
	}

	// REACTIVATE_AGENT ends it all.
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.reactivateAgent(a.id, fin) }); err != nil {
		t.Fatal(err)
	}
	if !h.s.agents[a.id].active() || h.s.agents[a.id].drain != nil || !h.reg.inner.Drain(a.id).IsZero() || !h.alloc.has("ActivateAgent "+a.id) {
		t.Fatalf("after reactivation: active %v drain %v registry %+v", h.s.agents[a.id].active(), h.s.agents[a.id].drain, h.reg.inner.Drain(a.id))
	}
}

// TestDrainNoTaskIsDrainedAtOnce and the calls' refusals.
func TestDrainCallsAndRefusals(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:1024")
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.reactivateAgent(a.id, fin) }); apiStatus(err) != http.StatusBadRequest {
		t.Fatalf("reactivating an active agent = %v, want 400", err)
	}
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.drainAgent("nope", graceCfg(0, false), fin) }); apiStatus(err) != http.StatusNotFound {
		t.Fatalf("draining an unknown agent = %v, want 404", err)
	}
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.deactivateAgent(a.id, fin) }); err != nil {
		t.Fatal(err)
	}
	if v := h.s.snapshot(h.now).Agents[0]; v.Active || !v.Deactivated || v.DrainInfo != nil {
		t.Fatalf("deactivated agent view: %+v", v)
	}
	// A drain with no task is DRAINED at once; a deactivated agent can be drained.
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.drainAgent(a.id, graceCfg(0, false), fin) }); err != nil {
		t.Fatal(err)
	}
	if drainStateOf(h, a.id) != mesos.DrainState_DRAINED {
		t.Fatalf("idle agent: %v, want DRAINED", drainStateOf(h, a.id))
	}
	// Calls made while a write is in flight wait for it, in order.
	h.reg.hold = true
	var order []string
	h.s.reactivateAgent(a.id, func(err error) { order = append(order, "reactivate:"+errString(err)) })
	h.s.deactivateAgent(a.id, func(err error) { order = append(order, "deactivate:"+errString(err)) })
	h.settle()
	if len(h.reg.held) != 1 {
		t.Fatalf("%d writes in flight, want 1 (the second call waits)", len(h.reg.held))
	}
	h.reg.hold = false
	h.reg.release()
	h.settle()
	if len(order) != 2 || order[0] != "reactivate:" || order[1] != "deactivate:" {
		t.Fatalf("answers %v", order)
	}
	if d := h.reg.inner.Drain(a.id); !d.Deactivated || d.Info != nil {
		t.Fatalf("registry after reactivate+deactivate: %+v", d)
	}

	// The HTTP-facing entry points check their input before the loop.
	m := &Master{}
	neg := -time.Second
	if err := m.DrainAgent(t.Context(), Principal{}, a.id, &neg, false); apiStatus(err) != http.StatusBadRequest {
		t.Fatalf("negative max_grace_period = %v, want 400", err)
	}
	for _, err := range []error{m.DrainAgent(t.Context(), Principal{}, "", nil, false), m.DeactivateAgent(t.Context(), Principal{}, ""),
		m.ReactivateAgent(t.Context(), Principal{}, "")} {
		if apiStatus(err) != http.StatusBadRequest {
			t.Fatalf("missing agent_id = %v, want 400", err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func apiStatus(err error) int {
	if e, ok := err.(*APIError); ok {
		return e.Status
	}
	return 0
}

// TestDrainMarkGone: with mark_gone the drained agent is marked gone as
// MARK_AGENT_GONE does (shut down, never readmitted under its ID).
func TestDrainMarkGone(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:1024")
	f := h.subscribe(fwInfo("fw", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	runningTask(h, f, a, "t", nil)
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.drainAgent(a.id, graceCfg(time.Second, true), fin) }); err != nil {
		t.Fatal(err)
	}
	if h.s.gone[a.id] {
		t.Fatal("marked gone while a task still runs")
	}
	u := a.update(f.id, "t", mesos.TaskState_TASK_KILLED, true)
	f.updates()
	drainAck(f, a, "t", u)
	if !h.s.gone[a.id] || h.s.agents[a.id] != nil || !h.reg.inner.Gone(a.id) {
		t.Fatal("drained agent with mark_gone not marked gone")
	}
	evs, ended := a.st.Drain()
	if !ended || len(evs) == 0 || evs[len(evs)-1].GetType() != protocol.AgentEvent_SHUTDOWN {
		t.Fatalf("agent got %v (ended %v), want SHUTDOWN", eventTypes(evs), ended)
	}
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.drainAgent(a.id, graceCfg(0, false), fin) }); apiStatus(err) != http.StatusNotFound {
		t.Fatalf("draining a gone agent = %v, want 404", err)
	}
}

// TestUnreachableAgentDrainsOnReturn: DRAIN_AGENT on an unreachable agent
// is recorded; when the agent comes back with its task it is deactivated,
// the task killed, and it drains.
func TestUnreachableAgentDrainsOnReturn(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:512")
	pa := h.subscribe(fwInfo("pa", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	runningTask(h, pa, a, "t", nil)
	h.s.markUnreachable(h.s.agents[a.id], "test", h.now)
	h.settle()
	pa.updates()
	if h.s.unreachable[a.id] == nil {
		t.Fatal("agent not unreachable")
	}
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.drainAgent(a.id, graceCfg(5*time.Second, false), fin) }); err != nil {
		t.Fatal(err)
	}
	if drainStateOf(h, a.id) != mesos.DrainState_DRAINING {
		t.Fatalf("unreachable agent: %v, want DRAINING until it returns", drainStateOf(h, a.id))
	}
	sub := agentSub("a", "cpus:4;mem:512")
	sub.AgentInfo.Id = agentID(a.id)
	sub.Frameworks = []*mesos.FrameworkInfo{h.s.frameworks[pa.id].info}
	sub.Tasks = []*mesos.Task{{Name: proto.String("t"), TaskId: &mesos.TaskID{Value: proto.String("t")}, FrameworkId: frameworkID(pa.id),
		AgentId: agentID(a.id), State: mesos.TaskState_TASK_RUNNING.Enum(), Resources: resources.MustParse("cpus:1;mem:128").AllocatedTo("*").Proto()}}
	back := h.agentSubscribe(sub)
	if k := kills(back.events); len(k) != 1 || k["t"].GetKillPolicy().GetGracePeriod().GetNanoseconds() != int64(3*time.Second) {
		t.Fatalf("returning agent got %v, want KILL_TASK t with the task's default 3s grace (under the 5s cap)", eventTypes(back.events))
	}
	ag := h.s.agents[a.id]
	if ag == nil || ag.active() || !ag.deactivated || ag.drain.GetState() != mesos.DrainState_DRAINING {
		t.Fatalf("returned agent: %+v", ag)
	}
	if !h.alloc.has("DeactivateAgent " + a.id) {
		t.Fatal("allocator offers the returned draining agent")
	}
	u := back.update(pa.id, "t", mesos.TaskState_TASK_KILLED, true)
	pa.updates()
	drainAck(pa, back, "t", u)
	if drainStateOf(h, a.id) != mesos.DrainState_DRAINED {
		t.Fatalf("after the kill was acknowledged: %v, want DRAINED", drainStateOf(h, a.id))
	}
}

// TestDrainSurvivesFailover: a new leader loads the drain from the
// registry; the agent re-registering with it is deactivated and its tasks
// killed again, and it then drains.
func TestDrainSurvivesFailover(t *testing.T) {
	h := newHarness(t)
	h.reg.inner.Admit(&mesos.AgentInfo{Id: agentID("OLD-S1"), Hostname: proto.String("a")}, "", func(error) {})
	h.reg.inner.UpdateDrain("OLD-S1", registrar.Drain{Deactivated: true, Info: &mesos.DrainInfo{
		State: mesos.DrainState_DRAINING.Enum(), Config: graceCfg(2*time.Second, false)}}, func(error) {})
	eventually(t, func() bool { return h.reg.inner.Drain("OLD-S1").Deactivated })
	rec, err := h.reg.inner.Recover(t.Context(), h.s.info)
	if err != nil {
		t.Fatal(err)
	}
	h.s.leading = false
	h.s.elect(rec, 2, h.now)
	h.settle()

	fwi := fwInfo("fw")
	fwi.Id = frameworkID("OLD-0000")
	sub := agentSub("a", "cpus:4;mem:512")
	sub.AgentInfo.Id = agentID("OLD-S1")
	sub.Frameworks = []*mesos.FrameworkInfo{fwi}
	sub.Tasks = []*mesos.Task{{Name: proto.String("t"), TaskId: &mesos.TaskID{Value: proto.String("t")}, FrameworkId: fwi.Id,
		AgentId: agentID("OLD-S1"), State: mesos.TaskState_TASK_RUNNING.Enum(), Resources: resources.MustParse("cpus:1;mem:32").Proto()}}
	a := h.agentSubscribe(sub)
	if k := kills(a.events); len(k) != 1 || k["t"].GetKillPolicy().GetGracePeriod().GetNanoseconds() != int64(2*time.Second) {
		t.Fatalf("re-registered draining agent got %v, want KILL_TASK t with 2s grace", eventTypes(a.events))
	}
	if ag := h.s.agents["OLD-S1"]; ag == nil || ag.active() || h.s.snapshot(h.now).Agents[0].DrainInfo.GetState() != mesos.DrainState_DRAINING {
		t.Fatal("re-registered agent is not shown draining")
	}
	// The framework is not subscribed: the terminal update has no one to
	// acknowledge it yet, so the agent stays DRAINING until it does.
	a.update("OLD-0000", "t", mesos.TaskState_TASK_KILLED, true)
	if drainStateOf(h, "OLD-S1") != mesos.DrainState_DRAINING {
		t.Fatal("DRAINED without an acknowledgement")
	}
	f := h.subscribe(fwi)
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{}})
	u := a.update("OLD-0000", "t", mesos.TaskState_TASK_KILLED, true)
	f.updates()
	drainAck(f, a, "t", u)
	if drainStateOf(h, "OLD-S1") != mesos.DrainState_DRAINED {
		t.Fatalf("after the ack: %v", drainStateOf(h, "OLD-S1"))
	}
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(time.Millisecond) // polling interval of a goroutine's completion
	}
}

// A failed registry write answers 503 and changes nothing: the agent stays
// active and is offered; the next call works.
func TestDrainRegistrarFailure(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:1024")
	f := h.subscribe(fwInfo("fw"))
	runningTask(h, f, a, "t", nil)
	good := h.s.reg
	h.s.reg = failingRegistrarDrain{good}
	_, err := h.drainCall(func(s *state, fin func(error)) { s.drainAgent(a.id, graceCfg(time.Second, false), fin) })
	if apiStatus(err) != http.StatusServiceUnavailable {
		t.Fatalf("drain with a failing registry = %v, want 503", err)
	}
	ag := h.s.agents[a.id]
	if !ag.active() || ag.drain != nil || len(kills(a.drain())) != 0 || h.alloc.has("DeactivateAgent "+a.id) || !h.s.drainOf(a.id).IsZero() {
		t.Fatal("a failed drain write changed the agent")
	}
	h.s.reg = good
	if _, err := h.drainCall(func(s *state, fin func(error)) { s.drainAgent(a.id, graceCfg(time.Second, false), fin) }); err != nil {
		t.Fatalf("drain after the registry recovered: %v", err)
	}
	if len(kills(a.drain())) != 1 {
		t.Fatal("the task was not killed")
	}
}

// A registry that no longer holds the agent (pruned) makes a 404, not a
// 503 that would read as a storage failure.
func TestDrainUnknownToRegistry(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:1024")
	h.s.reg = unknownAgentRegistrar{h.s.reg}
	_, err := h.drainCall(func(s *state, fin func(error)) { s.deactivateAgent(a.id, fin) })
	if apiStatus(err) != http.StatusNotFound || !h.s.agents[a.id].active() {
		t.Fatalf("deactivate of an agent the registry lost = %v (active %v), want 404 and no change", err, h.s.agents[a.id].active())
	}
}

type unknownAgentRegistrar struct{ Registrar }

func (unknownAgentRegistrar) UpdateDrain(id string, _ registrar.Drain, done func(error)) {
	done(fmt.Errorf("update drain of agent %s: %w", id, registrar.ErrUnknownAgent))
}

type failingRegistrarDrain struct{ Registrar }

func (failingRegistrarDrain) UpdateDrain(_ string, _ registrar.Drain, done func(error)) {
	done(errors.New("disk on fire"))
}
