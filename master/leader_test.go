package master

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/quotapb"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// fakeElection is an Election the test drives: several masters given
// fakeElections over one MemoryRegistrar behave like masters over one
// replicated registry.
type fakeElection struct {
	mu     sync.Mutex
	leader bool
	term   uint64
	addr   string
	subs   []chan bool
}

func (f *fakeElection) LeaderCh() <-chan bool {
	ch := make(chan bool, 1)
	f.mu.Lock()
	ch <- f.leader
	f.subs = append(f.subs, ch)
	f.mu.Unlock()
	return ch
}

func (f *fakeElection) IsLeader() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.leader }
func (f *fakeElection) Term() uint64   { f.mu.Lock(); defer f.mu.Unlock(); return f.term }
func (f *fakeElection) LeaderAddr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addr
}

// set changes leadership, term and the known leader's address.
func (f *fakeElection) set(leader bool, term uint64, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leader, f.term, f.addr = leader, term, addr
	for _, ch := range f.subs {
		select {
		case <-ch:
		default:
		}
		ch <- leader
	}
}

// haMaster is one master of an in-process group.
type haMaster struct {
	*Master
	e     *fakeElection
	alloc *recordingAllocator
}

// startHA starts a master with a fake election over reg and a fake clock.
func startHA(t *testing.T, id string, port int, reg Registrar, clk *clock.Fake, mod ...func(*Config)) *haMaster {
	t.Helper()
	e := &fakeElection{}
	alloc := &recordingAllocator{}
	cfg := Config{ID: id, Hostname: "m-" + id, IP: "127.0.0.1", Port: port, Version: "test", Clock: clk,
		Allocator: alloc, Registrar: reg, Election: e,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range mod {
		f(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	return &haMaster{Master: m, e: e, alloc: alloc}
}

// waitFor polls cond (wall time, bounded).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, bounded by the deadline
	}
}

func (h *haMaster) elect(t *testing.T, term uint64) {
	t.Helper()
	h.e.set(true, term, "")
	waitFor(t, "election", func() bool { return h.Snapshot().Elected })
}

func subscribeAgent(t *testing.T, m *Master, sub *protocol.AgentCall_Subscribe) (*AgentStream, []*protocol.AgentEvent) {
	t.Helper()
	st, err := m.SubscribeAgent(context.Background(), Principal{}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: sub})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := next(t, st.Ready(), st.Drain)
	return st, evs
}

// drainEnded reads a stream until the master ends it.
func drainEnded[T any](t *testing.T, ready <-chan struct{}, drain func() ([]T, bool)) []T {
	t.Helper()
	var all []T
	for {
		evs, ended := next(t, ready, drain)
		all = append(all, evs...)
		if ended {
			return all
		}
	}
}

func TestFollowerRefusesAndRedirects(t *testing.T) {
	clk := clock.NewFake(epoch0)
	a := startHA(t, "A", 5050, NewMemoryRegistrar(), clk)
	if s := a.Snapshot(); s.Elected || s.Leader != nil {
		t.Fatalf("a master with an election starts as a follower: %+v", s)
	}
	_, err := a.Subscribe(context.Background(), Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: fwInfo("fw")}})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable {
		t.Fatalf("no leader known: got %v, want 503", err)
	}
	a.e.set(false, 3, "m-b:5060")
	waitFor(t, "leader address", func() bool { return a.Snapshot().Leader != nil })
	_, err = a.SubscribeAgent(context.Background(), Principal{}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: agentSub("h", "cpus:1;mem:64")})
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusTemporaryRedirect || apiErr.Leader != "m-b:5060" {
		t.Fatalf("follower: got %#v, want 307 to m-b:5060", err)
	}
	if err := a.UpdateWeights(context.Background(), Principal{}, []*mesos.WeightInfo{{Role: proto.String("r"), Weight: proto.Float64(2)}}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusTemporaryRedirect {
		t.Fatalf("UpdateWeights on a follower: %v", err)
	}
}

