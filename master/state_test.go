package master

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
)

// The whole happy path: subscribe, offer, accept, RUN_TASK to the agent,
// status updates forwarded with their uuid, acknowledgements forwarded to
// the agent, and the task completed once its terminal update is acked.
func TestLaunchLifecycle(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("agent1", "cpus:4;mem:1024;ports:[31000-32000]")
	if a.id != "M-S0" {
		t.Fatalf("agent id = %q, want M-S0", a.id)
	}
	f := h.subscribe(fwInfo("fw"))
	if f.id != "M-0000" {
		t.Fatalf("framework id = %q, want M-0000", f.id)
	}
	o := h.offer(f, a, "*", "cpus:4;mem:1024;ports:[31000-32000]")
	if o.GetId().GetValue() != "M-O0" || o.GetHostname() != "agent1" {
		t.Fatalf("offer = %v", o)
	}
	if u := o.GetUrl(); u.GetScheme() != "http" || u.GetAddress().GetIp() != "10.0.0.2" || u.GetAddress().GetPort() != 5051 || u.GetPath() != "/slave(1)" {
		t.Fatalf("offer url = %v", u)
	}
	if o.AllocationInfo != nil {
		t.Fatal("non-MULTI_ROLE framework got offer.allocation_info")
	}
	for _, r := range o.GetResources() {
		if r.AllocationInfo != nil || len(r.GetReservations()) > 0 || r.GetRole() != "*" {
			t.Fatalf("want pre-refinement resources without allocation_info, got %v", r)
		}
	}

	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t1", a.id, "cpus:1;mem:128"))))
	evs := a.drain()
	if len(evs) != 1 || evs[0].GetType() != protocol.AgentEvent_RUN_TASK {
		t.Fatalf("agent got %v, want RUN_TASK", eventTypes(evs))
	}
	run := evs[0].GetRunTask()
	if run.ExecutorInfo != nil || run.GetTask().GetTaskId().GetValue() != "t1" || evs[0].GetEpoch() != 1 {
		t.Fatalf("RUN_TASK = %v", run)
	}
	for _, r := range run.GetTask().GetResources() {
		if r.GetAllocationInfo().GetRole() != "*" {
			t.Fatalf("task resources lack allocation_info: %v", r)
		}
	}
	if got := h.task(f.id, "t1").GetState(); got != mesos.TaskState_TASK_STAGING {
		t.Fatalf("task state = %v, want STAGING", got)
	}
	rec := h.alloc.recoveries()
	if len(rec) != 1 || rec[0].refuse != 5 || !rec[0].res.Contains(resources.MustParse("cpus:3").AllocatedTo("*")) ||
		rec[0].res.Contains(resources.MustParse("cpus:4").AllocatedTo("*")) {
		t.Fatalf("unused resources recovered as %+v, want cpus:3;mem:896;ports with refuse 5", rec)
	}

	u1 := a.update(f.id, "t1", mesos.TaskState_TASK_RUNNING, true)
	ups := f.updates()
	if len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_RUNNING || string(ups[0].GetUuid()) != string(u1) ||
		ups[0].GetAgentId().GetValue() != a.id || ups[0].Timestamp == nil {
		t.Fatalf("framework got %v", ups)
	}
	if h.s.counters["master/valid_status_updates"] != 1 {
		t.Fatal("valid_status_updates not counted")
	}
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
		AgentId: agentID(a.id), TaskId: &mesos.TaskID{Value: proto.String("t1")}, Uuid: u1}})
	if evs := a.drain(); len(evs) != 1 || evs[0].GetType() != protocol.AgentEvent_ACKNOWLEDGE || string(evs[0].GetAcknowledge().GetUuid()) != string(u1) {
		t.Fatalf("agent got %v, want ACKNOWLEDGE", eventTypes(evs))
	}

	u2 := a.update(f.id, "t1", mesos.TaskState_TASK_FINISHED, true)
	if rec := h.alloc.recoveries(); len(rec) != 1 || !rec[0].res.Equal(resources.MustParse("cpus:1;mem:128").AllocatedTo("*")) {
		t.Fatalf("terminal update should recover the task's resources at once, got %+v", rec)
	}
	if h.task(f.id, "t1") == nil {
		t.Fatal("task completed before its terminal update was acknowledged")
	}
	f.updates()
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
		AgentId: agentID(a.id), TaskId: &mesos.TaskID{Value: proto.String("t1")}, Uuid: u2}})
	if h.task(f.id, "t1") != nil {
		t.Fatal("task not completed after terminal ack")
	}
	if got := h.s.counters["master/tasks_finished"]; got != 1 {
		t.Fatalf("master/tasks_finished = %v, want 1", got)
	}
	snap := h.s.snapshot(h.now)
	if fv := snap.Frameworks[0]; len(fv.CompletedTasks) != 1 || fv.CompletedTasks[0].GetState() != mesos.TaskState_TASK_FINISHED {
		t.Fatalf("completed tasks = %v", fv.CompletedTasks)
	}
}

// latest_state drives accounting: resources come back when the agent says
// the task is terminal even though an earlier update is still unacked.
func TestLatestStateRecoversResources(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:2;mem:256")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:2;mem:256")
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t", a.id, "cpus:2;mem:256"))))
	h.alloc.recoveries()
	err := a.call(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), StatusUpdate: &protocol.AgentCall_StatusUpdate{
		FrameworkId: frameworkID(f.id),
		Status:      &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t")}, State: mesos.TaskState_TASK_RUNNING.Enum(), Uuid: make([]byte, 16)},
		LatestState: mesos.TaskState_TASK_FAILED.Enum(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rec := h.alloc.recoveries(); len(rec) != 1 {
		t.Fatalf("want resources recovered on terminal latest_state, got %+v", rec)
	}
	tp := h.task(f.id, "t")
	if tp.GetState() != mesos.TaskState_TASK_FAILED || tp.GetStatusUpdateState() != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("task state %v / status_update_state %v", tp.GetState(), tp.GetStatusUpdateState())
	}
}

