package master

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// Builders for the resources that the text syntax cannot express.

// dynRes returns text's resources dynamically reserved to role (by
// principal, if set), post-refinement.
func dynRes(text, role, principal string) []*mesos.Resource {
	ri := &mesos.Resource_ReservationInfo{Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(), Role: proto.String(role)}
	if principal != "" {
		ri.Principal = proto.String(principal)
	}
	r, err := resources.MustParse(text).PushReservation(ri)
	if err != nil {
		panic(err)
	}
	return r.Proto()
}

// volume is a persistent volume of mb megabytes on disk reserved to role.
func volume(id, role string, mb float64) *mesos.Resource {
	v := dynRes(fmt.Sprintf("disk:%g", mb), role, "")[0]
	v.Disk = &mesos.Resource_DiskInfo{
		Persistence: &mesos.Resource_DiskInfo_Persistence{Id: proto.String(id)},
		Volume:      &mesos.Volume{ContainerPath: proto.String("data"), Mode: mesos.Volume_RW.Enum()},
	}
	return v
}

func reserveOp(rs []*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum(),
		Reserve: &mesos.Offer_Operation_Reserve{Resources: rs}}
}

func unreserveOp(rs []*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_UNRESERVE.Enum(),
		Unreserve: &mesos.Offer_Operation_Unreserve{Resources: rs}}
}

func createOp(vols ...*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_CREATE.Enum(),
		Create: &mesos.Offer_Operation_Create{Volumes: vols}}
}

func destroyOp(vols ...*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_DESTROY.Enum(),
		Destroy: &mesos.Offer_Operation_Destroy{Volumes: vols}}
}

func withID(op *mesos.Offer_Operation, id string) *mesos.Offer_Operation {
	op.Id = &mesos.OperationID{Value: proto.String(id)}
	return op
}

func roleInfo(name, role string, caps ...mesos.FrameworkInfo_Capability_Type) *mesos.FrameworkInfo {
	info := fwInfo(name, caps...)
	info.Role = proto.String(role)
	return info
}

// offerAll offers the agent's whole unallocated total to the framework in
// role (as the allocator would).
func (h *harness) offerAll(f *fakeFramework, a *fakeAgent, role string) *mesos.Offer {
	h.t.Helper()
	h.s.allocated(f.id, allocator.Offers{role: {a.id: h.s.freeOn(h.s.agents[a.id])}}, h.now)
	h.settle()
	offers := f.offers()
	if len(offers) != 1 {
		h.t.Fatalf("want 1 offer, got %d", len(offers))
	}
	return offers[0]
}

// opStatuses drains the framework's events and returns its operation
// statuses as "ID STATE message".
func (f *fakeFramework) opStatuses() []*mesos.OperationStatus {
	var out []*mesos.OperationStatus
	for _, ev := range f.drain() {
		if ev.GetType() == schedulerpb.Event_UPDATE_OPERATION_STATUS {
			out = append(out, ev.GetUpdateOperationStatus().GetStatus())
		}
	}
	return out
}

// checkpoints drains the agent's events and returns the sets of
// CHECKPOINT_RESOURCES events, and the tasks of RUN_TASK events.
func (a *fakeAgent) checkpoints() (sets []resources.Resources, runs []*mesos.TaskInfo) {
	return checkpointsIn(a.drain())
}

func checkpointsIn(evs []*protocol.AgentEvent) (sets []resources.Resources, runs []*mesos.TaskInfo) {
	for _, ev := range evs {
		switch ev.GetType() {
		case protocol.AgentEvent_CHECKPOINT_RESOURCES:
			r, err := resources.FromProto(ev.GetCheckpointResources().GetResources())
			if err != nil {
				panic(err)
			}
			sets = append(sets, r)
		case protocol.AgentEvent_RUN_TASK:
			runs = append(runs, ev.GetRunTask().GetTask())
		}
	}
	return sets, runs
}

func (h *harness) total(a *fakeAgent) resources.Resources { return h.s.agents[a.id].total }

func mustRes(rs []*mesos.Resource) resources.Resources {
	r, err := resources.FromProto(rs)
	if err != nil {
		panic(err)
	}
	return r
}

// A RESERVE and a LAUNCH on the reserved resources in one ACCEPT: the
// task runs on them, the agent's total holds the reservation, the agent
// checkpoints it, the allocator converts the allocation in place (no
// recover and re-offer), and the rest of the offer goes back.
func TestReserveThenLaunchInOneAccept(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:4;mem:1024;disk:1000")
	f := h.subscribe(roleInfo("db-fw", "db"))
	o := h.offerAll(f, a, "db")
	reserved := dynRes("cpus:1;mem:128", "db", "")
	task := cmdTask("t1", a.id, "cpus:1;mem:128")
	task.Resources = resources.ToPreRefinement(reserved)
	f.mustCall(acceptCall([]*mesos.Offer{o}, withID(reserveOp(reserved), "r1"), launch(task)))

	if ups := f.updates(); len(ups) != 0 {
		t.Fatalf("unexpected task updates %v", ups)
	}
	if got := h.task(f.id, "t1"); got == nil || got.GetState() != mesos.TaskState_TASK_STAGING {
		t.Fatalf("task t1 = %v, want STAGING", got)
	}
	sets, runs := a.checkpoints()
	if len(sets) != 1 || !sets[0].Equal(mustRes(reserved)) {
		t.Fatalf("checkpoints %v, want one with %v", sets, mustRes(reserved))
	}
	if len(runs) != 1 || !mustRes(runs[0].GetResources()).WithoutAllocationInfo().Equal(mustRes(reserved)) {
		t.Fatalf("RUN_TASK %v: want the task on the reserved resources", runs)
	}
	want := resources.MustParse("cpus:3;mem:896;disk:1000").Add(mustRes(reserved))
	if !h.total(a).Equal(want) {
		t.Fatalf("agent total %v, want %v", h.total(a), want)
	}
	if !h.alloc.has("UpdateAllocation " + f.id + " " + a.id) {
		t.Fatalf("allocator not told of the conversion: %v", h.alloc.calls)
	}
	rec := h.alloc.recoveries()
	if len(rec) != 1 || !rec[0].res.WithoutAllocationInfo().Equal(resources.MustParse("cpus:3;mem:896;disk:1000")) {
		t.Fatalf("recovered %v, want the unreserved rest", rec)
	}
}

