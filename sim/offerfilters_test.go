package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/scheduler"
)

// A framework on the scheduler SDK sets offer constraints and offer
// filters at SUBSCRIBE and changes them with UPDATE_FRAMEWORK; a real
// `mezzo master` offers it only the emulated agents they admit, and
// refuses invalid ones with a 400 naming the problem.
func TestOfferConstraintsWithSDK(t *testing.T) {
	m := startMaster(t, freePort(t), t.TempDir(), "--allocation_interval=50ms")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := map[string]struct{ rack, res string }{
		"h-r1-big":   {"r1", "cpus:4;mem:4096"},
		"h-r1-small": {"r1", "cpus:0.5;mem:256"},
		"h-r2-big":   {"r2", "cpus:4;mem:4096"},
	}
	for h, x := range hosts {
		a, err := NewAgent(AgentConfig{Masters: []string{m.Addr}, Hostname: h, Resources: x.res,
			Attributes: map[string]string{"rack": x.rack}})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Stop()
		a.Start()
		eventually(t, 30*time.Second, h+" registered", func() (bool, string) { return a.Registered(), "" })
	}

	info := &mesos.FrameworkInfo{User: proto.String("sim"), Name: proto.String("picky")}
	scheduler.SetMinAllocatable(info, "*", map[string]float64{"cpus": 1})
	rack := func(r string) *schedulerpb.OfferConstraints {
		return scheduler.OfferConstraintsFor("*", []*schedulerpb.AttributeConstraint{scheduler.TextEquals(scheduler.Attribute("rack"), r)})
	}
	c := scheduler.New(scheduler.Config{Masters: []string{m.Addr}, Framework: info, OfferConstraints: rack("r1")})
	events, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// offered collects the hostnames offered until want is among them;
	// every offer is declined for an hour, so each agent comes once.
	offered := func(want string) map[string]bool {
		t.Helper()
		got := map[string]bool{}
		for !got[want] {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("stream ended: %v", c.Err())
				}
				var ids []*mesos.OfferID
				for _, o := range ev.GetOffers().GetOffers() {
					got[o.GetHostname()] = true
					ids = append(ids, o.GetId())
				}
				if len(ids) > 0 {
					if err := c.Decline(ctx, ids, scheduler.RefuseFor(3600)); err != nil {
						t.Fatal(err)
					}
				}
			case <-ctx.Done():
				t.Fatalf("no offer of %s; offered %v", want, got)
			}
		}
		return got
	}
	// Rack r1, at least one CPU: only h-r1-big.
	if got := offered("h-r1-big"); got["h-r1-small"] || got["h-r2-big"] {
		t.Fatalf("offered %v", got)
	}
	// UPDATE_FRAMEWORK: rack r2 instead (REVIVE clears the declines).
	if err := c.UpdateFramework(ctx, info, nil, rack("r2")); err != nil {
		t.Fatal(err)
	}
	if err := c.Revive(ctx); err != nil {
		t.Fatal(err)
	}
	if got := offered("h-r2-big"); got["h-r1-small"] || got["h-r1-big"] {
		t.Fatalf("offered %v after the update", got)
	}
	// Invalid constraints: 400 naming the problem.
	bad := scheduler.OfferConstraintsFor("web", []*schedulerpb.AttributeConstraint{scheduler.Exists(scheduler.Attribute("rack"))})
	err = c.UpdateFramework(ctx, info, nil, bad)
	var se *scheduler.Error
	if !errors.As(err, &se) || se.Status != 400 || se.Body != "'UpdateFramework' call is not valid: Offer constraints specify `role_constraints` for a role 'web' not contained in the set of roles" {
		t.Fatalf("invalid constraints: %v", err)
	}
}