func TestDeclineFilters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		filters *mesos.Filters
		want    float64
	}{
		{"default", nil, 5},
		{"unset field", &mesos.Filters{}, 5},
		{"explicit", &mesos.Filters{RefuseSeconds: proto.Float64(60)}, 60},
		{"zero", &mesos.Filters{RefuseSeconds: proto.Float64(0)}, 0},
		{"negative", &mesos.Filters{RefuseSeconds: proto.Float64(-3)}, 5},
		{"capped", &mesos.Filters{RefuseSeconds: proto.Float64(1e12)}, MaxRefuseSeconds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			a := h.addAgent("a", "cpus:2;mem:256")
			f := h.subscribe(fwInfo("fw"))
			o := h.offer(f, a, "*", "cpus:2;mem:256")
			f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(), Decline: &schedulerpb.Call_Decline{
				OfferIds: []*mesos.OfferID{o.GetId(), offerID("M-O99")}, Filters: tc.filters}})
			rec := h.alloc.recoveries()
			if len(rec) != 1 || rec[0].refuse != tc.want {
				t.Fatalf("recoveries %+v, want one with refuse %g", rec, tc.want)
			}
			if len(h.s.offers) != 0 {
				t.Fatal("declined offer still outstanding")
			}
		})
	}
}

// An ACCEPT without operations is a decline with the ACCEPT's filters.
func TestAcceptWithoutOperationsDeclines(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:2;mem:256")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:2;mem:256")
	c := acceptCall([]*mesos.Offer{o})
	c.Accept.Filters = &mesos.Filters{RefuseSeconds: proto.Float64(30)}
	f.mustCall(c)
	if rec := h.alloc.recoveries(); len(rec) != 1 || rec[0].refuse != 30 || !rec[0].res.Equal(resources.MustParse("cpus:2;mem:256").AllocatedTo("*")) {
		t.Fatalf("recoveries %+v", rec)
	}
}

func TestOfferShapes(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:512;ephemeral_ports:[40000-40010]")
	t.Run("multi-role gets allocation_info", func(t *testing.T) {
		info := fwInfo("mr", mesos.FrameworkInfo_Capability_MULTI_ROLE)
		info.Roles = []string{"web"}
		f := h.subscribe(info)
		o := h.offer(f, a, "web", "cpus:1;mem:32")
		if o.GetAllocationInfo().GetRole() != "web" {
			t.Fatalf("offer allocation_info = %v", o.GetAllocationInfo())
		}
		for _, r := range o.GetResources() {
			if r.GetAllocationInfo().GetRole() != "web" {
				t.Fatalf("resource without allocation_info: %v", r)
			}
		}
	})
	t.Run("reservation refinement keeps reservations[]", func(t *testing.T) {
		f := h.subscribe(fwInfo("rr", mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT))
		o := h.offer(f, a, "*", "cpus:1")
		if r := o.GetResources()[0]; r.Role != nil {
			t.Fatalf("RESERVATION_REFINEMENT framework got pre-refinement role: %v", r)
		}
	})
	t.Run("ephemeral_ports stripped, executor_ids listed", func(t *testing.T) {
		f := h.subscribe(fwInfo("ex"))
		o := h.offer(f, a, "*", "cpus:2;mem:128;ephemeral_ports:[40000-40010]")
		for _, r := range o.GetResources() {
			if r.GetName() == "ephemeral_ports" {
				t.Fatal("ephemeral_ports offered")
			}
		}
		ti := &mesos.TaskInfo{Name: proto.String("x"), TaskId: &mesos.TaskID{Value: proto.String("x")}, AgentId: agentID(a.id),
			Resources: resources.MustParse("cpus:0.5").Proto(),
			Executor: &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("E")},
				Command: &mesos.CommandInfo{Value: proto.String("exec")}, Resources: resources.MustParse("cpus:0.5").Proto()}}
		f.mustCall(acceptCall([]*mesos.Offer{o}, launch(ti)))
		o2 := h.offer(f, a, "*", "cpus:1")
		if ids := o2.GetExecutorIds(); len(ids) != 1 || ids[0].GetValue() != "E" {
			t.Fatalf("executor_ids = %v", ids)
		}
	})
}

func TestOfferTimeoutRescinds(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.OfferTimeout = 10 * time.Second })
	a := h.addAgent("a", "cpus:2;mem:256")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:2;mem:256")
	h.advance(9 * time.Second)
	if len(h.s.offers) != 1 {
		t.Fatal("offer rescinded early")
	}
	h.advance(time.Second)
	evs := f.drain()
	if len(evs) != 1 || evs[0].GetType() != schedulerpb.Event_RESCIND || evs[0].GetRescind().GetOfferId().GetValue() != o.GetId().GetValue() {
		t.Fatalf("want RESCIND, got %v", eventTypes(evs))
	}
	if rec := h.alloc.recoveries(); len(rec) != 1 || rec[0].refuse != -1 {
		t.Fatalf("rescinded offer recovered as %+v, want no filter", rec)
	}
}

