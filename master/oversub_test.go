package master

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// The master's side of oversubscription (docs/oversubscription.md), with
// the real allocator run synchronously: estimates from UPDATE_RESOURCES,
// lent reservations (--lend_idle_reservations), one offer per kind, and
// rescinds of the kind that shrank.

// oversubHarness is a harness with the real hierarchical allocator, its
// Rescind callback wired as Master wires it, and lending as given.
func oversubHarness(t *testing.T, lend bool) (*harness, *allocator.Sync) {
	t.Helper()
	h := newHarness(t, func(c *Config) { c.LendIdleReservations = lend })
	opts := allocator.Options{
		Offer: func(fw string, offers allocator.Offers) {
			h.s.post(func(s *state, now time.Time) { s.allocated(fw, offers, now) })
		},
		Rescind: func(fw, agent string, r resources.Resources) {
			h.s.post(func(s *state, now time.Time) { s.rescindOn(fw, agent, r, now) })
		},
		OfferIdleReservations: lend,
		Clock:                 clock.NewFake(epoch0),
	}
	sa, err := allocator.NewSync(allocator.Default, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.s.alloc = sa
	return h, sa
}

func estimate(res string) *protocol.AgentCall {
	r := resources.MustParse(res).Proto()
	for _, p := range r {
		p.Revocable = &mesos.Resource_RevocableInfo{}
	}
	return &protocol.AgentCall{Type: protocol.AgentCall_UPDATE_RESOURCES.Enum(),
		UpdateResources: &protocol.AgentCall_UpdateResources{Oversubscribed: r}}
}

// kindOf names an offer's kind: "regular", "throttle" or "lent"; "mixed"
// if it holds more than one.
func kindOf(t *testing.T, o *mesos.Offer) string {
	t.Helper()
	r, err := resources.FromProto(o.GetResources())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	if !r.NonRevocable().IsEmpty() {
		kinds = append(kinds, "regular")
	}
	if !r.Throttleable().IsEmpty() {
		kinds = append(kinds, "throttle")
	}
	if !r.Lent().IsEmpty() {
		kinds = append(kinds, "lent")
	}
	if len(kinds) != 1 {
		return "mixed:" + strings.Join(kinds, "+")
	}
	return kinds[0]
}

// byKind indexes offers by kind, failing on a mixed offer or two of a kind.
func byKind(t *testing.T, offers []*mesos.Offer) map[string]*mesos.Offer {
	t.Helper()
	out := map[string]*mesos.Offer{}
	for _, o := range offers {
		k := kindOf(t, o)
		if strings.HasPrefix(k, "mixed") || out[k] != nil {
			t.Fatalf("offer %s is %s (or a second of its kind): %v", o.GetId().GetValue(), k, o.GetResources())
		}
		out[k] = o
	}
	return out
}

func rescinded(f *fakeFramework) []string {
	var out []string
	for _, ev := range f.drain() {
		if id := ev.GetRescind().GetOfferId().GetValue(); id != "" {
			out = append(out, id)
		}
	}
	return out
}

func scalarOf(t *testing.T, rs []*mesos.Resource, name string) float64 {
	t.Helper()
	r, err := resources.FromProto(rs)
	if err != nil {
		t.Fatal(err)
	}
	return r.Scalar(name)
}

// An estimate must be revocable, unreserved scalar resources; anything
// else is refused with 400 naming the field and changes nothing. A valid
// one is marked throttle-able, whatever the agent sent.
func TestUpdateResourcesValidation(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:4;mem:1024")
	throttled := estimate("cpus:1")
	throttled.GetUpdateResources().Oversubscribed[0].Revocable.ThrottleInfo = &mesos.Resource_RevocableInfo_ThrottleInfo{}
	for _, tc := range []struct {
		name string
		call func() *protocol.AgentCall
		want string // error text; "" accepted
		cpus float64
	}{
		{"valid", func() *protocol.AgentCall { return estimate("cpus:1.5;mem:128") }, "", 1.5},
		{"already throttle-able", func() *protocol.AgentCall { return throttled }, "", 1},
		{"not revocable", func() *protocol.AgentCall {
			c := estimate("cpus:2")
			c.GetUpdateResources().Oversubscribed[0].Revocable = nil
			return c
		}, "oversubscribed[0] (cpus): must be revocable", 1},
		{"reserved", func() *protocol.AgentCall { return estimate("cpus(web):2") }, "oversubscribed[0] (cpus): must be unreserved", 1},
		{"ranges", func() *protocol.AgentCall { return estimate("ports:[31000-31001]") }, "oversubscribed[0] (ports): must be a scalar", 1},
		{"negative", func() *protocol.AgentCall {
			c := estimate("cpus:2")
			c.GetUpdateResources().Oversubscribed[0].Scalar.Value = proto.Float64(-1)
			return c
		}, "Invalid 'update_resources.oversubscribed'", 1},
		{"absent", func() *protocol.AgentCall {
			return &protocol.AgentCall{Type: protocol.AgentCall_UPDATE_RESOURCES.Enum()}
		}, "Expecting 'update_resources' to be present", 1},
		{"empty: no more slack", func() *protocol.AgentCall { return estimate("") }, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := a.call(tc.call())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				var apiErr *APIError
				if err == nil || !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want 400 containing %q", err, tc.want)
				}
			}
			got := h.s.agents[a.id].oversubscribed
			if got.Scalar("cpus") != tc.cpus || !got.Equal(got.Throttleable()) {
				t.Fatalf("estimate now %v, want cpus %g, all throttle-able", got, tc.cpus)
			}
		})
	}
}

