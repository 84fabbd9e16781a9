package master

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/quotapb"
	"mezzo/api/schedulerpb"
	"mezzo/internal/authorizer"
	"mezzo/internal/clock"
	"mezzo/resources"
)

// The ACLs of these tests: nothing is allowed unless granted. "ops" may do
// every operator action; frameworks of principal "fw" may register with
// role "web" and run tasks as "nobody"; agents "agent-1" and "agent-2"
// may register.
const testACLs = `{
  "permissive": false,
  "register_frameworks": [{"principals": {"values": ["fw", "fw2"]}, "roles": {"values": ["web"]}}],
  "run_tasks": [{"principals": {"values": ["fw", "fw2"]}, "users": {"values": ["nobody"]}}],
  "register_agents": [{"principals": {"values": ["agent-1", "agent-2"]}, "agents": {"type": "ANY"}}],
  "teardown_frameworks": [{"principals": {"values": ["ops"]}, "framework_principals": {"type": "ANY"}}],
  "mark_agents_gone": [{"principals": {"values": ["ops"]}, "agents": {"type": "ANY"}}],
  "update_weights": [{"principals": {"values": ["ops"]}, "roles": {"type": "ANY"}}],
  "update_quotas": [{"principals": {"values": ["ops"]}, "roles": {"type": "ANY"}}],
  "reserve_resources": [{"principals": {"values": ["ops"]}, "roles": {"type": "ANY"}}],
  "drain_agents": [{"principals": {"values": ["ops"]}, "agents": {"type": "ANY"}}],
  "deactivate_agents": [{"principals": {"values": ["ops"]}, "agents": {"type": "ANY"}}],
  "reactivate_agents": [{"principals": {"values": ["ops"]}, "agents": {"type": "ANY"}}],
  "update_maintenance_schedules": [{"principals": {"values": ["ops"]}, "machines": {"type": "ANY"}}],
  "start_maintenances": [{"principals": {"values": ["ops"]}, "machines": {"type": "ANY"}}],
  "stop_maintenances": [{"principals": {"values": ["ops"]}, "machines": {"type": "ANY"}}]
}`

func startAuthzMaster(t *testing.T) *Master {
	t.Helper()
	acls, err := authorizer.ParseACLs([]byte(testACLs))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{ID: "M", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test", Clock: clock.NewFake(epoch0),
		Allocator: &recordingAllocator{}, Authorizer: authorizer.NewLocal(acls),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

func status(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	if err == nil {
		return 0
	}
	return -1
}

func subscribeCall(info *mesos.FrameworkInfo) *schedulerpb.Call {
	return &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(), Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: info}}
}

func principalFw(principal, role string) *mesos.FrameworkInfo {
	info := fwInfo("fw-" + principal)
	info.Principal = proto.String(principal)
	info.Role = proto.String(role)
	info.User = proto.String("nobody")
	return info
}

// firstEvent subscribes and returns the stream and its first event.
func firstEvent(t *testing.T, m *Master, p Principal, info *mesos.FrameworkInfo) (*FrameworkStream, *schedulerpb.Event) {
	t.Helper()
	st, err := m.Subscribe(context.Background(), p, subscribeCall(info))
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	evs, _ := next(t, st.Ready(), st.Drain)
	return st, evs[0]
}

func TestSubscribeAuthorization(t *testing.T) {
	m := startAuthzMaster(t)
	ctx := context.Background()

	// The authenticated principal must be the one in FrameworkInfo.
	if _, err := m.Subscribe(ctx, Principal{Name: "eve"}, subscribeCall(principalFw("fw", "web"))); status(err) != http.StatusBadRequest ||
		!strings.Contains(err.Error(), "Authenticated principal 'eve' does not match principal 'fw'") {
		t.Fatalf("mismatched principal: %v", err)
	}
	// register_frameworks: a role the principal may not use.
	if _, ev := firstEvent(t, m, Principal{Name: "fw"}, principalFw("fw", "batch")); ev.GetType() != schedulerpb.Event_ERROR ||
		!strings.Contains(ev.GetError().GetMessage(), "not authorized to register_frameworks (role \"batch\")") {
		t.Fatalf("unauthorized role: %v", ev)
	}
	if n := len(m.Snapshot().Frameworks); n != 0 {
		t.Fatalf("refused subscriptions registered %d frameworks", n)
	}
	// Allowed: then another principal may not take the framework over by
	// re-subscribing with its ID, not even with its own valid credentials.
	st, ev := firstEvent(t, m, Principal{Name: "fw"}, principalFw("fw", "web"))
	if ev.GetType() != schedulerpb.Event_SUBSCRIBED {
		t.Fatalf("authorized subscribe: %v", ev)
	}
	hijack := principalFw("fw2", "web")
	hijack.Id = &mesos.FrameworkID{Value: proto.String(st.FrameworkID())}
	if _, ev := firstEvent(t, m, Principal{Name: "fw2"}, hijack); ev.GetType() != schedulerpb.Event_ERROR ||
		!strings.Contains(ev.GetError().GetMessage(), "Changing framework's principal is not allowed") {
		t.Fatalf("principal change: %v", ev)
	}
	// Nor act on it with scheduler calls.
	call := &schedulerpb.Call{FrameworkId: hijack.Id, Type: schedulerpb.Call_TEARDOWN.Enum()}
	if err := m.SchedulerCall(ctx, Principal{Name: "fw2"}, call, st.ID()); status(err) != http.StatusBadRequest {
		t.Fatalf("another principal's TEARDOWN: %v", err)
	}
	if s := m.Snapshot(); len(s.Frameworks) != 1 || !s.Frameworks[0].Connected {
		t.Fatalf("framework after refused takeovers: %+v", s.Frameworks)
	}
}