// The operation statuses of the previous test, and one reserve-launch
// ordering that does not work: a LAUNCH takes the unreserved cpus first,
// so a RESERVE of them after it finds nothing left.
func TestOfferOperationOrdering(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:1;mem:256")
	f := h.subscribe(roleInfo("db-fw", "db"))
	o := h.offerAll(f, a, "db")
	f.mustCall(acceptCall([]*mesos.Offer{o},
		launch(cmdTask("t1", a.id, "cpus:1;mem:128")),
		withID(reserveOp(dynRes("cpus:1", "db", "")), "late")))
	sts := f.opStatuses()
	if len(sts) != 1 || sts[0].GetState() != mesos.OperationState_OPERATION_ERROR ||
		!strings.Contains(sts[0].GetMessage(), "not available") {
		t.Fatalf("statuses %v, want OPERATION_ERROR: not available", sts)
	}
	if !h.total(a).Equal(resources.MustParse("cpus:1;mem:256")) {
		t.Fatalf("agent total changed: %v", h.total(a))
	}
	if h.task(f.id, "t1") == nil {
		t.Fatal("the launch before the refused reserve did not run")
	}
}

// acceptOutcome runs one ACCEPT of ops on a fresh agent offered whole to a
// framework and renders what happened, for the table below.
func acceptOutcome(t *testing.T, agentRes string, info *mesos.FrameworkInfo, setup func(h *harness, a *fakeAgent), ops func(agent string) []*mesos.Offer_Operation) string {
	h := newHarness(t)
	a := h.addAgent("a1", agentRes)
	if setup != nil {
		setup(h, a)
		a.drain()
	}
	f := h.subscribe(info)
	o := h.offerAll(f, a, info.GetRole())
	before := h.total(a)
	f.mustCall(acceptCall([]*mesos.Offer{o}, ops(a.id)...))
	var lines []string
	for _, ev := range f.drain() {
		switch ev.GetType() {
		case schedulerpb.Event_UPDATE_OPERATION_STATUS:
			st := ev.GetUpdateOperationStatus().GetStatus()
			lines = append(lines, fmt.Sprintf("op %s %s %s", st.GetOperationId().GetValue(), st.GetState(), st.GetMessage()))
		case schedulerpb.Event_UPDATE:
			st := ev.GetUpdate().GetStatus()
			lines = append(lines, fmt.Sprintf("task %s %s %s", st.GetTaskId().GetValue(), st.GetState(), st.GetMessage()))
		}
	}
	sets, _ := a.checkpoints()
	for _, s := range sets {
		lines = append(lines, "checkpoint "+describe(s))
	}
	if h.total(a).Equal(before) {
		lines = append(lines, "total unchanged")
	}
	return strings.Join(lines, "\n")
}

