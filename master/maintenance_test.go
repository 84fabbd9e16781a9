package master

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/allocatorpb"
	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
)

func (h *heldRegistrar) UpdateSchedule(s *maintenancepb.Schedule, done func(error)) {
	h.do(func(d func(error)) { h.inner.UpdateSchedule(s, d) }, done)
}

func (h *heldRegistrar) StartMaintenance(ms []*mesos.MachineID, done func(error)) {
	h.do(func(d func(error)) { h.inner.StartMaintenance(ms, d) }, done)
}

func (h *heldRegistrar) StopMaintenance(ms []*mesos.MachineID, done func(error)) {
	h.do(func(d func(error)) { h.inner.StopMaintenance(ms, d) }, done)
}

func host(h string) *mesos.MachineID { return &mesos.MachineID{Hostname: proto.String(h)} }

func window(start time.Time, d time.Duration, ms ...*mesos.MachineID) *maintenancepb.Window {
	return &maintenancepb.Window{MachineIds: ms, Unavailability: &mesos.Unavailability{
		Start:    &mesos.TimeInfo{Nanoseconds: proto.Int64(start.UnixNano())},
		Duration: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(d))},
	}}
}

func schedule(ws ...*maintenancepb.Window) *maintenancepb.Schedule {
	return &maintenancepb.Schedule{Windows: ws}
}

// Mesos's maintenance validation (src/master/maintenance.cpp,
// validation::schedule/machines/machine/unavailability).
func TestValidateSchedule(t *testing.T) {
	t0 := epoch0.Add(time.Hour)
	neg := window(t0, time.Hour, host("a"))
	neg.Unavailability.Duration.Nanoseconds = proto.Int64(-1)
	noStart := window(t0, time.Hour, host("a"))
	noStart.Unavailability.Start = nil
	down := map[string]*mesos.MachineID{machineKey(host("d")): host("d")}
	for _, tc := range []struct {
		name  string
		sched *maintenancepb.Schedule
		down  map[string]*mesos.MachineID
		want  string // substring of the error; "" for valid
	}{
		{"empty schedule", schedule(), nil, ""},
		{"one window", schedule(window(t0, time.Hour, host("a"), host("b"))), nil, ""},
		{"ip only", schedule(window(t0, time.Hour, &mesos.MachineID{Ip: proto.String("10.0.0.9")})), nil, ""},
		{"hostname and ip", schedule(window(t0, time.Hour, &mesos.MachineID{Hostname: proto.String("a"), Ip: proto.String("10.0.0.9")})), nil, ""},
		{"two windows", schedule(window(t0, time.Hour, host("a")), window(t0, time.Hour, host("b"))), nil, ""},
		{"empty window", schedule(window(t0, time.Hour)), nil, "windows[0]: List of machines in the maintenance window is empty"},
		{"empty machine", schedule(window(t0, time.Hour, &mesos.MachineID{})), nil, "windows[0].machine_ids[0]: Both 'hostname' and 'ip' for a machine are empty"},
		{"bad ip", schedule(window(t0, time.Hour, &mesos.MachineID{Ip: proto.String("10.0.0")})), nil, "invalid 'ip'"},
		{"twice in a window", schedule(window(t0, time.Hour, host("a"), host("A"))), nil, "appears more than once in the schedule"},
		{"in two windows", schedule(window(t0, time.Hour, host("a")), window(t0, time.Hour, host("a"))), nil, "windows[1].machine_ids[0]: Machine '{\"hostname\":\"a\"}' appears more than once"},
		{"negative duration", schedule(neg), nil, "Unavailability 'duration' is negative"},
		{"no start", schedule(noStart), nil, "unavailability.start"},
		{"down kept", schedule(window(t0, time.Hour, host("d"))), down, ""},
		{"same host, different ips", schedule(window(t0, time.Hour, &mesos.MachineID{Hostname: proto.String("a"), Ip: proto.String("10.0.0.1")},
			&mesos.MachineID{Hostname: proto.String("a"), Ip: proto.String("10.0.0.2")})), nil, ""},
		{"host and host/ip overlap", schedule(window(t0, time.Hour, host("a")),
			window(t0, time.Hour, &mesos.MachineID{Hostname: proto.String("A"), Ip: proto.String("10.0.0.1")})), nil,
			"windows[1].machine_ids[0]: Machine '{\"hostname\":\"A\",\"ip\":\"10.0.0.1\"}' may be the machine '{\"hostname\":\"a\"}' of s.windows[0].machine_ids[0]"},
		{"host and ip overlap", schedule(window(t0, time.Hour, host("a"), &mesos.MachineID{Ip: proto.String("10.0.0.1")})), nil, "may be the machine"},
		{"down dropped", schedule(window(t0, time.Hour, host("a"))), down, "Machine '{\"hostname\":\"d\"}' is deactivated and cannot be removed from the schedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateSchedule(tc.sched, tc.down, "s")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, tc.want) {
				t.Fatalf("error %v, want 400 containing %q", err, tc.want)
			}
		})
	}
}