// Offers keep the kinds apart (oversubscription-for-reservation design,
// "Offers"): regular, throttle-able slack and lent reservations each in
// an offer of their own; a framework without REVOCABLE_RESOURCES sees
// only regular resources; an ACCEPT may combine one agent's offers, so a
// task runs on revocable cpus with regular memory.
func TestRevocableOffersKeepKindsApart(t *testing.T) {
	h, sa := oversubHarness(t, true)
	a := h.addAgent("a1", "cpus:2;mem:1024;cpus(owner):1;mem(owner):256")
	if err := a.call(estimate("cpus:1.5")); err != nil {
		t.Fatal(err)
	}
	plain := h.subscribe(roleInfo("plain", "other"))
	h.run(sa)
	for _, o := range plain.offers() {
		if k := kindOf(t, o); k != "regular" {
			t.Fatalf("a framework without REVOCABLE_RESOURCES was offered %s resources: %v", k, o.GetResources())
		}
	}
	plain.mustCall(teardownCall())

	tenant := h.subscribe(roleInfo("tenant", "other", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES))
	h.run(sa)
	offers := tenant.offers()
	k := byKind(t, offers)
	if len(offers) != 3 || k["regular"] == nil || k["throttle"] == nil || k["lent"] == nil {
		t.Fatalf("want a regular, a throttle-able and a lent offer, got %d: %v", len(offers), offers)
	}
	if got := scalarOf(t, k["throttle"].GetResources(), "cpus"); got != 1.5 {
		t.Fatalf("throttle-able cpus %g, want the estimate 1.5", got)
	}
	if c, m := scalarOf(t, k["lent"].GetResources(), "cpus"), scalarOf(t, k["lent"].GetResources(), "mem"); c != 1 || m != 256 {
		t.Fatalf("lent cpus %g mem %g, want the idle reservation cpus 1 mem 256", c, m)
	}
	for _, r := range k["lent"].GetResources() {
		if r.GetRole() != "*" && r.GetRole() != "" || len(r.GetReservations()) > 0 {
			t.Fatalf("lent resources must be offered unreserved: %v", r)
		}
	}

	// One task on lent cpus with regular memory: the ACCEPT combines
	// the agent's offers, the rest goes back.
	task := cmdTask("t1", a.id, "cpus:1;mem:128")
	task.Resources[0].Revocable = &mesos.Resource_RevocableInfo{}
	a.drain()
	tenant.mustCall(acceptCall([]*mesos.Offer{k["regular"], k["lent"]}, launch(task)))
	var run *protocol.AgentEvent_RunTask
	for _, ev := range a.drain() {
		if ev.GetType() == protocol.AgentEvent_RUN_TASK {
			run = ev.GetRunTask()
		}
	}
	if run == nil {
		t.Fatalf("no RUN_TASK for the task on combined offers; updates %v", tenant.updates())
	}
	got, _ := resources.FromProto(run.GetTask().GetResources())
	if got.Lent().Scalar("cpus") != 1 || got.NonRevocable().Scalar("mem") != 128 {
		t.Fatalf("task runs on %v, want lent cpus 1 and regular mem 128", got)
	}
}

// A shrinking estimate rescinds the throttle-able offer only; the
// framework keeps its regular and lent offers and is offered the smaller
// estimate again.
func TestSmallerEstimateRescindsSlackOffer(t *testing.T) {
	h, sa := oversubHarness(t, true)
	a := h.addAgent("a1", "cpus:2;mem:1024;cpus(owner):1")
	if err := a.call(estimate("cpus:1.5")); err != nil {
		t.Fatal(err)
	}
	tenant := h.subscribe(roleInfo("tenant", "other", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES))
	h.run(sa)
	k := byKind(t, tenant.offers())
	if err := a.call(estimate("cpus:0.5")); err != nil {
		t.Fatal(err)
	}
	h.run(sa)
	if got := rescinded(tenant); len(got) != 1 || got[0] != k["throttle"].GetId().GetValue() {
		t.Fatalf("rescinded %v, want only the throttle-able offer %s", got, k["throttle"].GetId().GetValue())
	}
	for _, kind := range []string{"regular", "lent"} {
		if h.s.offers[k[kind].GetId().GetValue()] == nil {
			t.Fatalf("the %s offer was rescinded with the slack", kind)
		}
	}
	h.run(sa)
	again := byKind(t, tenant.offers())
	if len(again) != 1 || again["throttle"] == nil || scalarOf(t, again["throttle"].GetResources(), "cpus") != 0.5 {
		t.Fatalf("re-offered %v, want the new estimate cpus 0.5 alone", again)
	}
}