// The offer-operation table, operation by operation: each case names what
// must appear in the outcome (statuses, checkpoints) and what must not.
func TestOfferOperationTable(t *testing.T) {
	db := roleInfo("db-fw", "db")
	cases := []struct {
		name     string
		agent    string
		info     *mesos.FrameworkInfo
		setup    func(h *harness, a *fakeAgent)
		ops      func(agent string) []*mesos.Offer_Operation
		want     []string
		wantNot  []string
		fullWant string // exact outcome, if set
	}{
		{name: "reserve", agent: "cpus:2;mem:256", info: db,
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(reserveOp(dynRes("cpus:1", "db", "")), "r")}
			},
			fullWant: "op r OPERATION_FINISHED \ncheckpoint cpus(reservations: [(DYNAMIC,db)]):1"},
		{name: "reserve for another role", agent: "cpus:2", info: db,
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(reserveOp(dynRes("cpus:1", "web", "")), "r")}
			},
			want: []string{"op r OPERATION_ERROR", `role "web" is not one of the framework's roles [db]`, "total unchanged"}, wantNot: []string{"checkpoint"}},
		{name: "reserve with a principal that is not the framework's", agent: "cpus:2",
			info: func() *mesos.FrameworkInfo {
				i := roleInfo("db-fw", "db")
				i.Principal = proto.String("alice")
				return i
			}(),
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(reserveOp(dynRes("cpus:1", "db", "bob")), "r")}
			},
			want: []string{"op r OPERATION_ERROR", `principal: "bob" does not match the caller's principal "alice"`, "total unchanged"}},
		{name: "reserve more than offered", agent: "cpus:1", info: db,
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(reserveOp(dynRes("cpus:2", "db", "")), "r")}
			},
			want: []string{"op r OPERATION_ERROR", "not available in the offers", "total unchanged"}},
		{name: "refined reservation without RESERVATION_REFINEMENT", agent: "cpus:1", info: roleInfo("db-fw", "db/a"),
			ops: func(string) []*mesos.Offer_Operation {
				rs := dynRes("cpus:1", "db", "")
				rs[0].Reservations = append(rs[0].Reservations, &mesos.Resource_ReservationInfo{
					Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(), Role: proto.String("db/a")})
				return []*mesos.Offer_Operation{withID(reserveOp(rs), "r")}
			},
			want: []string{"op r OPERATION_ERROR", "RESERVATION_REFINEMENT", "total unchanged"}},
		{name: "reserve without id: no feedback, nothing changes on error", agent: "cpus:1", info: db,
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{reserveOp(dynRes("cpus:5", "db", ""))}
			},
			fullWant: "total unchanged"},
		{name: "reserve then create then launch with the volume", agent: "cpus:2;mem:256;disk:100", info: db,
			ops: func(agent string) []*mesos.Offer_Operation {
				task := cmdTask("t", agent, "cpus:1")
				task.Resources = append(resources.ToPreRefinement(dynRes("cpus:1", "db", "")), resources.ToPreRefinement([]*mesos.Resource{volume("v1", "db", 50)})...)
				return []*mesos.Offer_Operation{
					withID(reserveOp(dynRes("cpus:1;disk:50", "db", "")), "r"),
					withID(createOp(volume("v1", "db", 50)), "c"),
					launch(task),
				}
			},
			want: []string{"op r OPERATION_FINISHED", "op c OPERATION_FINISHED", "checkpoint", "v1"}, wantNot: []string{"task t"}},
		{name: "volume on unreserved disk", agent: "disk:100", info: db,
			ops: func(string) []*mesos.Offer_Operation {
				v := volume("v1", "db", 50)
				v.Reservations = nil
				return []*mesos.Offer_Operation{withID(createOp(v), "c")}
			},
			want: []string{"op c OPERATION_ERROR", "create.volumes[0].reservations: persistent volumes cannot be created from unreserved resources", "total unchanged"}},
		{name: "duplicate persistence ID in one CREATE", agent: "disk:100", info: db,
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{
					reserveOp(dynRes("disk:100", "db", "")),
					withID(createOp(volume("v1", "db", 50), volume("v1", "db", 50)), "c")}
			},
			want: []string{"op c OPERATION_ERROR", `create.volumes[1].disk.persistence.id: persistence ID "v1" of role "db" is already used in this operation`}},
		{name: "duplicate persistence ID on the agent", agent: "disk:100", info: db,
			setup: func(h *harness, a *fakeAgent) {
				if err := h.s.operatorOperation(Principal{}, a.id, reserveOp(dynRes("disk:100", "db", "")), h.now); err != nil {
					t.Fatal(err)
				}
				if err := h.s.operatorOperation(Principal{}, a.id, createOp(volume("v1", "db", 50)), h.now); err != nil {
					t.Fatal(err)
				}
			},
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(createOp(volume("v1", "db", 50)), "c")}
			},
			want: []string{"op c OPERATION_ERROR", `persistence ID "v1" of role "db" is already used on the agent`, "total unchanged"}},
		{name: "destroy and unreserve", agent: "disk:100", info: db,
			setup: func(h *harness, a *fakeAgent) {
				h.s.operatorOperation(Principal{}, a.id, reserveOp(dynRes("disk:100", "db", "")), h.now)
				h.s.operatorOperation(Principal{}, a.id, createOp(volume("v1", "db", 50)), h.now)
			},
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{
					withID(destroyOp(volume("v1", "db", 50)), "d"),
					withID(unreserveOp(dynRes("disk:100", "db", "")), "u")}
			},
			fullWant: "op d OPERATION_FINISHED \nop u OPERATION_FINISHED \ncheckpoint disk(reservations: [(DYNAMIC,db)]):100\ncheckpoint {}"},
		{name: "unreserve another principal's reservation", agent: "cpus:2",
			info: func() *mesos.FrameworkInfo {
				i := roleInfo("db-fw", "db")
				i.Principal = proto.String("bob")
				return i
			}(),
			setup: func(h *harness, a *fakeAgent) {
				if err := h.s.operatorOperation(Principal{}, a.id, reserveOp(dynRes("cpus:2", "db", "alice")), h.now); err != nil {
					t.Fatal(err)
				}
			},
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(unreserveOp(dynRes("cpus:1", "db", "alice")), "u")}
			},
			want:    []string{"op u OPERATION_ERROR", `the reservation was made by principal "alice"; "bob" cannot unreserve it`, "total unchanged"},
			wantNot: []string{"checkpoint"}},
		{name: "grow and shrink a volume", agent: "disk:100", info: db,
			setup: func(h *harness, a *fakeAgent) {
				h.s.operatorOperation(Principal{}, a.id, reserveOp(dynRes("disk:100", "db", "")), h.now)
				h.s.operatorOperation(Principal{}, a.id, createOp(volume("v1", "db", 50)), h.now)
			},
			ops: func(string) []*mesos.Offer_Operation {
				grown := volume("v1", "db", 70)
				return []*mesos.Offer_Operation{
					withID(&mesos.Offer_Operation{Type: mesos.Offer_Operation_GROW_VOLUME.Enum(),
						GrowVolume: &mesos.Offer_Operation_GrowVolume{Volume: volume("v1", "db", 50), Addition: dynRes("disk:20", "db", "")[0]}}, "g"),
					withID(&mesos.Offer_Operation{Type: mesos.Offer_Operation_SHRINK_VOLUME.Enum(),
						ShrinkVolume: &mesos.Offer_Operation_ShrinkVolume{Volume: grown, Subtract: &mesos.Value_Scalar{Value: proto.Float64(40)}}}, "s"),
				}
			},
			fullWant: "op g OPERATION_FINISHED \nop s OPERATION_FINISHED \n" +
				"checkpoint disk(reservations: [(DYNAMIC,db)]):30; disk(reservations: [(DYNAMIC,db)])[v1,data:RW]:70\n" +
				"checkpoint disk(reservations: [(DYNAMIC,db)]):70; disk(reservations: [(DYNAMIC,db)])[v1,data:RW]:30"},
		{name: "grow more than offered", agent: "disk:100", info: db,
			setup: func(h *harness, a *fakeAgent) {
				h.s.operatorOperation(Principal{}, a.id, reserveOp(dynRes("disk:100", "db", "")), h.now)
				h.s.operatorOperation(Principal{}, a.id, createOp(volume("v1", "db", 50)), h.now)
			},
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(&mesos.Offer_Operation{Type: mesos.Offer_Operation_GROW_VOLUME.Enum(),
					GrowVolume: &mesos.Offer_Operation_GrowVolume{Volume: volume("v1", "db", 50), Addition: dynRes("disk:60", "db", "")[0]}}, "g")}
			},
			want: []string{"op g OPERATION_ERROR", "not available in the offers", "total unchanged"}},
		{name: "launch with an operation id", agent: "cpus:1;mem:128", info: db,
			ops: func(agent string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(launch(cmdTask("t", agent, "cpus:1")), "l")}
			},
			want: []string{"task t TASK_ERROR operation feedback is not supported for LAUNCH"}, wantNot: []string{"op l"}},
		{name: "unsupported type", agent: "disk:100", info: db,
			ops: func(string) []*mesos.Offer_Operation {
				return []*mesos.Offer_Operation{withID(&mesos.Offer_Operation{Type: mesos.Offer_Operation_CREATE_DISK.Enum()}, "x")}
			},
			want: []string{"op x OPERATION_ERROR", "CREATE_DISK is not supported"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := acceptOutcome(t, tc.agent, tc.info, tc.setup, tc.ops)
			if tc.fullWant != "" && got != tc.fullWant {
				t.Fatalf("outcome:\n%s\nwant:\n%s", got, tc.fullWant)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("outcome lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("outcome has %q:\n%s", w, got)
				}
			}
		})
	}
}