// Invalid ACCEPTs: each case names what the framework must see. No case
// may over-commit the agent.
func TestInvalidAccepts(t *testing.T) {
	type result struct {
		state  mesos.TaskState
		reason mesos.TaskStatus_Reason
		msg    string
	}
	for _, tc := range []struct {
		name  string
		caps  []mesos.FrameworkInfo_Capability_Type
		build func(o *mesos.Offer, agent string) *schedulerpb.Call
		want  []result
		run   int // tasks that reach the agent
	}{
		{
			name: "unknown offer",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				c := acceptCall(nil, launch(cmdTask("t", agent, "cpus:1")))
				c.Accept.OfferIds = []*mesos.OfferID{offerID("M-O77")}
				return c
			},
			want: []result{{mesos.TaskState_TASK_LOST, mesos.TaskStatus_REASON_INVALID_OFFERS, "Task launched with invalid offers: Offer M-O77 is no longer valid"}},
		},
		{
			name: "unknown offer, partition-aware",
			caps: []mesos.FrameworkInfo_Capability_Type{mesos.FrameworkInfo_Capability_PARTITION_AWARE},
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				c := acceptCall([]*mesos.Offer{o}, launch(cmdTask("t", agent, "cpus:1")))
				c.Accept.OfferIds = append(c.Accept.OfferIds, offerID("M-O77"))
				return c
			},
			want: []result{{mesos.TaskState_TASK_DROPPED, mesos.TaskStatus_REASON_INVALID_OFFERS, "invalid offers"}},
		},
		{
			name: "duplicate offer",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				return acceptCall([]*mesos.Offer{o, o}, launch(cmdTask("t", agent, "cpus:1")))
			},
			want: []result{{mesos.TaskState_TASK_LOST, mesos.TaskStatus_REASON_INVALID_OFFERS, "Duplicate offer"}},
		},
		{
			name: "over-commit: second task does not fit",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				return acceptCall([]*mesos.Offer{o}, launch(cmdTask("a", agent, "cpus:3;mem:64"), cmdTask("b", agent, "cpus:3;mem:64")))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID, "Task uses more resources"}},
			run:  1,
		},
		{
			name: "duplicate task ID",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				return acceptCall([]*mesos.Offer{o}, launch(cmdTask("a", agent, "cpus:1"), cmdTask("a", agent, "cpus:1")))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID, "Task has duplicate ID: a"}},
			run:  1,
		},
		{
			name: "neither command nor executor",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				ti := cmdTask("a", agent, "cpus:1")
				ti.Command = nil
				return acceptCall([]*mesos.Offer{o}, launch(ti))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID, "at least one (but not both)"}},
		},
		{
			name: "both command and executor",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				ti := cmdTask("a", agent, "cpus:1")
				ti.Executor = &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("e")}, Command: &mesos.CommandInfo{Value: proto.String("x")}}
				return acceptCall([]*mesos.Offer{o}, launch(ti))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID, "at least one (but not both)"}},
		},
		{
			name: "agent mismatch",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				return acceptCall([]*mesos.Offer{o}, launch(cmdTask("a", "M-S42", "cpus:1")))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID, "Task uses invalid agent: M-S42"}},
		},
		{
			name: "SECRET variable without a secret",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				ti := cmdTask("a", agent, "cpus:1")
				ti.Command.Environment = &mesos.Environment{Variables: []*mesos.Environment_Variable{
					{Name: proto.String("S"), Type: mesos.Environment_Variable_SECRET.Enum()}}}
				return acceptCall([]*mesos.Offer{o}, launch(ti))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID,
				"Task's command is invalid: environment variable 'S' of type 'SECRET' must have a secret set"}},
		},
		{
			name: "executor with a VALUE secret lacking its value",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				ti := cmdTask("a", agent, "cpus:1")
				ti.Command = nil
				ti.Executor = &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("e")}, Command: &mesos.CommandInfo{
					Value: proto.String("x"), Environment: &mesos.Environment{Variables: []*mesos.Environment_Variable{
						{Name: proto.String("S"), Type: mesos.Environment_Variable_SECRET.Enum(), Secret: &mesos.Secret{Type: mesos.Secret_VALUE.Enum()}}}}}}
				return acceptCall([]*mesos.Offer{o}, launch(ti))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID,
				"Executor's command is invalid: environment variable 'S' specifies an invalid secret"}},
		},
		{
			name: "invalid resources",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				ti := cmdTask("a", agent, "cpus:1")
				ti.Resources[0].Scalar.Value = proto.Float64(-1)
				return acceptCall([]*mesos.Offer{o}, launch(ti))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID, "invalid resources"}},
		},
		{
			name: "no resources",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				ti := cmdTask("a", agent, "cpus:1")
				ti.Resources = nil
				return acceptCall([]*mesos.Offer{o}, launch(ti))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID, "Task uses no resources"}},
		},
		{
			name: "same executor ID, different info",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				mk := func(id, cmd string) *mesos.TaskInfo {
					ti := cmdTask(id, agent, "cpus:1")
					ti.Command = nil
					ti.Executor = &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("e")}, Command: &mesos.CommandInfo{Value: proto.String(cmd)}}
					return ti
				}
				return acceptCall([]*mesos.Offer{o}, launch(mk("a", "one"), mk("b", "two")))
			},
			want: []result{{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_INVALID, "not compatible with existing ExecutorInfo"}},
			run:  1,
		},
		{
			name: "launch group with a custom executor",
			build: func(o *mesos.Offer, agent string) *schedulerpb.Call {
				return acceptCall([]*mesos.Offer{o}, &mesos.Offer_Operation{Type: mesos.Offer_Operation_LAUNCH_GROUP.Enum(),
					LaunchGroup: &mesos.Offer_Operation_LaunchGroup{
						Executor: &mesos.ExecutorInfo{Type: mesos.ExecutorInfo_CUSTOM.Enum(), ExecutorId: &mesos.ExecutorID{Value: proto.String("e")},
							FrameworkId: frameworkID("M-0000"), Command: &mesos.CommandInfo{Value: proto.String("x")}},
						TaskGroup: &mesos.TaskGroupInfo{Tasks: []*mesos.TaskInfo{cmdTask("g1", agent, "cpus:1"), cmdTask("g2", agent, "cpus:1")}},
					}})
			},
			want: []result{
				{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_GROUP_INVALID, "'ExecutorInfo.type' must be 'DEFAULT'"},
				{mesos.TaskState_TASK_ERROR, mesos.TaskStatus_REASON_TASK_GROUP_INVALID, "'ExecutorInfo.type' must be 'DEFAULT'"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			a := h.addAgent("a", "cpus:4;mem:256")
			f := h.subscribe(fwInfo("fw", tc.caps...))
			o := h.offer(f, a, "*", "cpus:4;mem:256")
			f.mustCall(tc.build(o, a.id))
			ups := f.updates()
			if len(ups) != len(tc.want) {
				t.Fatalf("got %d updates %v, want %d", len(ups), ups, len(tc.want))
			}
			for i, w := range tc.want {
				u := ups[i]
				if u.GetState() != w.state || u.GetReason() != w.reason || u.GetSource() != mesos.TaskStatus_SOURCE_MASTER ||
					!strings.Contains(u.GetMessage(), w.msg) || u.Uuid != nil {
					t.Errorf("update %d = %v %v %q, want %v %v containing %q", i, u.GetState(), u.GetReason(), u.GetMessage(), w.state, w.reason, w.msg)
				}
			}
			runs := 0
			for _, ev := range a.drain() {
				if ev.GetType() == protocol.AgentEvent_RUN_TASK || ev.GetType() == protocol.AgentEvent_RUN_TASK_GROUP {
					runs++
				}
			}
			if runs != tc.run {
				t.Fatalf("%d launches reached the agent, want %d", runs, tc.run)
			}
			// Every refused task counts once in its terminal-state counter.
			counted := 0.0
			for _, k := range []string{"master/tasks_lost", "master/tasks_dropped", "master/tasks_error"} {
				counted += h.s.counters[k]
			}
			if int(counted) != len(tc.want) {
				t.Fatalf("terminal counters sum to %v, want %d", counted, len(tc.want))
			}
			// Never over-committed: used + recovered == offered.
			used := resources.Resources{}
			for _, tk := range h.s.frameworks[f.id].tasks {
				used = used.Add(tk.res)
			}
			for _, r := range h.alloc.recoveries() {
				used = used.Add(r.res)
			}
			for _, o := range h.s.offers {
				used = used.Add(o.res)
			}
			if !used.Equal(resources.MustParse("cpus:4;mem:256").AllocatedTo("*")) {
				t.Fatalf("used+recovered = %s, want exactly the offer", used)
			}
		})
	}
}