// The lender takes its reservation back (design, "Rescind Offer"): while
// lent, the reservation's role is still offered it as regular resources;
// when the lender's framework is allocated it, the tenant's outstanding
// lent offer is rescinded (its other offers stay), and the lender's launch
// is accepted and sent to the agent although a tenant task still runs on
// the lent cpus (the agent evicts tenants, not the master).
func TestLenderTakesReservationBack(t *testing.T) {
	h, sa := oversubHarness(t, true)
	a := h.addAgent("a1", "cpus:2;mem:1024;cpus(owner):2;mem(owner):512")
	tenant := h.subscribe(roleInfo("tenant", "other", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES))
	h.run(sa)
	k := byKind(t, tenant.offers())
	if k["lent"] == nil || k["regular"] == nil {
		t.Fatalf("want regular and lent offers, got %v", k)
	}
	// The tenant runs a task on half the lent cpus and regular memory,
	// and is offered what is left of the lent ones again.
	task := cmdTask("tenant-1", a.id, "cpus:1;mem:64")
	task.Resources[0].Revocable = &mesos.Resource_RevocableInfo{}
	acc := acceptCall([]*mesos.Offer{k["regular"], k["lent"]}, launch(task))
	acc.Accept.Filters = &mesos.Filters{RefuseSeconds: proto.Float64(0)}
	tenant.mustCall(acc)
	a.drain()
	h.run(sa)
	left := byKind(t, tenant.offers())
	if left["lent"] == nil {
		t.Fatalf("the rest of the lent reservation was not offered again: %v", left)
	}

	lender := h.subscribe(roleInfo("lender", "owner"))
	h.run(sa)
	lo := lender.offers()
	if len(lo) != 1 || kindOf(t, lo[0]) != "regular" {
		t.Fatalf("lender offers %v, want its reservation as one regular offer", lo)
	}
	mine, _ := resources.FromProto(lo[0].GetResources())
	if mine.ReservedTo("owner").Scalar("cpus") != 2 {
		t.Fatalf("lender offered %v, want its reserved cpus 2", mine)
	}
	got := rescinded(tenant)
	if len(got) != 1 || got[0] != left["lent"].GetId().GetValue() {
		t.Fatalf("rescinded %v, want only the tenant's lent offer %s", got, left["lent"].GetId().GetValue())
	}
	for id, o := range h.s.offers {
		if o.fwID == tenant.id && !o.res.Lent().IsEmpty() {
			t.Fatalf("tenant still holds lent offer %s", id)
		}
	}

	own := cmdTask("lender-1", a.id, "cpus(owner):2;mem(owner):256")
	lender.mustCall(acceptCall(lo, launch(own)))
	sent := false
	for _, ev := range a.drain() {
		if ev.GetType() == protocol.AgentEvent_RUN_TASK && ev.GetRunTask().GetTask().GetTaskId().GetValue() == "lender-1" {
			sent = true
		}
	}
	if !sent {
		t.Fatalf("the lender's launch on its reservation was not sent to the agent; updates %v", lender.updates())
	}
	if h.task(tenant.id, "tenant-1") == nil {
		t.Fatal("the master dropped the tenant's task; evicting it is the agent's")
	}

	// The design's case 1: a tenant's launch on its rescinded lent offer
	// arrives after the rescind and is lost, not over-committed.
	late := cmdTask("tenant-2", a.id, "cpus:1")
	late.Resources[0].Revocable = &mesos.Resource_RevocableInfo{}
	tenant.mustCall(acceptCall([]*mesos.Offer{left["lent"]}, launch(late)))
	ups := tenant.updates()
	if len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_LOST || ups[0].GetReason() != mesos.TaskStatus_REASON_INVALID_OFFERS {
		t.Fatalf("launch on a rescinded lent offer: updates %v, want TASK_LOST with REASON_INVALID_OFFERS", ups)
	}
	for _, ev := range a.drain() {
		if ev.GetType() == protocol.AgentEvent_RUN_TASK {
			t.Fatalf("sent %v for a launch on a rescinded offer", ev.GetRunTask().GetTask().GetTaskId())
		}
	}
}