// Operator operations with bad input get a clear error and change
// nothing: no total change, no checkpoint, nothing told to the allocator.
func TestOperatorOperationBadInputChangesNothing(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:2;mem:256;disk:100")
	f := h.subscribe(roleInfo("db-fw", "db"))
	op := func(o *mesos.Offer_Operation) error { return h.s.operatorOperation(Principal{}, a.id, o, h.now) }
	if err := op(reserveOp(dynRes("cpus:1;disk:100", "db", ""))); err != nil {
		t.Fatal(err)
	}
	if err := op(createOp(volume("v1", "db", 40))); err != nil {
		t.Fatal(err)
	}
	// A task using the volume.
	o := h.offerAll(f, a, "db")
	task := cmdTask("t1", a.id, "cpus:1")
	task.Resources = append(resources.ToPreRefinement(dynRes("cpus:1", "db", "")), resources.ToPreRefinement([]*mesos.Resource{volume("v1", "db", 40)})...)
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(task)))
	if h.task(f.id, "t1") == nil {
		t.Fatalf("task on the volume did not launch: %v", f.updates())
	}
	a.drain()
	before := h.total(a)
	unreservedDisk := volume("v2", "db", 10)
	unreservedDisk.Reservations = nil
	cases := []struct {
		name   string
		agent  string
		op     *mesos.Offer_Operation
		status int
		msg    string
	}{
		{"unknown agent", "nope", reserveOp(dynRes("cpus:1", "db", "")), 400, "No agent found with specified ID 'nope'"},
		{"no agent", "", reserveOp(dynRes("cpus:1", "db", "")), 400, "agent_id"},
		{"launch", a.id, launch(), 400, "LAUNCH cannot be applied by an operator"},
		{"not available", a.id, reserveOp(dynRes("cpus:5", "db", "")), 409, "not available on agent"},
		{"used by a task", a.id, unreserveOp(dynRes("cpus:1", "db", "")), 409, "not available on agent"},
		{"volume on unreserved disk", a.id, createOp(unreservedDisk), 400, "cannot be created from unreserved resources"},
		{"duplicate persistence ID", a.id, createOp(volume("v1", "db", 10)), 400, `persistence ID "v1" of role "db" is already used on the agent`},
		{"destroy a volume in use", a.id, destroyOp(volume("v1", "db", 40)), 400, "task 't1' of framework " + f.id + " uses it"},
		{"malformed", a.id, reserveOp([]*mesos.Resource{{Name: proto.String("cpus")}}), 400, "reserve.resources"},
		{"empty", a.id, reserveOp(nil), 400, "must not be empty"},
		{"with id", a.id, withID(reserveOp(dynRes("cpus:1", "db", "")), "x"), 400, "'id'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.alloc.calls = nil
			err := h.s.operatorOperation(Principal{}, tc.agent, tc.op, h.now)
			h.settle()
			apiErr, ok := err.(*APIError)
			if !ok || apiErr.Status != tc.status || !strings.Contains(apiErr.Message, tc.msg) {
				t.Fatalf("err = %v, want %d containing %q", err, tc.status, tc.msg)
			}
			if !h.total(a).Equal(before) {
				t.Fatalf("total changed to %v", h.total(a))
			}
			if sets, _ := a.checkpoints(); len(sets) != 0 {
				t.Fatalf("agent told to checkpoint %v", sets)
			}
			if h.alloc.has("UpdateAgent") {
				t.Fatalf("allocator told: %v", h.alloc.calls)
			}
		})
	}
	if h.s.counters["master/operations/error"] == 0 || h.s.counters["master/operations/dropped"] == 0 {
		t.Fatalf("refused operator operations not counted: %v", h.s.counters)
	}
}