// Tasks sharing one new executor in one ACCEPT consume its resources once
// (example-scheduler's tasks "1" and "2" on executor "default").
func TestSharedExecutorConsumesOnce(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:2;mem:256")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:2;mem:256")
	ex := &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("default")},
		Command: &mesos.CommandInfo{Value: proto.String("exec")}, Resources: resources.ToPreRefinement(resources.MustParse("cpus:0.5;mem:64").Proto())}
	mk := func(id string) *mesos.TaskInfo {
		ti := cmdTask(id, a.id, "cpus:0.5;mem:64")
		ti.Command = nil
		ti.Executor = ex
		return ti
	}
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(mk("1"), mk("2"))))
	if ups := f.updates(); len(ups) != 0 {
		t.Fatalf("unexpected updates %v", ups)
	}
	if n := len(a.drain()); n != 2 {
		t.Fatalf("%d RUN_TASKs, want 2", n)
	}
	rec := h.alloc.recoveries()
	if len(rec) != 1 || !rec[0].res.Equal(resources.MustParse("cpus:0.5;mem:64").AllocatedTo("*")) {
		t.Fatalf("recovered %+v, want cpus:0.5;mem:64", rec)
	}
}

func TestLaunchGroup(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:2;mem:256")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:2;mem:256")
	f.mustCall(acceptCall([]*mesos.Offer{o}, &mesos.Offer_Operation{Type: mesos.Offer_Operation_LAUNCH_GROUP.Enum(),
		LaunchGroup: &mesos.Offer_Operation_LaunchGroup{
			Executor: &mesos.ExecutorInfo{Type: mesos.ExecutorInfo_DEFAULT.Enum(), ExecutorId: &mesos.ExecutorID{Value: proto.String("d")},
				FrameworkId: frameworkID(f.id), Resources: resources.MustParse("cpus:0.1;mem:32").Proto()},
			TaskGroup: &mesos.TaskGroupInfo{Tasks: []*mesos.TaskInfo{cmdTask("g1", a.id, "cpus:0.5"), cmdTask("g2", a.id, "cpus:0.5")}},
		}}))
	evs := a.drain()
	if len(evs) != 1 || evs[0].GetType() != protocol.AgentEvent_RUN_TASK_GROUP || len(evs[0].GetRunTaskGroup().GetTaskGroup().GetTasks()) != 2 {
		t.Fatalf("agent got %v", eventTypes(evs))
	}
	if tp := h.task(f.id, "g1"); tp.GetExecutorId().GetValue() != "d" || tp.GetState() != mesos.TaskState_TASK_STAGING {
		t.Fatalf("g1 = %v", tp)
	}
}