// A full failover in one process: A leads, an agent and a framework run a
// task; A is deposed and B elected over the same registry. A drops its
// state and closes its streams; B expects the agent, readmits it with its
// tasks, fences with the new epoch, and the framework re-subscribes with
// its ID and finds its task.
func TestFailoverRebuildsFromAgentsAndFrameworks(t *testing.T) {
	clk := clock.NewFake(epoch0)
	reg := NewMemoryRegistrar()
	a := startHA(t, "A", 5050, reg, clk)
	b := startHA(t, "B", 5060, reg, clk)
	b.e.set(false, 1, "m-A:5050")
	a.elect(t, 1)
	if reg.Master().GetId() != "A" {
		t.Fatalf("registry's leading master = %v, want A", reg.Master())
	}

	ast, evs := subscribeAgent(t, a.Master, agentSub("h1", "cpus:2;mem:256"))
	if evs[0].GetType() != protocol.AgentEvent_SUBSCRIBED || evs[0].GetEpoch() != 1 {
		t.Fatalf("agent got %v epoch %d", eventTypes(evs), evs[0].GetEpoch())
	}
	agent := evs[0].GetSubscribed().GetAgentId().GetValue()
	info := fwInfo("fw", mesos.FrameworkInfo_Capability_PARTITION_AWARE)
	fst, err := a.Subscribe(context.Background(), Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: info}})
	if err != nil {
		t.Fatal(err)
	}
	next(t, fst.Ready(), fst.Drain)
	fwID := fst.FrameworkID()
	a.AllocatorOffer(fwID, allocator.Offers{"*": {agent: resources.MustParse("cpus:2;mem:256")}})
	fevs, _ := next(t, fst.Ready(), fst.Drain)
	call := acceptCall(fevs[0].GetOffers().GetOffers(), launch(cmdTask("t1", agent, "cpus:1;mem:32")))
	call.FrameworkId = frameworkID(fwID)
	if err := a.SchedulerCall(context.Background(), Principal{}, call, fst.ID()); err != nil {
		t.Fatal(err)
	}
	aevs, _ := next(t, ast.Ready(), ast.Drain)
	run := aevs[len(aevs)-1]
	if run.GetType() != protocol.AgentEvent_RUN_TASK {
		t.Fatalf("agent got %v", eventTypes(aevs))
	}

	// Failover: A loses leadership, B wins term 2.
	a.e.set(false, 2, "m-B:5060")
	drainEnded(t, fst.Ready(), fst.Drain)
	drainEnded(t, ast.Ready(), ast.Drain)
	waitFor(t, "A deposed", func() bool { return !a.Snapshot().Elected && a.Snapshot().Leader != nil })
	if s := a.Snapshot(); len(s.Frameworks) != 0 || len(s.Agents) != 0 || LeaderHostPort(s.Leader) != "m-B:5060" {
		t.Fatalf("deposed master kept state or lost the leader: %d frameworks, %d agents, leader %v", len(s.Frameworks), len(s.Agents), s.Leader)
	}
	if !a.alloc.has("RemoveAgent "+agent) || !a.alloc.has("RemoveFramework "+fwID) {
		t.Fatal("deposed master did not empty its allocator (it could still make offers)")
	}
	// A late allocation on the deposed master makes no offer.
	a.AllocatorOffer(fwID, allocator.Offers{"*": {agent: resources.MustParse("cpus:1")}})

	b.elect(t, 2)
	if s := b.Snapshot(); len(s.RecoveredAgents) != 1 || s.RecoveredAgents[0] != agent {
		t.Fatalf("B expects %v, want [%s]", s.RecoveredAgents, agent)
	}
	// Reconciliation of the task while its agent has not re-registered:
	// no answer (the agent may still bring it back).
	fst2, err := b.Subscribe(context.Background(), Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: proto.Clone(infoWithID(info, fwID)).(*mesos.FrameworkInfo)}})
	if err != nil {
		t.Fatal(err)
	}
	fevs, _ = next(t, fst2.Ready(), fst2.Drain)
	if fevs[0].GetSubscribed().GetFrameworkId().GetValue() != fwID {
		t.Fatalf("re-subscription got framework %v", fevs[0].GetSubscribed().GetFrameworkId())
	}
	rec := func(task, agent string) *schedulerpb.Call {
		return &schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), FrameworkId: frameworkID(fwID),
			Reconcile: &schedulerpb.Call_Reconcile{Tasks: []*schedulerpb.Call_Reconcile_Task{{
				TaskId: &mesos.TaskID{Value: proto.String(task)}, AgentId: agentID(agent)}}}}
	}
	if err := b.SchedulerCall(context.Background(), Principal{}, rec("t1", agent), fst2.ID()); err != nil {
		t.Fatal(err)
	}
	if err := b.SchedulerCall(context.Background(), Principal{}, rec("ghost", "no-such-agent"), fst2.ID()); err != nil {
		t.Fatal(err)
	}
	fevs, _ = next(t, fst2.Ready(), fst2.Drain)
	var updates []*mesos.TaskStatus
	for _, ev := range fevs {
		if ev.GetType() == schedulerpb.Event_UPDATE {
			updates = append(updates, ev.GetUpdate().GetStatus())
		}
	}
	if len(updates) != 1 || updates[0].GetTaskId().GetValue() != "ghost" || updates[0].GetState() != mesos.TaskState_TASK_UNKNOWN {
		t.Fatalf("reconciliation after failover: %v (want only ghost TASK_UNKNOWN)", updates)
	}

	// The agent re-registers with B, reporting its framework and task.
	sub := agentSub("h1", "cpus:2;mem:256")
	sub.AgentInfo.Id = agentID(agent)
	sub.Epoch = proto.Uint64(1)
	sub.Frameworks = []*mesos.FrameworkInfo{infoWithID(info, fwID)}
	sub.Tasks = []*mesos.Task{{Name: proto.String("t1"), TaskId: &mesos.TaskID{Value: proto.String("t1")},
		FrameworkId: frameworkID(fwID), AgentId: agentID(agent), State: mesos.TaskState_TASK_RUNNING.Enum(),
		Resources: resources.MustParse("cpus:1;mem:32").Proto()}}
	bst, evs := subscribeAgent(t, b.Master, sub)
	if evs[0].GetType() != protocol.AgentEvent_SUBSCRIBED || evs[0].GetEpoch() != 2 {
		t.Fatalf("re-registration with B: %v epoch %d", eventTypes(evs), evs[0].GetEpoch())
	}
	defer bst.Close()
	waitFor(t, "B's snapshot to show the agent", func() bool { return len(b.Snapshot().Agents) == 1 })
	s := b.Snapshot()
	if len(s.RecoveredAgents) != 0 || len(s.Agents) != 1 || len(s.Frameworks) != 1 || len(s.Frameworks[0].Tasks) != 1 {
		t.Fatalf("B after re-registration: expected %v, %d agents, frameworks %+v", s.RecoveredAgents, len(s.Agents), s.Frameworks)
	}
	if st := s.Frameworks[0].Tasks[0].GetState(); st != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("rebuilt task state %v", st)
	}
	if !reg.Admitted(agent) {
		t.Fatal("agent not admitted in the registry after re-registration")
	}
}