// An operator's operation on offered-out resources rescinds the agent's
// offers and applies to what is then free; the allocator learns the new
// total through UpdateAgent and the agent checkpoints it.
func TestOperatorOperationRescindsOffers(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:2;mem:256")
	f := h.subscribe(roleInfo("db-fw", "db"))
	h.offerAll(f, a, "db")
	if err := h.s.operatorOperation(Principal{Name: "ops"}, a.id, reserveOp(dynRes("cpus:2", "db", "ops")), h.now); err != nil {
		t.Fatal(err)
	}
	rescinded := false
	for _, ev := range f.drain() {
		rescinded = rescinded || ev.GetType() == schedulerpb.Event_RESCIND
	}
	if !rescinded || len(h.s.offers) != 0 {
		t.Fatalf("offers not rescinded (rescind sent: %v, offers left: %d)", rescinded, len(h.s.offers))
	}
	want := resources.MustParse("mem:256").Add(mustRes(dynRes("cpus:2", "db", "ops")))
	if !h.total(a).Equal(want) {
		t.Fatalf("total %v, want %v", h.total(a), want)
	}
	if !h.alloc.has("UpdateAgent " + a.id) {
		t.Fatalf("allocator not told: %v", h.alloc.calls)
	}
	if sets, _ := a.checkpoints(); len(sets) != 1 || !sets[0].Equal(mustRes(dynRes("cpus:2", "db", "ops"))) {
		t.Fatalf("checkpoints %v", sets)
	}
	// The operator's principal must match the reservation's.
	err := h.s.operatorOperation(Principal{Name: "ops"}, a.id, reserveOp(dynRes("mem:1", "db", "eve")), h.now)
	if apiErr, ok := err.(*APIError); !ok || apiErr.Status != 400 || !strings.Contains(apiErr.Message, `"eve" does not match the caller's principal "ops"`) {
		t.Fatalf("err = %v", err)
	}
	// The snapshot shows the reservation per role.
	snap := h.s.snapshot(h.now)
	if v := snap.Agents[0]; len(v.Reserved["db"]) != 1 || !mustRes(v.Unreserved).Equal(resources.MustParse("mem:256")) {
		t.Fatalf("agent view reserved %v unreserved %v", v.Reserved, v.Unreserved)
	}
}

// Operation statuses are resent with backoff until acknowledged with the
// status's UUID; an acknowledgement of an unknown UUID changes nothing.
// GET_OPERATIONS (the snapshot) lists the operation until then.
func TestOperationStatusRetriedUntilAcknowledged(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:2")
	f := h.subscribe(roleInfo("db-fw", "db"))
	o := h.offerAll(f, a, "db")
	f.mustCall(acceptCall([]*mesos.Offer{o}, withID(reserveOp(dynRes("cpus:1", "db", "")), "r1")))
	first := f.opStatuses()
	if len(first) != 1 || first[0].GetState() != mesos.OperationState_OPERATION_FINISHED || len(first[0].GetUuid().GetValue()) != 16 ||
		first[0].GetAgentId().GetValue() != a.id || len(first[0].GetConvertedResources()) != 1 {
		t.Fatalf("statuses %v", first)
	}
	if ops := h.s.snapshot(h.now).Operations; len(ops) != 1 || ops[0].GetInfo().GetId().GetValue() != "r1" ||
		ops[0].GetLatestStatus().GetState() != mesos.OperationState_OPERATION_FINISHED {
		t.Fatalf("snapshot operations %v", ops)
	}
	h.advance(operationRetryMin - 1)
	if sts := f.opStatuses(); len(sts) != 0 {
		t.Fatalf("resent early: %v", sts)
	}
	var retries []string
	for _, d := range []time.Duration{1, 2 * operationRetryMin, 4 * operationRetryMin} {
		h.advance(d)
		for _, st := range f.opStatuses() {
			retries = append(retries, fmt.Sprintf("%s@%v", st.GetState(), h.now.Sub(epoch0)))
			if !proto.Equal(st, first[0]) {
				t.Fatalf("retry %v differs from %v", st, first[0])
			}
		}
	}
	if len(retries) != 3 {
		t.Fatalf("retries %v, want one at 10s, 30s, 70s", retries)
	}
	ack := func(u []byte) {
		f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE_OPERATION_STATUS.Enum(),
			AcknowledgeOperationStatus: &schedulerpb.Call_AcknowledgeOperationStatus{
				AgentId: agentID(a.id), Uuid: u, OperationId: first[0].GetOperationId()}})
	}
	other := make([]byte, 16)
	ack(other)
	if len(h.s.snapshot(h.now).Operations) != 1 {
		t.Fatal("an acknowledgement of another UUID removed the operation")
	}
	ack(first[0].GetUuid().GetValue())
	if ops := h.s.snapshot(h.now).Operations; len(ops) != 0 {
		t.Fatalf("acknowledged operation still listed: %v", ops)
	}
	h.advance(time.Hour)
	if sts := f.opStatuses(); len(sts) != 0 {
		t.Fatalf("resent after the acknowledgement: %v", sts)
	}
	if !h.s.nextOperationRetry().IsZero() {
		t.Fatal("a retry deadline is left")
	}
}