// Failover timeout: a disconnected framework keeps its tasks until the
// timeout; re-subscribing in time keeps them; expiry removes it, kills its
// tasks and tells its agents to shut it down.
func TestFrameworkFailover(t *testing.T) {
	setup := func(t *testing.T) (*harness, *fakeAgent, *fakeFramework, *mesos.FrameworkInfo) {
		h := newHarness(t)
		a := h.addAgent("a", "cpus:2;mem:256")
		info := fwInfo("fw")
		info.FailoverTimeout = proto.Float64(60)
		f := h.subscribe(info)
		o := h.offer(f, a, "*", "cpus:2;mem:256")
		f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t", a.id, "cpus:1"))))
		a.drain()
		return h, a, f, info
	}
	t.Run("re-subscribe in time keeps tasks", func(t *testing.T) {
		h, _, f, info := setup(t)
		f.st.Close()
		h.settle()
		if fw := h.s.frameworks[f.id]; fw == nil || fw.connected || fw.active {
			t.Fatal("framework should be disconnected but known")
		}
		if err := f.call(&schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum()}); err == nil || err.(*APIError).Status != 403 {
			t.Fatalf("call on disconnected framework: %v, want 403", err)
		}
		h.advance(59 * time.Second)
		info.Id = frameworkID(f.id)
		f2 := h.subscribe(info)
		if f2.id != f.id || h.task(f.id, "t") == nil {
			t.Fatal("re-subscription lost the framework or its tasks")
		}
		h.advance(time.Hour)
		if h.s.frameworks[f.id] == nil {
			t.Fatal("framework removed although it re-subscribed")
		}
	})
	t.Run("old stream gets ERROR on failover", func(t *testing.T) {
		h, _, f, info := setup(t)
		info.Id = frameworkID(f.id)
		h.subscribe(info)
		evs, ended := f.st.Drain()
		if !ended || len(evs) != 1 || evs[0].GetError().GetMessage() != "Framework failed over" {
			t.Fatalf("old stream got %v ended=%v", eventTypes(evs), ended)
		}
		if err := f.call(&schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum()}); err == nil || !strings.Contains(err.Error(), "didn't match the stream ID") {
			t.Fatalf("call with the old stream ID: %v", err)
		}
	})
	t.Run("expiry removes the framework", func(t *testing.T) {
		h, a, f, _ := setup(t)
		f.st.Close()
		h.settle()
		h.advance(60 * time.Second)
		if h.s.frameworks[f.id] != nil {
			t.Fatal("framework not removed after failover timeout")
		}
		var sawShutdown bool
		for _, ev := range a.drain() {
			if ev.GetType() == protocol.AgentEvent_SHUTDOWN_FRAMEWORK && ev.GetShutdownFramework().GetFrameworkId().GetValue() == f.id {
				sawShutdown = true
			}
		}
		if !sawShutdown {
			t.Fatal("agent did not get SHUTDOWN_FRAMEWORK")
		}
		snap := h.s.snapshot(h.now)
		if len(snap.CompletedFrameworks) != 1 || snap.CompletedFrameworks[0].CompletedTasks[0].GetState() != mesos.TaskState_TASK_KILLED {
			t.Fatalf("completed frameworks %v", snap.CompletedFrameworks)
		}
		if !h.alloc.has("RemoveFramework " + f.id) {
			t.Fatal("allocator not told")
		}
		// A removed framework cannot come back.
		info := fwInfo("fw")
		info.Id = frameworkID(f.id)
		st, err := h.s.subscribe(Principal{}, &schedulerpb.Call_Subscribe{FrameworkInfo: info}, h.now)
		if err != nil {
			t.Fatal(err)
		}
		evs, ended := st.Drain()
		if !ended || len(evs) != 1 || evs[0].GetError().GetMessage() != "Framework has been removed" {
			t.Fatalf("re-subscribe of removed framework: %v", eventTypes(evs))
		}
	})
	t.Run("zero failover timeout removes at once", func(t *testing.T) {
		h := newHarness(t)
		f := h.subscribe(fwInfo("fw"))
		f.st.Close()
		h.settle()
		if h.s.frameworks[f.id] != nil {
			t.Fatal("framework with failover_timeout 0 not removed on disconnect")
		}
	})
	t.Run("teardown", func(t *testing.T) {
		h, a, f, _ := setup(t)
		f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_TEARDOWN.Enum()})
		if h.s.frameworks[f.id] != nil {
			t.Fatal("not removed")
		}
		if _, ended := f.st.Drain(); !ended {
			t.Fatal("stream not ended by TEARDOWN")
		}
		if evs := a.drain(); len(evs) != 1 || evs[0].GetType() != protocol.AgentEvent_SHUTDOWN_FRAMEWORK {
			t.Fatalf("agent got %v", eventTypes(evs))
		}
	})
}

// Ping timeouts: after MaxAgentPingTimeouts unanswered pings the agent is
// unreachable (once the registrar says so): TASK_UNREACHABLE for
// partition-aware frameworks, TASK_LOST for the others.
func TestAgentPingTimeouts(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:512")
	pa := h.subscribe(fwInfo("pa", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	old := h.subscribe(fwInfo("old"))
	for i, f := range []*fakeFramework{pa, old} {
		o := h.offer(f, a, "*", "cpus:2;mem:256")
		f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t", a.id, "cpus:1"))))
		a.update(f.id, "t", mesos.TaskState_TASK_RUNNING, false)
		f.updates()
		_ = i
	}
	// One more outstanding offer that must be rescinded.
	h.offer(old, a, "*", "cpus:1")

	// The agent answers pings for a while.
	for i := 0; i < 10; i++ {
		h.advance(15 * time.Second)
		var pinged bool
		for _, ev := range a.drain() {
			if ev.GetType() == protocol.AgentEvent_PING {
				pinged = true
			}
		}
		if !pinged {
			t.Fatalf("round %d: no PING", i)
		}
		a.call(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum()})
	}
	if h.s.agents[a.id] == nil {
		t.Fatal("answering agent marked unreachable")
	}
	// Then goes silent; the registrar write is held to check the master
	// waits for it.
	// The first unanswered ping goes out at the next round; each later
	// round counts one miss.
	h.reg.hold = true
	for i := 0; i <= DefaultMaxAgentPingTimeouts; i++ {
		h.advance(15 * time.Second)
	}
	if len(h.reg.held) != 1 {
		t.Fatalf("want one registrar write in flight, got %d", len(h.reg.held))
	}
	if h.s.agents[a.id] == nil || len(pa.updates()) != 0 {
		t.Fatal("master acted before the registrar write was durable")
	}
	if ev := old.drain(); len(ev) != 1 || ev[0].GetType() != schedulerpb.Event_RESCIND {
		t.Fatalf("outstanding offer not rescinded: %v", eventTypes(ev))
	}
	h.reg.release()
	h.settle()
	if h.s.agents[a.id] != nil || h.s.unreachable[a.id] == nil {
		t.Fatal("agent not moved to unreachable")
	}
	if !h.alloc.has("RemoveAgent " + a.id) {
		t.Fatal("allocator not told")
	}
	for _, c := range []struct {
		f    *fakeFramework
		want mesos.TaskState
	}{{pa, mesos.TaskState_TASK_UNREACHABLE}, {old, mesos.TaskState_TASK_LOST}} {
		ups := c.f.updates()
		if len(ups) != 1 || ups[0].GetState() != c.want || ups[0].GetReason() != mesos.TaskStatus_REASON_AGENT_REMOVED ||
			ups[0].GetSource() != mesos.TaskStatus_SOURCE_MASTER {
			t.Fatalf("%s got %v, want %v", c.f.id, ups, c.want)
		}
	}
	if len(h.s.frameworks[pa.id].unreachableTasks) != 1 || len(h.s.frameworks[old.id].completedTasks) != 1 {
		t.Fatal("unreachable/completed task bookkeeping wrong")
	}
	// Explicit reconciliation of the partitioned task.
	pa.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{
		Tasks: []*schedulerpb.Call_Reconcile_Task{{TaskId: &mesos.TaskID{Value: proto.String("t")}}}}})
	if ups := pa.updates(); len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_UNREACHABLE {
		t.Fatalf("reconcile of unreachable task: %v", ups)
	}

	// The agent comes back: MarkReachable, its reported task returns.
	h.reg.hold = false
	sub := agentSub("a", "cpus:4;mem:512")
	sub.AgentInfo.Id = agentID(a.id)
	sub.Frameworks = []*mesos.FrameworkInfo{h.s.frameworks[pa.id].info}
	sub.Tasks = []*mesos.Task{{Name: proto.String("t"), TaskId: &mesos.TaskID{Value: proto.String("t")}, FrameworkId: frameworkID(pa.id),
		AgentId: agentID(a.id), State: mesos.TaskState_TASK_RUNNING.Enum(), Resources: resources.MustParse("cpus:1").AllocatedTo("*").Proto()}}
	back := h.agentSubscribe(sub)
	if back.id != a.id || h.s.unreachable[a.id] != nil {
		t.Fatal("agent not readmitted")
	}
	if tp := h.task(pa.id, "t"); tp == nil || tp.GetState() != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("task not restored: %v", tp)
	}
	if len(h.s.frameworks[pa.id].unreachableTasks) != 0 {
		t.Fatal("task still listed unreachable")
	}
}