func infoWithID(info *mesos.FrameworkInfo, id string) *mesos.FrameworkInfo {
	c := proto.Clone(info).(*mesos.FrameworkInfo)
	c.Id = frameworkID(id)
	return c
}

// Agents the registry lists that do not come back within
// AgentReregisterTimeout are marked unreachable through the registrar,
// no faster than the removal rate limit allows.
func TestReregisterTimeoutMarksUnreachable(t *testing.T) {
	clk := clock.NewFake(epoch0)
	reg := NewMemoryRegistrar()
	a := startHA(t, "A", 5050, reg, clk)
	a.elect(t, 1)
	var ids []string
	for _, h := range []string{"h1", "h2", "h3"} {
		st, evs := subscribeAgent(t, a.Master, agentSub(h, "cpus:1;mem:64"))
		defer st.Close()
		ids = append(ids, evs[0].GetSubscribed().GetAgentId().GetValue())
	}
	a.e.set(false, 2, "")
	waitFor(t, "A deposed", func() bool { return !a.Snapshot().Elected })

	b := startHA(t, "B", 5060, reg, clk, func(c *Config) {
		c.AgentReregisterTimeout = time.Minute
		c.AgentRemovalInterval = 10 * time.Second
	})
	b.elect(t, 2)
	// h1 comes back in time.
	sub := agentSub("h1", "cpus:1;mem:64")
	sub.AgentInfo.Id = agentID(ids[0])
	st, evs := subscribeAgent(t, b.Master, sub)
	defer st.Close()
	if evs[0].GetType() != protocol.AgentEvent_SUBSCRIBED {
		t.Fatalf("h1: %v", eventTypes(evs))
	}
	clk.Advance(time.Minute)
	waitFor(t, "first removal", func() bool { return len(b.Snapshot().UnreachableAgents) == 1 })
	if _, ok := reg.Unreachable(ids[1]); !ok {
		t.Fatalf("h2 (%s) not unreachable in the registry", ids[1])
	}
	if _, ok := reg.Unreachable(ids[2]); ok {
		t.Fatal("h3 marked unreachable before the rate limit allowed it")
	}
	clk.Advance(10 * time.Second)
	waitFor(t, "second removal", func() bool { return len(b.Snapshot().UnreachableAgents) == 2 })
	if _, ok := reg.Unreachable(ids[0]); ok {
		t.Fatal("the agent that re-registered was marked unreachable")
	}
	if s := b.Snapshot(); len(s.RecoveredAgents) != 0 {
		t.Fatalf("still expecting %v", s.RecoveredAgents)
	}
}

