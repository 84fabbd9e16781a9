package master

import (
	"math"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/scheduler"
)

// wantBadRequest fails unless err is a 400 whose message starts with want.
func wantBadRequest(t *testing.T, err error, want string) {
	t.Helper()
	e, ok := err.(*APIError)
	if !ok || e.Status != http.StatusBadRequest || !strings.HasPrefix(e.Message, want) {
		t.Fatalf("got %v, want 400 %q", err, want)
	}
}

// SUBSCRIBE with offer filters or constraints Mesos refuses: 400 naming
// the problem, and no framework.
func TestSubscribeRefusesBadOfferFiltersAndConstraints(t *testing.T) {
	h := newHarness(t)
	rack := scheduler.OfferConstraintsFor("*", []*schedulerpb.AttributeConstraint{scheduler.Exists(scheduler.Attribute("rack"))})
	for _, tc := range []struct {
		name string
		info func() *mesos.FrameworkInfo
		cons *schedulerpb.OfferConstraints
		want string
	}{
		{"constraints for another role", func() *mesos.FrameworkInfo { return fwInfo("f") },
			scheduler.OfferConstraintsFor("web", []*schedulerpb.AttributeConstraint{scheduler.Exists(scheduler.Attribute("rack"))}),
			"Offer constraints specify `role_constraints` for a role 'web' not contained in the set of roles"},
		{"bad regex", func() *mesos.FrameworkInfo { return fwInfo("f") },
			scheduler.OfferConstraintsFor("*", []*schedulerpb.AttributeConstraint{scheduler.TextMatches(scheduler.Zone(), "[")}),
			"Offer constraints are not valid: A role * has an invalid 'AttributeConstraint': Failed to construct regex from pattern '['"},
		{"empty quantity set", func() *mesos.FrameworkInfo {
			i := fwInfo("f")
			scheduler.SetMinAllocatable(i, "*", map[string]float64{})
			return i
		}, rack, "Failed to validate scheduler::Call: Invalid 'FrameworkInfo.offer_filters' for role '*': Resource quantities must contain at least one quantity"},
		{"negative quantity", func() *mesos.FrameworkInfo {
			i := fwInfo("f")
			scheduler.SetMinAllocatable(i, "*", map[string]float64{"cpus": -1})
			return i
		}, nil, "Failed to validate scheduler::Call: Invalid 'FrameworkInfo.offer_filters' for role '*': Invalid resource quantity for 'cpus': Negative values not supported"},
		{"NaN quantity", func() *mesos.FrameworkInfo {
			i := fwInfo("f")
			scheduler.SetMinAllocatable(i, "*", map[string]float64{"mem": math.NaN()})
			return i
		}, nil, "Failed to validate scheduler::Call: Invalid 'FrameworkInfo.offer_filters' for role '*': Invalid resource quantity for 'mem': NaN not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.s.subscribe(Principal{}, &schedulerpb.Call_Subscribe{FrameworkInfo: tc.info(), OfferConstraints: tc.cons}, h.now)
			wantBadRequest(t, err, tc.want)
			if len(h.s.frameworks) != 0 {
				t.Fatalf("a refused SUBSCRIBE left a framework: %v", h.s.frameworks)
			}
		})
	}
}

// Valid filters and constraints reach the allocator at SUBSCRIBE and
// UPDATE_FRAMEWORK and show in the framework's state; an invalid
// UPDATE_FRAMEWORK is refused and changes nothing.
func TestOfferConstraintsReachAllocatorAndState(t *testing.T) {
	h := newHarness(t)
	info := fwInfo("f")
	scheduler.SetMinAllocatable(info, "*", map[string]float64{"cpus": 2, "mem": 1024})
	rack1 := scheduler.OfferConstraintsFor("*", []*schedulerpb.AttributeConstraint{scheduler.TextEquals(scheduler.Attribute("rack"), "r1")})
	st, err := h.s.subscribe(Principal{}, &schedulerpb.Call_Subscribe{FrameworkInfo: info, OfferConstraints: rack1}, h.now)
	if err != nil {
		t.Fatal(err)
	}
	h.settle()
	f := &fakeFramework{h: h, st: st, id: st.FrameworkID()}
	if h.alloc.optsOf(f.id).OfferConstraints == nil {
		t.Fatal("SUBSCRIBE's constraints did not reach the allocator")
	}
	fw := h.s.frameworks[f.id]
	if !proto.Equal(h.s.frameworkView(fw).OfferConstraints, rack1) || !proto.Equal(h.s.frameworkProto(fw).GetOfferConstraints(), rack1) {
		t.Fatalf("state reports %v", h.s.frameworkView(fw).OfferConstraints)
	}

	upd := func(c *schedulerpb.OfferConstraints) error {
		i := proto.CloneOf(fw.info)
		return f.call(&schedulerpb.Call{Type: schedulerpb.Call_UPDATE_FRAMEWORK.Enum(),
			UpdateFramework: &schedulerpb.Call_UpdateFramework{FrameworkInfo: i, OfferConstraints: c}})
	}
	bad := scheduler.OfferConstraintsFor("*", []*schedulerpb.AttributeConstraint{scheduler.TextMatches(scheduler.Hostname(), strings.Repeat("x", 500))})
	wantBadRequest(t, upd(bad), "'UpdateFramework' call is not valid: Offer constraints are not valid: A role * has an invalid 'AttributeConstraint': Regex '")
	if !proto.Equal(h.s.frameworks[f.id].offerConstraints, rack1) {
		t.Fatal("a refused UPDATE_FRAMEWORK changed the constraints")
	}
	if err := upd(nil); err != nil {
		t.Fatal(err)
	}
	if h.alloc.optsOf(f.id).OfferConstraints != nil || h.s.frameworks[f.id].offerConstraints != nil {
		t.Fatal("UPDATE_FRAMEWORK without constraints left them in place")
	}
	if got := h.s.frameworkProto(h.s.frameworks[f.id]).GetOfferConstraints(); got == nil || len(got.GetRoleConstraints()) != 0 {
		t.Fatalf("GET_FRAMEWORKS offer_constraints %v, want present and empty (as Mesos)", got)
	}
}