// RECONCILE_OPERATIONS answers from the master's view, without UUIDs.
func TestReconcileOperations(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:2")
	f := h.subscribe(roleInfo("db-fw", "db"))
	o := h.offerAll(f, a, "db")
	f.mustCall(acceptCall([]*mesos.Offer{o}, withID(reserveOp(dynRes("cpus:1", "db", "")), "r1")))
	f.opStatuses()
	h.s.unreachable["lost-agent"] = &unreachableAgent{at: h.now}
	h.s.recovered["coming-agent"] = true
	h.s.gone["gone-agent"] = true
	rec := func(ops ...*schedulerpb.Call_ReconcileOperations_Operation) []string {
		f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE_OPERATIONS.Enum(),
			ReconcileOperations: &schedulerpb.Call_ReconcileOperations{Operations: ops}})
		var out []string
		for _, st := range f.opStatuses() {
			if st.Uuid != nil {
				t.Fatalf("reconciliation status with a UUID: %v", st)
			}
			out = append(out, st.GetOperationId().GetValue()+" "+st.GetState().String())
		}
		return out
	}
	q := func(id, agent string) *schedulerpb.Call_ReconcileOperations_Operation {
		op := &schedulerpb.Call_ReconcileOperations_Operation{OperationId: &mesos.OperationID{Value: proto.String(id)}}
		if agent != "" {
			op.AgentId = agentID(agent)
		}
		return op
	}
	if got := strings.Join(rec(), ", "); got != "r1 OPERATION_FINISHED" {
		t.Fatalf("implicit: %s", got)
	}
	got := strings.Join(rec(q("r1", a.id), q("x", a.id), q("x", ""), q("x", "lost-agent"), q("x", "coming-agent"), q("x", "gone-agent"), q("x", "never")), ", ")
	want := "r1 OPERATION_FINISHED, x OPERATION_UNKNOWN, x OPERATION_UNKNOWN, x OPERATION_UNREACHABLE, x OPERATION_RECOVERING, x OPERATION_GONE_BY_OPERATOR, x OPERATION_UNKNOWN"
	if got != want {
		t.Fatalf("explicit:\n%s\nwant\n%s", got, want)
	}
}

// An ACCEPT with invalid offers drops its operations: OPERATION_DROPPED
// for those with an id, and nothing changes.
func TestInvalidOffersDropOperations(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:2")
	f := h.subscribe(roleInfo("db-fw", "db"))
	o := h.offerAll(f, a, "db")
	bogus := proto.Clone(o).(*mesos.Offer)
	bogus.Id = offerID("no-such-offer")
	f.mustCall(acceptCall([]*mesos.Offer{o, bogus}, withID(reserveOp(dynRes("cpus:1", "db", "")), "r1")))
	sts := f.opStatuses()
	if len(sts) != 1 || sts[0].GetState() != mesos.OperationState_OPERATION_DROPPED || !strings.Contains(sts[0].GetMessage(), "no-such-offer") {
		t.Fatalf("statuses %v", sts)
	}
	if !h.total(a).Equal(resources.MustParse("cpus:2")) {
		t.Fatalf("total changed: %v", h.total(a))
	}
}

// declineAll declines every offer the framework holds, with no filter.
func (f *fakeFramework) declineAll(offers []*mesos.Offer) { f.declineFor(offers, 0) }

// declineFor declines offers with a filter of secs seconds.
func (f *fakeFramework) declineFor(offers []*mesos.Offer, secs float64) {
	if len(offers) == 0 {
		return
	}
	var ids []*mesos.OfferID
	for _, o := range offers {
		ids = append(ids, o.GetId())
	}
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(),
		Decline: &schedulerpb.Call_Decline{OfferIds: ids, Filters: &mesos.Filters{RefuseSeconds: proto.Float64(secs)}}})
}

func offered(offers []*mesos.Offer) resources.Resources {
	var out resources.Resources
	for _, o := range offers {
		out = out.Add(mustRes(resources.ToPostRefinement(o.GetResources())))
	}
	return out
}