func TestRootSubmissionsRefused(t *testing.T) {
	clk := clock.NewFake(epoch0)
	m, err := New(Config{ID: "M", Version: "test", Clock: clk, Allocator: &recordingAllocator{}, RefuseRootSubmissions: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	defer m.Stop()
	if _, ev := firstEvent(t, m, Principal{}, fwInfo("root-fw")); ev.GetType() != schedulerpb.Event_ERROR ||
		!strings.Contains(ev.GetError().GetMessage(), "--root_submissions") {
		t.Fatalf("root framework: %v", ev)
	}
}

func TestLaunchAuthorization(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		acls, _ := authorizer.ParseACLs([]byte(testACLs))
		c.Authorizer = authorizer.NewLocal(acls)
	})
	info := principalFw("fw", "web")
	f := h.subscribe(info)
	a := h.addAgent("h1", "cpus:4;mem:1024")
	a.drain()
	o := h.offer(f, a, "web", "cpus:4;mem:1024")
	root := cmdTask("as-root", a.id, "cpus:1;mem:32")
	root.Command.User = proto.String("root")
	ok := cmdTask("as-nobody", a.id, "cpus:1;mem:32")
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(root, ok)))
	var unauthorized *mesos.TaskStatus
	for _, st := range f.updates() {
		if st.GetTaskId().GetValue() == "as-root" {
			unauthorized = st
		}
	}
	if unauthorized.GetState() != mesos.TaskState_TASK_ERROR || unauthorized.GetReason() != mesos.TaskStatus_REASON_TASK_UNAUTHORIZED ||
		!strings.Contains(unauthorized.GetMessage(), "run_tasks (user \"root\")") {
		t.Fatalf("root task: %v", unauthorized)
	}
	var runs []string
	for _, ev := range a.drain() {
		if ev.GetType() == protocol.AgentEvent_RUN_TASK {
			runs = append(runs, ev.GetRunTask().GetTask().GetTaskId().GetValue())
		}
	}
	if strings.Join(runs, ",") != "as-nobody" {
		t.Fatalf("agent told to run %v, want only as-nobody", runs)
	}
	if got := h.task(f.id, "as-nobody").GetUser(); got != "nobody" {
		t.Fatalf("Task.user = %q, want the user it runs as", got)
	}
	if h.s.counters["master/authorization_denials"] != 1 {
		t.Fatalf("denials counted: %v", h.s.counters["master/authorization_denials"])
	}
}

func TestAgentAuthorizationAndImpersonation(t *testing.T) {
	m := startAuthzMaster(t)
	ctx := context.Background()
	sub := func(p string, id string) (*AgentStream, error) {
		s := agentSub("h-"+p, "cpus:1;mem:128")
		if id != "" {
			s.AgentInfo.Id = agentID(id)
		}
		return m.SubscribeAgent(ctx, Principal{Name: p}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: s})
	}
	if _, err := sub("intruder", ""); status(err) != http.StatusForbidden || !strings.Contains(err.Error(), "register_agents") {
		t.Fatalf("unauthorized agent: %v", err)
	}
	st, err := sub("agent-1", "")
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := next(t, st.Ready(), st.Drain)
	id := evs[0].GetSubscribed().GetAgentId().GetValue()
	// agent-2 may register, but not as agent-1's ID.
	if _, err := sub("agent-2", id); status(err) != http.StatusForbidden || !strings.Contains(err.Error(), "registered as principal 'agent-1'") {
		t.Fatalf("agent-2 presenting agent-1's ID: %v", err)
	}
	forged := &protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum(), AgentId: agentID(id)}
	if err := m.AgentCall(ctx, Principal{Name: "agent-2"}, forged); status(err) != http.StatusForbidden {
		t.Fatalf("agent-2 calling as agent-1: %v", err)
	}
	if err := m.AgentCall(ctx, Principal{Name: "agent-1"}, forged); err != nil {
		t.Fatalf("agent-1's own call: %v", err)
	}
}