// The registrar-design partition scenario: an agent is partitioned away
// and marked unreachable; the operator marks it gone; the master fails
// over; when the partition heals the agent is refused under its old ID
// and told to register anew.
func TestPartitionedAgentRemovedIsRefusedAfterFailover(t *testing.T) {
	clk := clock.NewFake(epoch0)
	reg := NewMemoryRegistrar()
	a := startHA(t, "A", 5050, reg, clk)
	a.elect(t, 1)
	st, evs := subscribeAgent(t, a.Master, agentSub("h1", "cpus:1;mem:64"))
	id := evs[0].GetSubscribed().GetAgentId().GetValue()
	st.Close() // the partition: the agent's stream is gone, pings go unanswered
	cfg := a.Config()
	// Advance a ping timeout at a time until the master gives up on the
	// agent: a fixed number of advances, each followed by a short sleep,
	// lost a round whenever the loop had not re-armed its ping timer
	// before the next advance (a loaded machine).
	waitFor(t, "agent unreachable", func() bool {
		if len(a.Snapshot().UnreachableAgents) == 1 {
			return true
		}
		clk.Advance(cfg.AgentPingTimeout)
		return false
	})
	if err := a.MarkAgentGone(context.Background(), Principal{}, id); err != nil {
		t.Fatal(err)
	}
	if !reg.Gone(id) {
		t.Fatal("agent not gone in the registry")
	}
	a.e.set(false, 2, "m-B:5060")
	b := startHA(t, "B", 5060, reg, clk)
	b.elect(t, 2)

	sub := agentSub("h1", "cpus:1;mem:64")
	sub.AgentInfo.Id = agentID(id)
	st2, evs := subscribeAgent(t, b.Master, sub)
	evs = append(evs, drainEnded(t, st2.Ready(), st2.Drain)...)
	if evs[0].GetType() != protocol.AgentEvent_SHUTDOWN || evs[0].GetEpoch() != 2 {
		t.Fatalf("healed agent got %v, want SHUTDOWN (epoch 2)", eventTypes(evs))
	}
	if len(b.Snapshot().Agents) != 0 {
		t.Fatal("removed agent was readmitted")
	}
}

// brokenStore fails writes once told to, as a store that lost its
// quorum would.
type brokenStore struct {
	*MemoryRegistrar
	mu      sync.Mutex
	fail    bool
	recover int
}

func (f *brokenStore) failing() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.fail }

func (f *brokenStore) Admit(info *mesos.AgentInfo, principal string, done func(error)) {
	if f.failing() {
		go done(ErrRegistryUnavailable)
		return
	}
	f.MemoryRegistrar.Admit(info, principal, done)
}

func (f *brokenStore) Recover(ctx context.Context, info *mesos.MasterInfo) (*RecoveredRegistry, error) {
	f.mu.Lock()
	f.recover++
	f.fail = false
	f.mu.Unlock()
	return f.MemoryRegistrar.Recover(ctx, info)
}