// With the real allocator: resources a framework reserved through ACCEPT
// and handed back are offered only to frameworks of the role, and
// UNRESERVE returns them to "*" for everyone.
func TestReservedResourcesOfferedOnlyToTheRole(t *testing.T) {
	h, sa := syncHarness(t, false)
	a := h.addAgent("a1", "cpus:2;mem:512")
	db := h.subscribe(roleInfo("db-fw", "db"))
	h.run(sa)
	offers := db.offers()
	if len(offers) != 1 {
		t.Fatalf("db got %d offers", len(offers))
	}
	reserved := dynRes("cpus:1;mem:128", "db", "")
	acc := acceptCall(offers, reserveOp(reserved))
	acc.Accept.Filters = &mesos.Filters{RefuseSeconds: proto.Float64(0)}
	db.mustCall(acc)
	web := h.subscribe(roleInfo("web-fw", "web"))

	if n := sa.Metrics()["allocator/mesos/allocation_updates_rejected"]; n != 0 {
		t.Fatalf("the allocator refused %v allocation updates", n)
	}
	dbSawReserved, webSawAny := false, false
	for i := 0; i < 6; i++ {
		h.advance(time.Second)
		h.run(sa)
		dbOffers, webOffers := db.offers(), web.offers()
		if r := offered(webOffers); !r.Reserved().IsEmpty() {
			t.Fatalf("round %d: web was offered reserved resources %v", i, r)
		}
		webSawAny = webSawAny || len(webOffers) > 0
		if offered(dbOffers).Contains(mustRes(reserved)) {
			dbSawReserved = true
		}
		db.declineAll(dbOffers)
		web.declineAll(webOffers)
	}
	if !dbSawReserved || !webSawAny {
		t.Fatalf("db offered its reservation: %v; web offered anything: %v", dbSawReserved, webSawAny)
	}

	// UNRESERVE: back to "*"; web can then be offered all the cpus.
	var dbOffers []*mesos.Offer
	for i := 0; i < 6 && !offered(dbOffers).Contains(mustRes(reserved)); i++ {
		db.declineAll(dbOffers)
		web.declineAll(web.offers())
		h.advance(time.Second)
		h.run(sa)
		dbOffers = db.offers()
	}
	if !offered(dbOffers).Contains(mustRes(reserved)) {
		t.Fatal("db not offered its reservation to unreserve")
	}
	acc = acceptCall(dbOffers, withID(unreserveOp(reserved), "u"))
	acc.Accept.Filters = &mesos.Filters{RefuseSeconds: proto.Float64(3600)}
	db.mustCall(acc)
	if sts := db.opStatuses(); len(sts) != 1 || sts[0].GetState() != mesos.OperationState_OPERATION_FINISHED {
		t.Fatalf("unreserve statuses %v", sts)
	}
	if !h.total(a).Equal(resources.MustParse("cpus:2;mem:512")) {
		t.Fatalf("total after unreserve %v", h.total(a))
	}
	if sets, _ := a.checkpoints(); len(sets) == 0 || !sets[len(sets)-1].IsEmpty() {
		t.Fatalf("agent not told its checkpoint is empty: %v", sets)
	}
	webCPUs := 0.0
	for i := 0; i < 6 && webCPUs < 2; i++ {
		h.advance(time.Second)
		h.run(sa)
		webOffers := web.offers()
		webCPUs = offered(webOffers).Scalar("cpus")
		web.declineAll(webOffers)
		db.declineAll(db.offers())
	}
	if webCPUs != 2 {
		t.Fatalf("web offered %v cpus after the unreserve, want 2", webCPUs)
	}
}

// Reservations and volumes survive a master failover: the new leader
// learns them from the agent's re-subscription (checkpointed_resources)
// and offers them to the role.
func TestReservationsSurviveFailover(t *testing.T) {
	h1 := newHarness(t)
	a1 := h1.addAgent("a1", "cpus:2;mem:512;disk:100")
	for _, op := range []*mesos.Offer_Operation{
		reserveOp(dynRes("cpus:1;disk:100", "db", "")),
		createOp(volume("v1", "db", 60)),
	} {
		if err := h1.s.operatorOperation(Principal{}, a1.id, op, h1.now); err != nil {
			t.Fatal(err)
		}
	}
	sets, _ := a1.checkpoints()
	if len(sets) != 2 {
		t.Fatalf("checkpoints %v", sets)
	}
	checkpointed := sets[1] // what the agent holds on disk

	h2, sa := syncHarness(t, false)
	sub := agentSub("a1", "cpus:2;mem:512;disk:100")
	sub.AgentInfo.Id = agentID(a1.id)
	sub.CheckpointedResources = checkpointed.Proto()
	a2 := h2.agentSubscribe(sub)
	if a2.id != a1.id {
		t.Fatalf("agent not readmitted: %v", eventTypes(a2.events))
	}
	if !h2.total(a2).Equal(h1.total(a1)) {
		t.Fatalf("new leader's total %v, want %v", h2.total(a2), h1.total(a1))
	}
	v := h2.s.snapshot(h2.now).Agents[0]
	if vols := mustRes(v.Reserved["db"]).PersistentVolumes(); vols.Len() != 1 {
		t.Fatalf("snapshot's db reservations %v lack the volume", v.Reserved["db"])
	}
	db := h2.subscribe(roleInfo("db-fw", "db"))
	h2.run(sa)
	if got := offered(db.offers()); got.PersistentVolumes().IsEmpty() || got.ReservedTo("db").Scalar("cpus") != 1 {
		t.Fatalf("db offered %v: want its reserved cpus and volume", got)
	}
}

// An agent whose checkpointed resources do not fit its flag resources is
// refused, naming the resource; one that re-subscribes with a stale
// report (it missed a CHECKPOINT_RESOURCES) gets the master's view back.
func TestAgentCheckpointedResourcesOnSubscribe(t *testing.T) {
	h := newHarness(t)
	bad := agentSub("a0", "cpus:1")
	bad.CheckpointedResources = dynRes("cpus:2", "db", "")
	_, err := h.s.agentSubscribe(bad, "", h.now)
	if apiErr, ok := err.(*APIError); !ok || apiErr.Status != 400 || !strings.Contains(apiErr.Message, "cpus") ||
		!strings.Contains(apiErr.Message, "checkpointed_resources") {
		t.Fatalf("conflicting subscription: %v", err)
	}
	if len(h.s.agents) != 0 || len(h.s.admitting) != 0 {
		t.Fatal("a refused agent was admitted")
	}

	a := h.addAgent("a1", "cpus:2")
	if err := h.s.operatorOperation(Principal{}, a.id, reserveOp(dynRes("cpus:1", "db", "")), h.now); err != nil {
		t.Fatal(err)
	}
	a.drain()
	want := h.total(a)
	sub := agentSub("a1", "cpus:2")
	sub.AgentInfo.Id = agentID(a.id) // re-subscribes with nothing checkpointed
	again := h.agentSubscribe(sub)
	if !h.total(a).Equal(want) {
		t.Fatalf("total %v after a stale re-subscription, want %v", h.total(a), want)
	}
	sets, _ := checkpointsIn(again.events)
	if len(sets) != 1 || !sets[0].Equal(mustRes(dynRes("cpus:1", "db", ""))) {
		t.Fatalf("agent not sent the master's view: %v (events %v)", sets, eventTypes(again.events))
	}
	// A report that matches gets nothing extra.
	sub.CheckpointedResources = dynRes("cpus:1", "db", "")
	again = h.agentSubscribe(sub)
	if sets, _ := checkpointsIn(again.events); len(sets) != 0 {
		t.Fatalf("up-to-date agent sent %v", sets)
	}
}