// Agents that subscribe at one instant (a new leader's re-registration
// storm) are first pinged spread over one ping timeout, each exactly once,
// not all together a timeout later.
func TestAgentFirstPingsSpread(t *testing.T) {
	h := newHarness(t)
	const n, slices = 200, 10
	agents := make([]*fakeAgent, n)
	for i := range agents {
		agents[i] = h.addAgent(fmt.Sprintf("a%d", i), "cpus:1;mem:64")
	}
	pinged := make([]int, n)
	for slice := 0; slice < slices; slice++ {
		h.advance(DefaultAgentPingTimeout / slices)
		inSlice := 0
		for i, a := range agents {
			for _, ev := range a.drain() {
				if ev.GetType() == protocol.AgentEvent_PING {
					pinged[i]++
					inSlice++
					a.call(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum()})
				}
			}
		}
		// 20 per slice on average; all 200 in one slice is what this
		// guards against.
		if inSlice > 3*n/slices {
			t.Errorf("slice %d: %d of %d agents pinged", slice, inSlice, n)
		}
	}
	for i, c := range pinged {
		if c != 1 {
			t.Errorf("agent %d pinged %d times in the first ping timeout, want 1", i, c)
		}
	}
}

// A stream that closes deactivates the agent; missed pings then make it
// unreachable unless it re-subscribes.
func TestAgentDisconnect(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:1;mem:64")
	f := h.subscribe(fwInfo("fw"))
	h.offer(f, a, "*", "cpus:1;mem:64")
	a.st.Close()
	h.settle()
	if ag := h.s.agents[a.id]; ag.connected || ag.active() {
		t.Fatal("agent still active after its stream closed")
	}
	if evs := f.drain(); len(evs) != 1 || evs[0].GetType() != schedulerpb.Event_RESCIND {
		t.Fatalf("framework got %v, want RESCIND", eventTypes(evs))
	}
	if !h.alloc.has("DeactivateAgent " + a.id) {
		t.Fatal("allocator not told")
	}
	sub := agentSub("a", "cpus:1;mem:64")
	sub.AgentInfo.Id = agentID(a.id)
	st, err := h.s.agentSubscribe(sub, "", h.now)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := st.Drain()
	if got := eventTypes(evs); len(got) != 2 || got[0] != "SUBSCRIBED" || got[1] != "RECONCILE" {
		t.Fatalf("re-registration got %v", got)
	}
	if !h.s.agents[a.id].active() {
		t.Fatal("not reactivated")
	}
	st.Close()
	h.settle()
	h.advance(time.Duration(DefaultMaxAgentPingTimeouts) * DefaultAgentPingTimeout)
	if h.s.unreachable[a.id] == nil {
		t.Fatal("disconnected agent not marked unreachable after missed pings")
	}
}

// registrar-design: a removed agent may not re-register under its old ID.
func TestRemovedAgentGetsShutdown(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:1;mem:64")
	if err := a.call(&protocol.AgentCall{Type: protocol.AgentCall_UNREGISTER.Enum()}); err != nil {
		t.Fatal(err)
	}
	if !h.reg.inner.Gone(a.id) || h.s.agents[a.id] != nil {
		t.Fatal("agent not removed")
	}
	sub := agentSub("a", "cpus:1;mem:64")
	sub.AgentInfo.Id = agentID(a.id)
	st, err := h.s.agentSubscribe(sub, "", h.now)
	if err != nil {
		t.Fatal(err)
	}
	evs, ended := st.Drain()
	if !ended || len(evs) != 1 || evs[0].GetType() != protocol.AgentEvent_SHUTDOWN || !strings.Contains(evs[0].GetShutdown().GetMessage(), "may not re-register") {
		t.Fatalf("got %v ended=%v", eventTypes(evs), ended)
	}
	// A fresh master (failover) learns it from the registrar.
	h2 := newHarness(t)
	h2.reg = &heldRegistrar{inner: h.reg.inner}
	h2.s.reg = h2.reg
	st2, _ := h2.s.agentSubscribe(sub, "", h2.now)
	h2.settle()
	if evs, ended := st2.Drain(); !ended || len(evs) != 1 || evs[0].GetType() != protocol.AgentEvent_SHUTDOWN {
		t.Fatalf("after failover got %v", eventTypes(evs))
	}
	if err := (&fakeAgent{h: h, id: a.id}).call(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum()}); err == nil || err.(*APIError).Status != 403 {
		t.Fatalf("call from removed agent: %v, want 403", err)
	}
}