// The agent's revocable resources show in its total as Mesos shows an
// agent's estimate: throttle-able slack, and with lending the idle
// reservations as lent; a lent reservation in use by its role is no
// longer lendable.
func TestAgentViewShowsRevocableTotal(t *testing.T) {
	for _, lend := range []bool{false, true} {
		h, sa := oversubHarness(t, lend)
		a := h.addAgent("a1", "cpus:2;mem:1024;cpus(owner):1")
		if err := a.call(estimate("cpus:0.5")); err != nil {
			t.Fatal(err)
		}
		view := func() resources.Resources {
			s := h.s.snapshot(h.now)
			r, err := resources.FromProto(s.Agents[0].Total)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		total := view()
		wantLent := 0.0
		if lend {
			wantLent = 1
		}
		if total.Throttleable().Scalar("cpus") != 0.5 || total.Lent().Scalar("cpus") != wantLent || total.NonRevocable().Scalar("cpus") != 3 {
			t.Fatalf("lend=%v: total %v, want regular cpus 3, slack 0.5, lent %g", lend, total, wantLent)
		}
		if !lend {
			continue
		}
		lender := h.subscribe(roleInfo("lender", "owner"))
		h.run(sa)
		if got := view().Lent().Scalar("cpus"); got != 0 {
			t.Fatalf("reservation offered to its role, yet lendable cpus %g", got)
		}
		lender.mustCall(teardownCall())
		if got := view().Lent().Scalar("cpus"); got != 1 {
			t.Fatalf("reservation back, lendable cpus %g, want 1", got)
		}
	}
}

func teardownCall() *schedulerpb.Call {
	return &schedulerpb.Call{Type: schedulerpb.Call_TEARDOWN.Enum()}
}

// As Mesos: a container is revocable as a whole, so it may take cpus
// from revocable resources and memory from regular ones, never some cpus
// of each kind; the task (or task and executor) gets TASK_ERROR.
func TestTaskMixingRevocableAndRegularOfOneName(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a1", "cpus:4;mem:1024")
	f := h.subscribe(roleInfo("tenant", "*", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES))
	slack := resources.MustParse("cpus:2").AsThrottleable()
	revocable := func(res string) []*mesos.Resource {
		return resources.ToPreRefinement(resources.MustParse(res).AsThrottleable().Proto())
	}
	for _, tc := range []struct {
		name string
		task func() *mesos.TaskInfo
		want string // "" launched
	}{
		{"revocable cpus, regular mem", func() *mesos.TaskInfo {
			ti := cmdTask("ok", a.id, "mem:64")
			ti.Resources = append(ti.Resources, revocable("cpus:1")...)
			return ti
		}, ""},
		{"cpus of both kinds", func() *mesos.TaskInfo {
			ti := cmdTask("mixed", a.id, "cpus:0.5;mem:64")
			ti.Resources = append(ti.Resources, revocable("cpus:0.5")...)
			return ti
		}, "Task mixes revocable and non-revocable resources: Cannot use both revocable and non-revocable 'cpus' at the same time"},
		{"task and executor", func() *mesos.TaskInfo {
			ti := cmdTask("mixed-ex", a.id, "mem:64")
			ti.Resources = append(ti.Resources, revocable("cpus:0.5")...)
			ti.Command = nil
			ti.Executor = &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("ex")},
				Command:   &mesos.CommandInfo{Value: proto.String("run-executor")},
				Resources: resources.ToPreRefinement(resources.MustParse("cpus:0.1;mem:32").Proto())}
			return ti
		}, "Task and its executor mix revocable and non-revocable resources: Cannot use both revocable and non-revocable 'cpus' at the same time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.s.allocated(f.id, allocator.Offers{"*": {a.id: resources.MustParse("cpus:1;mem:512").Add(slack)}}, h.now)
			h.settle()
			offers := f.offers()
			if len(offers) != 2 {
				t.Fatalf("%d offers, want a regular and a throttle-able one", len(offers))
			}
			ti := tc.task()
			a.drain()
			f.mustCall(acceptCall(offers, launch(ti)))
			ran := false
			for _, ev := range a.drain() {
				ran = ran || ev.GetType() == protocol.AgentEvent_RUN_TASK
			}
			ups := f.updates()
			if tc.want == "" {
				if !ran || len(ups) != 0 {
					t.Fatalf("not launched: %v", ups)
				}
				return
			}
			if ran || len(ups) != 1 || ups[0].GetState() != mesos.TaskState_TASK_ERROR || ups[0].GetMessage() != tc.want {
				t.Fatalf("updates %v, want TASK_ERROR %q", ups, tc.want)
			}
		})
	}
}
