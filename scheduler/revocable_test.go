package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/resources"
	"mezzo/scheduler"
	"mezzo/scheduler/schedulertest"
)

// Config.Revocable subscribes with REVOCABLE_RESOURCES (once, keeping the
// framework's other capabilities), and keeps it in UPDATE_FRAMEWORK.
func TestRevocableCapability(t *testing.T) {
	m := schedulertest.NewMaster(t)
	info := framework()
	info.Capabilities = append(info.Capabilities, &mesos.FrameworkInfo_Capability{Type: mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES.Enum()})
	for _, fi := range []*mesos.FrameworkInfo{framework(), info} {
		c := scheduler.New(scheduler.Config{Masters: []string{m.Addr()}, Framework: fi, Revocable: true,
			Clock: clock.NewFake(time.Unix(0, 0))})
		subscribe(t, c)
		subs := m.Calls(schedulerpb.Call_SUBSCRIBE)
		caps := capTypes(subs[len(subs)-1].GetSubscribe().GetFrameworkInfo())
		if caps != "RESERVATION_REFINEMENT,REVOCABLE_RESOURCES" {
			t.Fatalf("SUBSCRIBE capabilities %s, want RESERVATION_REFINEMENT,REVOCABLE_RESOURCES", caps)
		}
		if err := c.UpdateFramework(context.Background(), framework(), nil, nil); err != nil {
			t.Fatal(err)
		}
		ups := m.Calls(schedulerpb.Call_UPDATE_FRAMEWORK)
		if caps := capTypes(ups[len(ups)-1].GetUpdateFramework().GetFrameworkInfo()); caps != "RESERVATION_REFINEMENT,REVOCABLE_RESOURCES" {
			t.Fatalf("UPDATE_FRAMEWORK capabilities %s", caps)
		}
	}
	if fi := framework(); len(fi.GetCapabilities()) != 1 {
		t.Fatal("the caller's FrameworkInfo was modified")
	}
}

func capTypes(info *mesos.FrameworkInfo) string {
	var out []string
	for _, c := range info.GetCapabilities() {
		out = append(out, c.GetType().String())
	}
	return strings.Join(out, ",")
}

func offer(id, agent string, res ...*mesos.Resource) *mesos.Offer {
	return &mesos.Offer{Id: &mesos.OfferID{Value: proto.String(id)}, AgentId: &mesos.AgentID{Value: proto.String(agent)},
		FrameworkId: &mesos.FrameworkID{Value: proto.String("F")}, Hostname: proto.String(agent), Resources: res}
}

func scalar(name string, v float64) *mesos.Resource {
	return &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}}
}

func lent(r *mesos.Resource) *mesos.Resource {
	r.Revocable = &mesos.Resource_RevocableInfo{}
	return r
}

func throttled(r *mesos.Resource) *mesos.Resource {
	r.Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
	return r
}

func reserved(r *mesos.Resource, role string) *mesos.Resource {
	r.Reservations = []*mesos.Resource_ReservationInfo{{Type: mesos.Resource_ReservationInfo_STATIC.Enum(), Role: proto.String(role)}}
	return r
}

// ByAgent puts the separate offers of one agent (regular, throttle-able,
// lent) together, keeps agents and MULTI_ROLE roles apart, and keeps the
// order of first appearance.
func TestByAgent(t *testing.T) {
	multi := offer("o5", "a1", scalar("cpus", 1))
	multi.AllocationInfo = &mesos.Resource_AllocationInfo{Role: proto.String("other")}
	gs := scheduler.ByAgent([]*mesos.Offer{
		offer("o1", "a1", scalar("cpus", 2), scalar("mem", 512)),
		offer("o2", "a2", scalar("cpus", 1)),
		offer("o3", "a1", throttled(scalar("cpus", 1.5))),
		offer("o4", "a1", lent(scalar("cpus", 1))),
		multi,
	})
	if len(gs) != 3 {
		t.Fatalf("%d groups, want a1, a2, a1/other", len(gs))
	}
	ids := func(g scheduler.AgentOffers) string {
		var out []string
		for _, id := range g.IDs() {
			out = append(out, id.GetValue())
		}
		return strings.Join(out, ",")
	}
	if gs[0].AgentID != "a1" || ids(gs[0]) != "o1,o3,o4" || gs[1].AgentID != "a2" || gs[2].Role != "other" || ids(gs[2]) != "o5" {
		t.Fatalf("groups %v %v %v", ids(gs[0]), ids(gs[1]), ids(gs[2]))
	}
	r := gs[0].Resources
	if r.NonRevocable().Scalar("cpus") != 2 || r.Throttleable().Scalar("cpus") != 1.5 || r.Lent().Scalar("cpus") != 1 {
		t.Fatalf("a1's resources %v", r)
	}
}