// Master.ApplyOperation end to end through the loop: the snapshot shows
// the reservation once it returns; errors are *APIError.
func TestMasterApplyOperation(t *testing.T) {
	m, _ := startMaster(t, &recordingAllocator{})
	ctx := context.Background()
	ast, err := m.SubscribeAgent(ctx, Principal{}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(),
		Subscribe: agentSub("h", "cpus:2;mem:256;disk:100")})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := next(t, ast.Ready(), ast.Drain)
	agent := evs[0].GetSubscribed().GetAgentId().GetValue()
	if err := m.ApplyOperation(ctx, Principal{}, agent, reserveOp(dynRes("disk:100", "db", ""))); err != nil {
		t.Fatal(err)
	}
	if err := m.ApplyOperation(ctx, Principal{}, agent, createOp(volume("v1", "db", 100))); err != nil {
		t.Fatal(err)
	}
	v := m.Snapshot().Agents[0]
	if vols := mustRes(v.Reserved["db"]).PersistentVolumes(); vols.Len() != 1 || !mustRes(v.Unreserved).Equal(resources.MustParse("cpus:2;mem:256")) {
		t.Fatalf("snapshot: reserved %v, unreserved %v", v.Reserved, v.Unreserved)
	}
	var apiErr *APIError
	if err := m.ApplyOperation(ctx, Principal{}, "nope", reserveOp(dynRes("cpus:1", "db", ""))); !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Fatalf("unknown agent: %v", err)
	}
	if err := m.ApplyOperation(ctx, Principal{}, agent, reserveOp(dynRes("cpus:3", "db", ""))); !errors.As(err, &apiErr) || apiErr.Status != 409 {
		t.Fatalf("not available: %v", err)
	}
	evs, _ = next(t, ast.Ready(), ast.Drain)
	if sets, _ := checkpointsIn(evs); len(sets) == 0 || sets[len(sets)-1].PersistentVolumes().Len() != 1 {
		t.Fatalf("agent events %v", eventTypes(evs))
	}
}

// An allocation the allocator made before it learned of an operator's
// operation (its offer was on the way to the loop) is not offered in its
// stale form: it goes back, and the allocator recounts the agent.
func TestStaleAllocationAfterOperatorOperation(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:2;mem:256")
	f := h.subscribe(roleInfo("db-fw", "db"))
	if err := h.s.operatorOperation(Principal{}, a.id, reserveOp(dynRes("cpus:2", "db", "")), h.now); err != nil {
		t.Fatal(err)
	}
	h.alloc.calls = nil
	h.s.allocated(f.id, allocator.Offers{"db": {a.id: resources.MustParse("cpus:1;mem:128")}}, h.now)
	h.settle()
	if offers := f.offers(); len(offers) != 0 {
		t.Fatalf("stale allocation offered: %v", offers)
	}
	if !h.alloc.has("RecoverResources "+f.id+" "+a.id) || !h.alloc.has("UpdateAgent "+a.id) {
		t.Fatalf("allocator calls %v", h.alloc.calls)
	}
	// An allocation in the new form is offered.
	h.s.allocated(f.id, allocator.Offers{"db": {a.id: mustRes(dynRes("cpus:2", "db", "")).Add(resources.MustParse("mem:256"))}}, h.now)
	h.settle()
	if offers := f.offers(); len(offers) != 1 {
		t.Fatalf("current allocation not offered: %v", offers)
	}
}

// A framework that subscribes again gets its unacknowledged operation
// statuses at once, not after the backoff grown while it was away.
func TestOperationStatusResentOnResubscription(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:2")
	f := h.subscribe(roleInfo("db-fw", "db"))
	o := h.offerAll(f, a, "db")
	f.mustCall(acceptCall([]*mesos.Offer{o}, withID(reserveOp(dynRes("cpus:1", "db", "")), "r1")))
	first := f.opStatuses()
	h.advance(operationRetryMin)
	h.advance(2 * operationRetryMin) // backoff now 40s
	f.opStatuses()
	info := roleInfo("db-fw", "db")
	info.Id = frameworkID(f.id)
	again := h.subscribe(info)
	h.advance(time.Second)
	sts := again.opStatuses()
	if len(sts) != 1 || !proto.Equal(sts[0], first[0]) {
		t.Fatalf("re-subscribed framework got %v, want the status at once", sts)
	}
	h.advance(operationRetryMin - 1)
	if sts := again.opStatuses(); len(sts) != 0 {
		t.Fatalf("resent before the reset backoff: %v", sts)
	}
	h.advance(1)
	if sts := again.opStatuses(); len(sts) != 1 {
		t.Fatalf("not resent after the reset backoff: %v", sts)
	}
}