// lockedLog collects a master's log lines (written from its loop).
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The binding of agent IDs to principals survives a failover: the
// registry records the principal each agent registered as, so the new
// leader refuses an impostor holding another valid credential who
// presents the victim's ID before the victim is back (403, logged and
// counted, nothing changes), and the victim's own re-registration works.
// An entry without a principal (an anonymous registration, as registries
// written before principals were recorded) binds on its next
// registration; a removed agent's ID is refused to everyone. Over the
// in-memory registrar and the replicated registry.
func TestAgentBindingSurvivesFailover(t *testing.T) {
	for name, newReg := range map[string]func(*testing.T) Registrar{
		"memory":     func(*testing.T) Registrar { return NewMemoryRegistrar() },
		"replicated": func(t *testing.T) Registrar { r, _ := newReplicated(t, false); return r },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(epoch0)
			reg := newReg(t)
			logs := &lockedLog{}
			a := startHA(t, "A", 5050, reg, clk)
			b := startHA(t, "B", 5060, reg, clk, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
			b.e.set(false, 1, "m-A:5050")
			a.elect(t, 1)
			sub := func(m *Master, p, id, host string) (*AgentStream, error) {
				s := agentSub(host, "cpus:1;mem:128")
				if id != "" {
					s.AgentInfo.Id = agentID(id)
				}
				return m.SubscribeAgent(ctx, Principal{Name: p}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: s})
			}
			subscribed := func(st *AgentStream, err error) string {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				evs, _ := next(t, st.Ready(), st.Drain)
				if evs[0].GetType() != protocol.AgentEvent_SUBSCRIBED {
					t.Fatalf("got %v, want SUBSCRIBED", eventTypes(evs))
				}
				return evs[0].GetSubscribed().GetAgentId().GetValue()
			}
			victim := subscribed(sub(a.Master, "agent-1", "", "victim"))
			unbound := subscribed(sub(a.Master, "", "", "anonymous"))

			a.e.set(false, 2, "m-B:5060")
			waitFor(t, "A deposed", func() bool { return !a.Snapshot().Elected })
			b.elect(t, 2)

			// The impostor is first at the new leader.
			if _, err := sub(b.Master, "agent-2", victim, "evil"); status(err) != http.StatusForbidden ||
				!strings.Contains(err.Error(), "registered as principal 'agent-1'; principal 'agent-2' may not act for it") {
				t.Fatalf("impostor's SUBSCRIBE with the victim's ID after the failover: %v, want 403", err)
			}
			forged := &protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), AgentId: agentID(victim),
				StatusUpdate: &protocol.AgentCall_StatusUpdate{FrameworkId: frameworkID("fw"),
					Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t")}, State: mesos.TaskState_TASK_FINISHED.Enum()}}}
			if err := b.AgentCall(ctx, Principal{Name: "agent-2"}, forged); status(err) != http.StatusForbidden {
				t.Fatalf("impostor's status update for the victim's ID: %v, want 403", err)
			}
			s := b.Snapshot()
			if s.Counters["master/authorization_denials"] != 2 || !strings.Contains(logs.String(), "agent impersonation refused") {
				t.Fatalf("refusals counted %v, logged: %s", s.Counters["master/authorization_denials"], logs)
			}
			if len(s.Agents) != 0 || len(s.RecoveredAgents) != 2 {
				t.Fatalf("the refusals changed the new leader: agents %d, still expected %v", len(s.Agents), s.RecoveredAgents)
			}
			if rr, ok := reg.(*ReplicatedRegistrar); ok {
				info, err := rr.Registrar().Registry().Agent(victim)
				if p := rr.Registrar().Registry().Principal(victim); err != nil || info.GetHostname() != "victim" || p != "agent-1" {
					t.Fatalf("victim's registry entry after the refusals: %v %v bound to %q", info, err, p)
				}
			}

			// The victim re-registers; the unbound entry binds to the
			// first principal that registers it.
			if got := subscribed(sub(b.Master, "agent-1", victim, "victim")); got != victim {
				t.Fatalf("victim re-registered as %s", got)
			}
			subscribed(sub(b.Master, "agent-2", unbound, "anonymous"))
			if _, err := sub(b.Master, "agent-1", unbound, "anonymous"); status(err) != http.StatusForbidden {
				t.Fatalf("an entry bound on its first registration after the failover, presented by another principal: %v", err)
			}
			waitFor(t, "both agents registered with B", func() bool { return len(b.Snapshot().Agents) == 2 })

			// A removed agent's binding goes with it: its ID is refused to
			// every principal alike, with SHUTDOWN.
			if err := b.MarkAgentGone(ctx, Principal{}, victim); err != nil {
				t.Fatal(err)
			}
			st, err := sub(b.Master, "agent-2", victim, "evil")
			if err != nil {
				t.Fatal(err)
			}
			if evs := drainEnded(t, st.Ready(), st.Drain); evs[0].GetType() != protocol.AgentEvent_SHUTDOWN {
				t.Fatalf("the removed agent's ID presented by another principal got %v, want SHUTDOWN", eventTypes(evs))
			}
			if rr, ok := reg.(*ReplicatedRegistrar); ok && rr.Registrar().Registry().Principal(victim) != "" {
				t.Fatal("the registry kept a removed agent's binding")
			}
		})
	}
}