func TestValidateMachines(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []*mesos.MachineID
		want string
	}{
		{"none", nil, "List of machines is empty"},
		{"one", []*mesos.MachineID{host("a")}, ""},
		{"duplicate", []*mesos.MachineID{host("a"), host("b"), host("a")}, "m[2]: Machine '{\"hostname\":\"a\"}' appears more than once"},
		{"empty id", []*mesos.MachineID{{}}, "m[0]: Both 'hostname' and 'ip' for a machine are empty"},
		{"ipv6", []*mesos.MachineID{{Ip: proto.String("::1")}}, "not an IPv4 address"},
		{"bad ip", []*mesos.MachineID{{Ip: proto.String("nope")}}, "invalid 'ip'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateMachines(tc.ids, "m")
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMachineMatches(t *testing.T) {
	for _, tc := range []struct {
		m        *mesos.MachineID
		host, ip string
		want     bool
	}{
		{host("Node1"), "node1", "10.0.0.2", true},
		{host("node1"), "node2", "10.0.0.2", false},
		{&mesos.MachineID{Ip: proto.String("10.0.0.2")}, "node1", "10.0.0.2", true},
		{&mesos.MachineID{Ip: proto.String("10.0.0.3")}, "node1", "10.0.0.2", false},
		{&mesos.MachineID{Hostname: proto.String("node1"), Ip: proto.String("10.0.0.3")}, "node1", "10.0.0.2", false},
		{&mesos.MachineID{}, "", "", false},
	} {
		if got := machineMatches(tc.m, tc.host, tc.ip); got != tc.want {
			t.Errorf("machineMatches(%v, %q, %q) = %v", tc.m, tc.host, tc.ip, got)
		}
	}
}

// runMaint runs one of the state's maintenance writes to completion.
func (h *harness) runMaint(f func(finish func(error))) error {
	h.t.Helper()
	var r result
	f(r.finish)
	h.settle()
	if !r.done {
		h.t.Fatal("maintenance call did not finish")
	}
	return r.err
}

// The walk-through of docs/maintenance.md in process: a schedule drains
// the machine (offers carry unavailability, the framework gets an inverse
// offer and answers it), DOWN ends the agent's tasks and refuses its
// registration, UP lets it back.
func TestMaintenanceLifecycle(t *testing.T) {
	h := newHarness(t)
	h.s.elect(nil, 1, h.now)
	pa := h.subscribe(fwInfo("aware", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	plain := h.subscribe(fwInfo("plain"))
	a := h.addAgent("node1", "cpus:4;mem:4096")
	b := h.agentSubscribe(func() *protocol.AgentCall_Subscribe {
		s := agentSub("node2", "cpus:4;mem:4096")
		s.Endpoint = proto.String("10.0.0.3:5051")
		return s
	}())
	for _, f := range []*fakeFramework{pa, plain} {
		o := h.offer(f, a, "*", "cpus:1;mem:128")
		f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t-"+f.id, a.id, "cpus:1;mem:128"))))
		a.update(f.id, "t-"+f.id, mesos.TaskState_TASK_RUNNING, false)
		f.drain()
	}

	// A window for node1: the allocator learns its unavailability; node2
	// is untouched.
	start := h.now.Add(time.Hour)
	sched := schedule(window(start, 2*time.Hour, host("NODE1")))
	if err := h.runMaint(func(fin func(error)) { h.s.updateSchedule(sched, fin) }); err != nil {
		t.Fatal(err)
	}
	if !h.alloc.has("UpdateUnavailability "+a.id+" start=") || h.alloc.has("UpdateUnavailability "+b.id) {
		t.Fatalf("allocator calls: %v", h.alloc.calls)
	}
	if o := h.offer(pa, a, "*", "cpus:1;mem:128"); o.GetUnavailability().GetStart().GetNanoseconds() != start.UnixNano() {
		t.Fatalf("offer on a draining machine: unavailability %v", o.GetUnavailability())
	}
	if o := h.offer(pa, b, "*", "cpus:1;mem:128"); o.Unavailability != nil {
		t.Fatalf("offer on an UP machine carries %v", o.GetUnavailability())
	}

	// The allocator's inverse offer reaches the framework; it declines.
	h.s.inverseAllocated(pa.id, map[string]*mesos.Unavailability{a.id: sched.Windows[0].Unavailability}, h.now)
	h.settle()
	var io *mesos.InverseOffer
	for _, ev := range pa.drain() {
		if ev.GetType() == schedulerpb.Event_INVERSE_OFFERS {
			io = ev.GetInverseOffers().GetInverseOffers()[0]
		}
	}
	if io == nil || io.GetAgentId().GetValue() != a.id || io.GetUnavailability().GetDuration().GetNanoseconds() != int64(2*time.Hour) {
		t.Fatalf("inverse offer %v", io)
	}
	if v := h.s.snapshot(h.now).Maintenance; len(v.InverseOffers[pa.id]) != 1 || v.Agents[a.id] == nil || v.Agents[b.id] != nil {
		t.Fatalf("view: %+v", v)
	}
	pa.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_DECLINE_INVERSE_OFFERS.Enum(),
		DeclineInverseOffers: &schedulerpb.Call_DeclineInverseOffers{InverseOfferIds: []*mesos.OfferID{io.GetId()},
			Filters: &mesos.Filters{RefuseSeconds: proto.Float64(30)}}})
	if !h.alloc.has("UpdateInverseOffer " + a.id + " " + pa.id + " refuse=30") {
		t.Fatalf("allocator not told of the answer: %v", h.alloc.calls)
	}
	st := h.s.snapshot(h.now).Maintenance.Status
	if len(st.DrainingMachines) != 1 || len(st.DrainingMachines[0].Statuses) != 1 ||
		st.DrainingMachines[0].Statuses[0].GetStatus() != allocatorpb.InverseOfferStatus_DECLINE ||
		st.DrainingMachines[0].Statuses[0].GetFrameworkId().GetValue() != pa.id {
		t.Fatalf("status %v", st)
	}
	// Answering again (the offer is gone) is ignored, not an error.
	pa.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_ACCEPT_INVERSE_OFFERS.Enum(),
		AcceptInverseOffers: &schedulerpb.Call_AcceptInverseOffers{InverseOfferIds: []*mesos.OfferID{io.GetId()}}})

	// A new inverse offer is rescinded when the window moves; the
	// answers are forgotten.
	h.s.inverseAllocated(pa.id, map[string]*mesos.Unavailability{a.id: sched.Windows[0].Unavailability}, h.now)
	h.settle()
	pa.drain()
	moved := schedule(window(start.Add(time.Hour), time.Hour, host("node1")))
	if err := h.runMaint(func(fin func(error)) { h.s.updateSchedule(moved, fin) }); err != nil {
		t.Fatal(err)
	}
	if got := eventTypes(pa.drain()); !contains(got, "RESCIND_INVERSE_OFFER") {
		t.Fatalf("after the window moved: %v", got)
	}
	if st := h.s.snapshot(h.now).Maintenance.Status; len(st.DrainingMachines[0].Statuses) != 0 {
		t.Fatalf("answers survived a change of the window: %v", st)
	}

	// Only scheduled, DRAINING machines go down; only DOWN ones come up.
	if err := h.runMaint(func(fin func(error)) { h.s.startMaintenance([]*mesos.MachineID{host("node2")}, fin) }); err == nil ||
		!strings.Contains(err.Error(), "is not part of a maintenance schedule") {
		t.Fatalf("down of an unscheduled machine: %v", err)
	}
	if err := h.runMaint(func(fin func(error)) { h.s.stopMaintenance([]*mesos.MachineID{host("node1")}, fin) }); err == nil ||
		!strings.Contains(err.Error(), "is not in DOWN mode") {
		t.Fatalf("up of a draining machine: %v", err)
	}
	if err := h.runMaint(func(fin func(error)) { h.s.startMaintenance([]*mesos.MachineID{host("node1")}, fin) }); err != nil {
		t.Fatal(err)
	}
	var shut bool
	for _, ev := range a.drain() {
		shut = shut || ev.GetType() == protocol.AgentEvent_SHUTDOWN
	}
	if !shut || h.s.agents[a.id] != nil {
		t.Fatalf("agent on a DOWN machine: shutdown=%v registered=%v", shut, h.s.agents[a.id] != nil)
	}
	wantState := map[*fakeFramework]mesos.TaskState{pa: mesos.TaskState_TASK_GONE_BY_OPERATOR, plain: mesos.TaskState_TASK_LOST}
	for f, want := range wantState {
		ups := f.updates()
		reason := mesos.TaskStatus_REASON_AGENT_REMOVED
		if want == mesos.TaskState_TASK_GONE_BY_OPERATOR {
			reason = mesos.TaskStatus_REASON_AGENT_REMOVED_BY_OPERATOR
		}
		if len(ups) != 1 || ups[0].GetState() != want || ups[0].GetReason() != reason {
			t.Fatalf("%s: updates %v, want %v", f.id, ups, want)
		}
	}
	if err := h.runMaint(func(fin func(error)) { h.s.startMaintenance([]*mesos.MachineID{host("node1")}, fin) }); err == nil {
		t.Fatal("a DOWN machine went down again")
	}
	// The schedule may not drop a DOWN machine.
	if err := h.runMaint(func(fin func(error)) { h.s.updateSchedule(schedule(), fin) }); err == nil ||
		!strings.Contains(err.Error(), "is deactivated and cannot be removed") {
		t.Fatalf("schedule dropping a DOWN machine: %v", err)
	}
	if st := h.s.snapshot(h.now).Maintenance.Status; len(st.DownMachines) != 1 || len(st.DrainingMachines) != 0 {
		t.Fatalf("status after down: %v", st)
	}

	// A new agent on the DOWN machine is refused with SHUTDOWN.
	again := h.addAgent("node1", "cpus:4;mem:4096")
	if again.id != "" || len(again.events) != 1 || again.events[0].GetType() != protocol.AgentEvent_SHUTDOWN ||
		again.events[0].GetShutdown().GetMessage() != "Machine is `DOWN`" {
		t.Fatalf("registration on a DOWN machine: %v", again.events)
	}

	// UP: the machine leaves the schedule, a new agent registers.
	if err := h.runMaint(func(fin func(error)) { h.s.stopMaintenance([]*mesos.MachineID{host("node1")}, fin) }); err != nil {
		t.Fatal(err)
	}
	if v := h.s.snapshot(h.now).Maintenance; len(v.Schedule.GetWindows()) != 0 || len(v.Status.DownMachines) != 0 {
		t.Fatalf("after up: %+v", v)
	}
	if back := h.addAgent("node1", "cpus:4;mem:4096"); back.id == "" || h.s.agents[back.id] == nil {
		t.Fatalf("agent after UP: %v", back.events)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// The schedule and DOWN machines are in the registry: a newly elected
// master starts from them (registrar-design: the registry is the master's
// replicated state).
func TestMaintenanceSurvivesFailover(t *testing.T) {
	h := newHarness(t)
	h.s.elect(nil, 1, h.now)
	sched := schedule(window(h.now.Add(time.Hour), time.Hour, host("node1"), host("node2")))
	if err := h.runMaint(func(fin func(error)) { h.s.updateSchedule(sched, fin) }); err != nil {
		t.Fatal(err)
	}
	if err := h.runMaint(func(fin func(error)) { h.s.startMaintenance([]*mesos.MachineID{host("node2")}, fin) }); err != nil {
		t.Fatal(err)
	}
	rec, err := h.reg.inner.Recover(context.Background(), &mesos.MasterInfo{})
	if err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t)
	h2.s.elect(rec, 2, h2.now)
	v := h2.s.snapshot(h2.now).Maintenance
	if len(v.Status.DrainingMachines) != 1 || v.Status.DrainingMachines[0].GetId().GetHostname() != "node1" ||
		len(v.Status.DownMachines) != 1 || v.Status.DownMachines[0].GetHostname() != "node2" {
		t.Fatalf("recovered status %v", v.Status)
	}
	a := h2.addAgent("node1", "cpus:1;mem:128")
	if !h2.alloc.has("UpdateUnavailability " + a.id + " start=") {
		t.Fatalf("recovered schedule not applied to a returning agent: %v", h2.alloc.calls)
	}
	if refused := h2.addAgent("node2", "cpus:1;mem:128"); refused.id != "" {
		t.Fatal("agent on a recovered DOWN machine registered")
	}
}

// Inverse offers live like offers: one the master cannot deliver (agent
// not scheduled any more) goes back to the allocator at once; a framework
// that disconnects loses its inverse offers (the allocator is told they
// are not outstanding); an agent that leaves takes its inverse offers with
// it (rescinded).
func TestInverseOfferLifetime(t *testing.T) {
	h := newHarness(t)
	h.s.elect(nil, 1, h.now)
	f := h.subscribe(fwInfo("f"))
	a := h.addAgent("node1", "cpus:4;mem:4096")
	sched := schedule(window(h.now.Add(time.Hour), time.Hour, host("node1")))
	if err := h.runMaint(func(fin func(error)) { h.s.updateSchedule(sched, fin) }); err != nil {
		t.Fatal(err)
	}
	u := sched.Windows[0].Unavailability

	// Stale: the allocator's unavailability differs from the schedule.
	stale := proto.Clone(u).(*mesos.Unavailability)
	stale.Duration.Nanoseconds = proto.Int64(1)
	h.s.inverseAllocated(f.id, map[string]*mesos.Unavailability{a.id: stale}, h.now)
	h.settle()
	if evs := f.drain(); len(evs) != 0 || !h.alloc.has("UpdateInverseOffer "+a.id+" "+f.id+" none") {
		t.Fatalf("stale inverse offer: events %v, allocator %v", eventTypes(evs), h.alloc.calls)
	}

	// Disconnect: dropped.
	h.s.inverseAllocated(f.id, map[string]*mesos.Unavailability{a.id: u}, h.now)
	h.settle()
	if got := eventTypes(f.drain()); !contains(got, "INVERSE_OFFERS") {
		t.Fatalf("events %v", got)
	}
	h.alloc.calls = nil
	h.s.disconnectFramework(h.s.frameworks[f.id], h.now)
	h.settle()
	if len(h.s.snapshot(h.now).Maintenance.InverseOffers) != 0 || !h.alloc.has("UpdateInverseOffer "+a.id+" "+f.id+" none") {
		t.Fatalf("inverse offers of a disconnected framework: %v, allocator %v", h.s.snapshot(h.now).Maintenance.InverseOffers, h.alloc.calls)
	}

	// Agent leaves: rescinded.
	g := h.subscribe(fwInfo("g"))
	h.s.inverseAllocated(g.id, map[string]*mesos.Unavailability{a.id: u}, h.now)
	h.settle()
	g.drain()
	if err := a.call(&protocol.AgentCall{Type: protocol.AgentCall_UNREGISTER.Enum()}); err != nil {
		t.Fatal(err)
	}
	if got := eventTypes(g.drain()); !contains(got, "RESCIND_INVERSE_OFFER") {
		t.Fatalf("events after the agent left: %v", got)
	}
	if v := h.s.snapshot(h.now).Maintenance; len(v.InverseOffers) != 0 || len(v.Agents) != 0 {
		t.Fatalf("view after the agent left: %+v", v)
	}
}

// machinesOverlap is the naive oracle: some agent would run on both
// machines.
func machinesOverlap(a, b *mesos.MachineID) bool {
	hostOK := a.GetHostname() == "" || b.GetHostname() == "" || strings.EqualFold(a.GetHostname(), b.GetHostname())
	ipOK := a.GetIp() == "" || b.GetIp() == "" || a.GetIp() == b.GetIp()
	return hostOK && ipOK
}

// The schedule's overlap check (linear, by index) against the pairwise
// oracle machinesOverlap, on random small sets of machine IDs.
func TestOverlapsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		gen := rapid.Custom(func(rt *rapid.T) *mesos.MachineID {
			m := &mesos.MachineID{}
			if h := rapid.SampledFrom([]string{"", "a", "A", "b"}).Draw(rt, "host"); h != "" {
				m.Hostname = proto.String(h)
			}
			if ip := rapid.SampledFrom([]string{"", "10.0.0.1", "10.0.0.2"}).Draw(rt, "ip"); ip != "" || m.Hostname == nil {
				if ip == "" {
					ip = "10.0.0.3"
				}
				m.Ip = proto.String(ip)
			}
			return m
		})
		ids := rapid.SliceOfN(gen, 0, 6).Draw(rt, "ids")
		var ov overlaps
		seen := map[string]bool{}
		var kept []*mesos.MachineID
		for i, m := range ids {
			if seen[machineKey(m)] {
				continue // exact duplicates are refused before the overlap check
			}
			seen[machineKey(m)] = true
			want := false
			for _, k := range kept {
				want = want || machinesOverlap(k, m)
			}
			got := ov.add(m, fmt.Sprint(i))
			if (got != nil) != want {
				rt.Fatalf("add %v after %v: got %v, oracle %v", m, kept, got, want)
			}
			if got != nil {
				return // the schedule is refused here
			}
			kept = append(kept, m)
		}
	})
}