// A failed registry write makes the leader step down (drop its soft
// state) and recover the registry before serving again.
func TestRegistryFailureStepsDownAndRecovers(t *testing.T) {
	clk := clock.NewFake(epoch0)
	reg := &brokenStore{MemoryRegistrar: NewMemoryRegistrar()}
	a := startHA(t, "A", 5050, reg, clk)
	a.elect(t, 1)
	fst, err := a.Subscribe(context.Background(), Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: fwInfo("fw")}})
	if err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	reg.fail = true
	reg.mu.Unlock()
	st, evs := subscribeAgent(t, a.Master, agentSub("h1", "cpus:1;mem:64"))
	defer st.Close()
	if evs[0].GetType() != protocol.AgentEvent_ERROR {
		t.Fatalf("agent admitted despite a failed write: %v", eventTypes(evs))
	}
	drainEnded(t, fst.Ready(), fst.Drain) // stepped down: streams closed
	waitFor(t, "recovered again", func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return reg.recover >= 2 && a.Snapshot().Elected
	})
	if s := a.Snapshot(); len(s.Frameworks) != 0 {
		t.Fatalf("soft state survived the step-down: %+v", s.Frameworks)
	}
}

// Strict recovery of an empty registry is fatal.
func TestStrictEmptyRegistryIsFatal(t *testing.T) {
	clk := clock.NewFake(epoch0)
	fatal := make(chan error, 1)
	a := startHA(t, "A", 5050, emptyStrict{NewMemoryRegistrar()}, clk, func(c *Config) {
		c.OnFatal = func(err error) { fatal <- err }
	})
	a.e.set(true, 1, "")
	select {
	case err := <-fatal:
		if !errors.Is(err, ErrEmptyRegistry) {
			t.Fatalf("fatal error %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no fatal error")
	}
	if a.Snapshot().Elected {
		t.Fatal("served from an empty registry in strict mode")
	}
}

type emptyStrict struct{ *MemoryRegistrar }

func (emptyStrict) Recover(context.Context, *mesos.MasterInfo) (*RecoveredRegistry, error) {
	return nil, ErrEmptyRegistry
}

// Explicit reconciliation gets no answer while the task's agent (or, for
// a task named without its agent, any agent) is being re-admitted after a
// failover: the task may come back with it.
func TestReconcileWaitsForReadmission(t *testing.T) {
	h := newHarness(t)
	h.s.elect(&RecoveredRegistry{Agents: []string{"A1"}}, 2, h.now)
	f := h.subscribe(fwInfo("fw"))
	h.reg.hold = true
	sub := agentSub("h1", "cpus:1;mem:64")
	sub.AgentInfo.Id = agentID("A1")
	if _, err := h.s.agentSubscribe(sub, "", h.now); err != nil {
		t.Fatal(err)
	}
	h.settle()
	f.drain()
	for _, agent := range []string{"A1", ""} {
		f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), FrameworkId: frameworkID(f.id),
			Reconcile: &schedulerpb.Call_Reconcile{Tasks: []*schedulerpb.Call_Reconcile_Task{{
				TaskId: &mesos.TaskID{Value: proto.String("t1")}, AgentId: agentIDOrNil(agent)}}}})
	}
	if u := f.updates(); len(u) != 0 {
		t.Fatalf("answered while the agent is being re-admitted: %v", u)
	}
	h.reg.hold = false
	h.reg.release()
	h.settle()
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), FrameworkId: frameworkID(f.id),
		Reconcile: &schedulerpb.Call_Reconcile{Tasks: []*schedulerpb.Call_Reconcile_Task{{
			TaskId: &mesos.TaskID{Value: proto.String("t1")}, AgentId: agentID("A1")}}}})
	if u := f.updates(); len(u) != 1 || u[0].GetState() != mesos.TaskState_TASK_LOST {
		t.Fatalf("after re-admission: %v, want TASK_LOST (unknown to the agent)", u)
	}
}

func agentIDOrNil(id string) *mesos.AgentID {
	if id == "" {
		return nil
	}
	return agentID(id)
}