// Every operator write is refused (403 naming its action, nothing
// changed) for a principal the ACLs do not grant it to, and reaches the
// call for one they do.
func TestOperatorCallsAuthorized(t *testing.T) {
	m := startAuthzMaster(t)
	ctx := context.Background()
	st, err := m.SubscribeAgent(ctx, Principal{Name: "agent-1"}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(),
		Subscribe: agentSub("h1", "cpus:4;mem:1024")})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := next(t, st.Ready(), st.Drain)
	agent := evs[0].GetSubscribed().GetAgentId().GetValue()
	fst, ev := firstEvent(t, m, Principal{Name: "fw"}, principalFw("fw", "web"))
	if ev.GetType() != schedulerpb.Event_SUBSCRIBED {
		t.Fatal(ev)
	}
	fw := fst.FrameworkID()
	machine := []*mesos.MachineID{{Hostname: proto.String("h1")}}
	reserve := func(principal string) *mesos.Offer_Operation {
		rs := resources.MustParse("cpus:1").Proto()
		rs[0].Reservations = []*mesos.Resource_ReservationInfo{{Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(),
			Role: proto.String("web"), Principal: proto.String(principal)}}
		return &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum(), Reserve: &mesos.Offer_Operation_Reserve{Resources: rs}}
	}
	grace := time.Second
	calls := []struct {
		action authorizer.Action
		call   func(p Principal) error
	}{
		{authorizer.UpdateWeight, func(p Principal) error {
			return m.UpdateWeights(ctx, p, []*mesos.WeightInfo{{Role: proto.String("web"), Weight: proto.Float64(2)}})
		}},
		{authorizer.UpdateQuota, func(p Principal) error {
			return m.UpdateQuota(ctx, p, true, []*quotapb.QuotaConfig{{Role: proto.String("web")}})
		}},
		{authorizer.ReserveResources, func(p Principal) error {
			return m.ApplyOperation(ctx, p, agent, reserve(p.Name))
		}},
		{authorizer.UpdateMaintenanceSchedule, func(p Principal) error {
			return m.UpdateMaintenanceSchedule(ctx, p, &maintenancepb.Schedule{})
		}},
		{authorizer.StartMaintenance, func(p Principal) error { return m.StartMaintenance(ctx, p, machine) }},
		{authorizer.StopMaintenance, func(p Principal) error { return m.StopMaintenance(ctx, p, machine) }},
		{authorizer.DeactivateAgent, func(p Principal) error { return m.DeactivateAgent(ctx, p, agent) }},
		{authorizer.ReactivateAgent, func(p Principal) error { return m.ReactivateAgent(ctx, p, agent) }},
		{authorizer.DrainAgent, func(p Principal) error { return m.DrainAgent(ctx, p, agent, &grace, false) }},
		{authorizer.TeardownFramework, func(p Principal) error { return m.KillTask(ctx, p, fw, "no-such-task") }},
		{authorizer.TeardownFramework, func(p Principal) error { return m.Teardown(ctx, p, fw) }},
		{authorizer.MarkAgentGone, func(p Principal) error { return m.MarkAgentGone(ctx, p, agent) }},
	}
	for _, c := range calls {
		for _, p := range []Principal{{Name: "dev"}, {}} {
			before := m.Snapshot()
			err := c.call(p)
			if status(err) != http.StatusForbidden || !strings.Contains(err.Error(), "not authorized to "+string(c.action)) {
				t.Fatalf("%s as %q: %v, want 403 naming the action", c.action, p.Name, err)
			}
			after := m.Snapshot()
			if len(after.Frameworks) != len(before.Frameworks) || len(after.Agents) != len(before.Agents) ||
				len(after.Weights) != len(before.Weights) {
				t.Fatalf("%s refused for %q but the state changed", c.action, p.Name)
			}
		}
		if err := c.call(Principal{Name: "ops"}); status(err) == http.StatusForbidden {
			t.Fatalf("%s as ops: %v", c.action, err)
		}
	}
}