// Take serves revocable names from revocable resources of the need's kind
// and every other name from regular ones (reserved first), never mixing
// kinds within a name, and fails without taking anything when short.
func TestTake(t *testing.T) {
	avail, err := resources.New(scalar("cpus", 2), scalar("mem", 512), reserved(scalar("mem", 128), "web"),
		throttled(scalar("cpus", 1.5)), lent(scalar("cpus", 1)), lent(scalar("mem", 256)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		need string
		rev  []string
		kind scheduler.RevocableKind
		want string // taken; "" fails
		miss string // Shortfall when it fails
	}{
		{"regular only", "cpus:1;mem:64", nil, scheduler.AnyRevocable, "cpus:1; mem(web):64", ""},
		{"revocable cpus, regular mem", "cpus:2;mem:200", []string{"cpus"}, scheduler.AnyRevocable,
			"cpus{REV}:1; cpus{REV:THROTTLE}:1; mem:72; mem(web):128", ""},
		{"throttle-able only", "cpus:1.5;mem:1", []string{"cpus"}, scheduler.ThrottleableOnly, "cpus{REV:THROTTLE}:1.5; mem(web):1", ""},
		{"lent only", "cpus:1;mem:256", []string{"cpus", "mem"}, scheduler.LentOnly, "cpus{REV}:1; mem{REV}:256", ""},
		{"not enough revocable cpus", "cpus:3;mem:64", []string{"cpus"}, scheduler.AnyRevocable, "", "cpus{REV}: 2.5 offered, 3 needed"},
		{"not enough lent", "cpus:1.5", []string{"cpus"}, scheduler.LentOnly, "", "cpus{REV}: 1 offered, 1.5 needed"},
		{"no gpus", "gpus:1", nil, scheduler.AnyRevocable, "", "gpus: 0 offered, 1 needed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need, err := scheduler.ParseNeed(tc.need, tc.rev...)
			if err != nil {
				t.Fatal(err)
			}
			need.Kind = tc.kind
			got, rest, ok := scheduler.Take(avail, need)
			if tc.want == "" {
				if ok || !rest.Equal(avail) {
					t.Fatalf("took %v, want nothing", got)
				}
				if miss := scheduler.Shortfall(avail, need); miss != tc.miss {
					t.Fatalf("Shortfall = %q, want %q", miss, tc.miss)
				}
				return
			}
			if !ok || got.String() != tc.want {
				t.Fatalf("took %q (ok %v), want %q", got.String(), ok, tc.want)
			}
			if !rest.Add(got).Equal(avail) {
				t.Fatalf("rest %v + taken %v is not what was offered", rest, got)
			}
			if miss := scheduler.Shortfall(avail, need); miss != "" {
				t.Fatalf("Shortfall = %q for a need that fits", miss)
			}
		})
	}
}

func TestParseNeedErrors(t *testing.T) {
	for _, tc := range []struct{ text, rev, want string }{
		{"", "", "no resources given"},
		{"cpus", "", "expecting name:quantity"},
		{"cpus(web):1", "", "expecting name:quantity"},
		{"cpus:-1", "", "positive"},
		{"mem:64", "cpus", `revocable "cpus": the need has no cpus`},
	} {
		var rev []string
		if tc.rev != "" {
			rev = []string{tc.rev}
		}
		if _, err := scheduler.ParseNeed(tc.text, rev...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseNeed(%q, %v) = %v, want error containing %q", tc.text, rev, err, tc.want)
		}
	}
	n, err := scheduler.ParseNeed("mem:64;cpus:0.5", "cpus")
	if err != nil || n.String() != "cpus{REV}:0.5;mem:64" {
		t.Fatalf("ParseNeed = %v, %v", n, err)
	}
}