// A newly elected master pauses allocation until
// AllocatorAgentRecoveryFactor of its registry's agents are back, or
// until its hold (AllocatorRecoveryHold without quota,
// AllocatorRecoveryTimeout with quota) ends.
func TestAllocationPausedWhileAgentsReregister(t *testing.T) {
	hosts := []string{"h1", "h2", "h3", "h4", "h5"}
	// setup registers the hosts with a first master, deposes it, and
	// returns the registry and the agents' IDs.
	setup := func(t *testing.T, quota bool) (*clock.Fake, *MemoryRegistrar, []string) {
		clk := clock.NewFake(epoch0)
		reg := NewMemoryRegistrar()
		a := startHA(t, "A", 5050, reg, clk)
		a.elect(t, 1)
		if a.alloc.has("Pause") {
			t.Fatal("paused with an empty registry")
		}
		var ids []string
		for _, h := range hosts {
			st, evs := subscribeAgent(t, a.Master, agentSub(h, "cpus:1;mem:64"))
			t.Cleanup(st.Close)
			ids = append(ids, evs[0].GetSubscribed().GetAgentId().GetValue())
		}
		if quota {
			done := make(chan error, 1)
			reg.UpdateQuota([]*quotapb.QuotaConfig{quotaConfig("web", scalars("cpus", 1.0), nil)}, func(err error) { done <- err })
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		a.e.set(false, 2, "")
		waitFor(t, "A deposed", func() bool { return !a.Snapshot().Elected })
		return clk, reg, ids
	}
	reregister := func(t *testing.T, m *haMaster, ids []string, i int) {
		t.Helper()
		sub := agentSub(hosts[i], "cpus:1;mem:64")
		sub.AgentInfo.Id = agentID(ids[i])
		st, evs := subscribeAgent(t, m.Master, sub)
		t.Cleanup(st.Close)
		if evs[0].GetType() != protocol.AgentEvent_SUBSCRIBED {
			t.Fatalf("%s: %v", hosts[i], eventTypes(evs))
		}
	}
	// settled runs a loop pass and reports whether allocation resumed.
	resumed := func(m *haMaster) bool {
		m.Snapshot()
		return m.alloc.has("Resume")
	}

	t.Run("enough agents return", func(t *testing.T) {
		clk, reg, ids := setup(t, false)
		b := startHA(t, "B", 5060, reg, clk)
		b.elect(t, 2)
		if !b.alloc.has("Pause") {
			t.Fatal("allocation not paused after the election")
		}
		for i := range 3 { // 3 of 5 is below 0.8
			reregister(t, b, ids, i)
		}
		if resumed(b) {
			t.Fatal("resumed with 3 of 5 agents back")
		}
		reregister(t, b, ids, 3)
		waitFor(t, "resume at 4 of 5", func() bool { return resumed(b) })
	})
	t.Run("hold without quota", func(t *testing.T) {
		clk, reg, ids := setup(t, false)
		b := startHA(t, "B", 5060, reg, clk, func(c *Config) { c.AllocatorRecoveryHold = 30 * time.Second })
		b.elect(t, 2)
		reregister(t, b, ids, 0)
		clk.Advance(29 * time.Second)
		if resumed(b) {
			t.Fatal("resumed before the hold ended")
		}
		clk.Advance(time.Second)
		waitFor(t, "resume after the hold", func() bool { return resumed(b) })
	})
	t.Run("timeout with quota", func(t *testing.T) {
		clk, reg, _ := setup(t, true)
		b := startHA(t, "B", 5060, reg, clk, func(c *Config) {
			c.AllocatorRecoveryHold = 30 * time.Second
			c.AllocatorRecoveryTimeout = time.Minute
		})
		b.elect(t, 2)
		clk.Advance(30 * time.Second)
		if resumed(b) {
			t.Fatal("with quota, resumed at the no-quota hold")
		}
		clk.Advance(30 * time.Second)
		waitFor(t, "resume at the recovery timeout", func() bool { return resumed(b) })
	})
	t.Run("no pause without quota when the hold is negative", func(t *testing.T) {
		clk, reg, _ := setup(t, false)
		b := startHA(t, "B", 5060, reg, clk, func(c *Config) { c.AllocatorRecoveryHold = -1 })
		b.elect(t, 2)
		if b.alloc.has("Pause") {
			t.Fatal("paused although AllocatorRecoveryHold < 0 and no quota")
		}
	})
	t.Run("deposed while paused", func(t *testing.T) {
		clk, reg, _ := setup(t, false)
		b := startHA(t, "B", 5060, reg, clk)
		b.elect(t, 2)
		b.e.set(false, 3, "")
		waitFor(t, "B deposed and resumed", func() bool { return !b.Snapshot().Elected && b.alloc.has("Resume") })
	})
}