// After a master failover an agent re-registers with an ID the new master
// does not know: it is readmitted and its frameworks and tasks rebuilt;
// frameworks are "recovered" until their scheduler re-subscribes.
func TestMasterFailoverReadmission(t *testing.T) {
	h := newHarness(t)
	fwi := fwInfo("fw")
	fwi.Id = frameworkID("OLD-0000")
	sub := agentSub("a", "cpus:4;mem:512")
	sub.AgentInfo.Id = agentID("OLD-S3")
	sub.Frameworks = []*mesos.FrameworkInfo{fwi}
	sub.Tasks = []*mesos.Task{{Name: proto.String("t"), TaskId: &mesos.TaskID{Value: proto.String("t")}, FrameworkId: fwi.Id,
		AgentId: agentID("OLD-S3"), State: mesos.TaskState_TASK_RUNNING.Enum(), Resources: resources.MustParse("cpus:1;mem:32").Proto()}}
	a := h.agentSubscribe(sub)
	if a.id != "OLD-S3" {
		t.Fatalf("readmitted as %q", a.id)
	}
	fw := h.s.frameworks["OLD-0000"]
	if fw == nil || !fw.recovered || fw.active || h.task("OLD-0000", "t") == nil {
		t.Fatal("framework/task not rebuilt")
	}
	if !h.alloc.has("AddAgent OLD-S3 ") || !h.alloc.has("AddFramework OLD-0000 active=false") {
		t.Fatalf("allocator calls %v", h.alloc.calls)
	}
	f := h.subscribe(fwi)
	if f.id != "OLD-0000" || h.s.frameworks["OLD-0000"].recovered {
		t.Fatal("re-subscription did not adopt the recovered framework")
	}
	// Implicit reconciliation reports the task with no uuid.
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{}})
	ups := f.updates()
	if len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_RUNNING || ups[0].GetReason() != mesos.TaskStatus_REASON_RECONCILIATION ||
		ups[0].GetMessage() != "Reconciliation: Latest task state" || ups[0].Uuid != nil {
		t.Fatalf("implicit reconcile: %v", ups)
	}
}

func TestReconcileAndKillUnknown(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:1;mem:64")
	pa := h.subscribe(fwInfo("pa", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	old := h.subscribe(fwInfo("old"))
	h.s.gone["M-S9"] = true
	task := func(id, agent string) *schedulerpb.Call_Reconcile_Task {
		rt := &schedulerpb.Call_Reconcile_Task{TaskId: &mesos.TaskID{Value: proto.String(id)}}
		if agent != "" {
			rt.AgentId = agentID(agent)
		}
		return rt
	}
	rc := &schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{
		Tasks: []*schedulerpb.Call_Reconcile_Task{task("x", a.id), task("y", "M-S9"), task("z", "")}}}
	pa.mustCall(rc)
	want := []mesos.TaskState{mesos.TaskState_TASK_GONE, mesos.TaskState_TASK_GONE_BY_OPERATOR, mesos.TaskState_TASK_UNKNOWN}
	ups := pa.updates()
	if len(ups) != 3 {
		t.Fatalf("got %v", ups)
	}
	for i, w := range want {
		if ups[i].GetState() != w || ups[i].GetReason() != mesos.TaskStatus_REASON_RECONCILIATION {
			t.Errorf("update %d = %v, want %v", i, ups[i].GetState(), w)
		}
	}
	old.mustCall(rc)
	for _, u := range old.updates() {
		if u.GetState() != mesos.TaskState_TASK_LOST {
			t.Errorf("non-partition-aware framework got %v", u.GetState())
		}
	}
	old.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_KILL.Enum(), Kill: &schedulerpb.Call_Kill{TaskId: &mesos.TaskID{Value: proto.String("nope")}}})
	if ups := old.updates(); len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_LOST || ups[0].GetReason() != mesos.TaskStatus_REASON_RECONCILIATION {
		t.Fatalf("KILL of unknown task: %v", ups)
	}
}

func TestKillingStateOnlyWithCapability(t *testing.T) {
	for _, withCap := range []bool{false, true} {
		h := newHarness(t)
		a := h.addAgent("a", "cpus:1;mem:64")
		var caps []mesos.FrameworkInfo_Capability_Type
		if withCap {
			caps = append(caps, mesos.FrameworkInfo_Capability_TASK_KILLING_STATE)
		}
		f := h.subscribe(fwInfo("fw", caps...))
		o := h.offer(f, a, "*", "cpus:1;mem:64")
		f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t", a.id, "cpus:1"))))
		f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_KILL.Enum(), Kill: &schedulerpb.Call_Kill{TaskId: &mesos.TaskID{Value: proto.String("t")}}})
		if evs := a.drain(); evs[len(evs)-1].GetType() != protocol.AgentEvent_KILL_TASK {
			t.Fatalf("agent got %v, want KILL_TASK last", eventTypes(evs))
		}
		a.update(f.id, "t", mesos.TaskState_TASK_KILLING, true)
		ups := f.updates()
		acked := false
		for _, ev := range a.drain() {
			acked = acked || ev.GetType() == protocol.AgentEvent_ACKNOWLEDGE
		}
		if withCap && (len(ups) != 1 || acked) {
			t.Fatalf("capable framework: updates %v, master acked %v", ups, acked)
		}
		if !withCap && (len(ups) != 0 || !acked) {
			t.Fatalf("framework without TASK_KILLING_STATE: updates %v, master acked %v", ups, acked)
		}
	}
}

func TestMessagesAndExecutorExit(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:2;mem:256")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:2;mem:256")
	ti := cmdTask("t", a.id, "cpus:1")
	ti.Command = nil
	ti.Executor = &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("E")}, Command: &mesos.CommandInfo{Value: proto.String("x")},
		Resources: resources.MustParse("cpus:0.5").Proto()}
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(ti)))
	a.drain()
	h.alloc.recoveries()
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_MESSAGE.Enum(), Message: &schedulerpb.Call_Message{
		AgentId: agentID(a.id), ExecutorId: &mesos.ExecutorID{Value: proto.String("E")}, Data: []byte("hi")}})
	if evs := a.drain(); len(evs) != 1 || string(evs[0].GetFrameworkMessage().GetData()) != "hi" {
		t.Fatalf("agent got %v", eventTypes(evs))
	}
	a.call(&protocol.AgentCall{Type: protocol.AgentCall_FRAMEWORK_MESSAGE.Enum(), FrameworkMessage: &protocol.AgentCall_FrameworkMessage{
		FrameworkId: frameworkID(f.id), ExecutorId: &mesos.ExecutorID{Value: proto.String("E")}, Data: []byte("yo")}})
	if evs := f.drain(); len(evs) != 1 || string(evs[0].GetMessage().GetData()) != "yo" {
		t.Fatalf("framework got %v", eventTypes(evs))
	}
	a.call(&protocol.AgentCall{Type: protocol.AgentCall_EXECUTOR_EXITED.Enum(), ExecutorExited: &protocol.AgentCall_ExecutorExited{
		FrameworkId: frameworkID(f.id), ExecutorId: &mesos.ExecutorID{Value: proto.String("E")}, Status: proto.Int32(256)}})
	evs := f.drain()
	if len(evs) != 1 || evs[0].GetType() != schedulerpb.Event_FAILURE || evs[0].GetFailure().GetStatus() != 256 {
		t.Fatalf("framework got %v", eventTypes(evs))
	}
	if rec := h.alloc.recoveries(); len(rec) != 1 || !rec[0].res.Equal(resources.MustParse("cpus:0.5").AllocatedTo("*")) {
		t.Fatalf("executor resources recovered as %+v", rec)
	}
}

func TestSchedulerCallChecks(t *testing.T) {
	h := newHarness(t)
	f := h.subscribe(fwInfo("fw"))
	revive := func() *schedulerpb.Call {
		return &schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum(), FrameworkId: frameworkID(f.id)}
	}
	for _, tc := range []struct {
		name   string
		call   *schedulerpb.Call
		stream string
		status int
		msg    string
	}{
		{"unknown framework", &schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum(), FrameworkId: frameworkID("nope")}, f.st.ID(), 400, "Framework cannot be found"},
		{"no stream id", revive(), "", 400, "Mesos-Stream-Id"},
		{"wrong stream id", revive(), "abc", 400, "didn't match"},
		{"unknown type", &schedulerpb.Call{Type: schedulerpb.Call_UNKNOWN.Enum(), FrameworkId: frameworkID(f.id)}, f.st.ID(), 501, "UNKNOWN"},
	} {
		err := h.s.schedulerCall(Principal{}, tc.call, tc.stream, h.now)
		ae, ok := err.(*APIError)
		if !ok || ae.Status != tc.status || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("%s: got %v, want %d %q", tc.name, err, tc.status, tc.msg)
		}
	}
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_SUPPRESS.Enum()})
	if !h.alloc.has("SuppressOffers "+f.id) || !h.s.frameworks[f.id].suppressed["*"] {
		t.Fatal("suppress not applied")
	}
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum()})
	if !h.alloc.has("ReviveOffers "+f.id) || h.s.frameworks[f.id].suppressed["*"] {
		t.Fatal("revive not applied")
	}
	info := proto.Clone(h.s.frameworks[f.id].info).(*mesos.FrameworkInfo)
	info.Name = proto.String("renamed")
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_UPDATE_FRAMEWORK.Enum(), UpdateFramework: &schedulerpb.Call_UpdateFramework{FrameworkInfo: info}})
	if h.s.frameworks[f.id].info.GetName() != "renamed" {
		t.Fatal("UPDATE_FRAMEWORK not applied")
	}
	info.User = proto.String("other")
	if err := f.call(&schedulerpb.Call{Type: schedulerpb.Call_UPDATE_FRAMEWORK.Enum(), UpdateFramework: &schedulerpb.Call_UpdateFramework{FrameworkInfo: info}}); err == nil {
		t.Fatal("UPDATE_FRAMEWORK changing user accepted")
	}
}

// A REQUEST reaches the allocator per role (the resources' allocation role,
// else each of the framework's roles); malformed ones are 400 naming the
// request and reach nothing.
func TestRequestReachesAllocator(t *testing.T) {
	h := newHarness(t)
	info := fwInfo("mr", mesos.FrameworkInfo_Capability_MULTI_ROLE)
	info.Roles = []string{"web", "db"}
	f := h.subscribe(info)
	request := func(rs ...*mesos.Request) *schedulerpb.Call {
		return &schedulerpb.Call{Type: schedulerpb.Call_REQUEST.Enum(), FrameworkId: frameworkID(f.id),
			Request: &schedulerpb.Call_Request{Requests: rs}}
	}
	f.mustCall(request(&mesos.Request{Resources: resources.MustParse("cpus:5").Proto()}))
	if !h.alloc.has("RequestResources " + f.id + " [{web  cpus:5} {db  cpus:5}]") {
		t.Fatalf("allocator calls: %v", h.alloc.recorded())
	}
	f.mustCall(request(&mesos.Request{AgentId: &mesos.AgentID{Value: proto.String("A1")},
		Resources: resources.MustParse("cpus:2").AllocatedTo("db").Proto()}))
	if !h.alloc.has("RequestResources " + f.id + " [{db A1 cpus(allocated: db):2}]") {
		t.Fatalf("allocator calls: %v", h.alloc.recorded())
	}
	bad := []struct {
		name string
		req  *mesos.Request
		msg  string
	}{
		{"negative", &mesos.Request{Resources: []*mesos.Resource{{Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(-1)}}}}, "request.requests[0].resources"},
		{"foreign role", &mesos.Request{Resources: resources.MustParse("cpus:1").AllocatedTo("ops").Proto()}, "'ops' is not one of the framework's roles"},
		{"two roles", &mesos.Request{Resources: append(resources.MustParse("cpus:1").AllocatedTo("web").Proto(),
			resources.MustParse("mem:1").AllocatedTo("db").Proto()...)}, "roles 'web' and 'db' in one request"},
	}
	before := len(h.alloc.recorded())
	for _, tc := range bad {
		err := h.s.schedulerCall(Principal{}, request(tc.req), f.st.ID(), h.now)
		ae, ok := err.(*APIError)
		if !ok || ae.Status != 400 || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("%s: got %v, want 400 %q", tc.name, err, tc.msg)
		}
	}
	if after := len(h.alloc.recorded()); after != before {
		t.Fatalf("refused requests reached the allocator: %v", h.alloc.recorded()[before:])
	}
}
