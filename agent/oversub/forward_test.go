package oversub

import (
	"testing"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Seed (oversubscription): "(2) The agent keeps polling estimates from the
// resource estimator and tracks the latest estimate. (3) The agent will send
// the total amount of oversubscribed resources to the master when the latest
// estimate is different from the previous estimate."
func TestForwarder(t *testing.T) {
	holding := []ContainerUsage{ctr("svc", "cpus:2", false, nil), ctr("batch", "cpus:1", true, nil)}
	var f Forwarder
	for i, step := range []struct {
		estimate   resources.Resources
		containers []ContainerUsage
		reset      bool
		want       resources.Resources
		send       bool
	}{
		{estimate: resources.Resources{}, want: resources.Resources{}, send: true}, // the first total is always sent
		{estimate: resources.Resources{}, want: resources.Resources{}, send: false},
		{estimate: rev("cpus:2"), want: rev("cpus:2"), send: true},
		{estimate: rev("cpus:2"), want: rev("cpus:2"), send: false},
		// A revocable task took 1 of the 2 cpus: the estimator says 1, the
		// total stays 2 and is not resent.
		{estimate: rev("cpus:1"), containers: holding, want: rev("cpus:2"), send: false},
		{estimate: rev("cpus:0.5"), containers: holding, want: rev("cpus:1.5"), send: true},
		{estimate: rev("cpus:0.5"), containers: holding, reset: true, want: rev("cpus:1.5"), send: true}, // re-registered
	} {
		if step.reset {
			f.Reset()
		}
		got, send := f.Next(step.estimate, step.containers)
		if !got.Equal(step.want) || send != step.send {
			t.Fatalf("step %d: total %v send %v; want %v %v", i, got, send, step.want, step.send)
		}
	}
}

// The estimate is estimator slack: every resource carries throttle_info, and
// a tenant of a lent reservation (revocable without throttle_info) adds
// nothing to the total, which is the master's to lend, not the estimator's.
func TestForwarderCountsOnlyThrottleable(t *testing.T) {
	lent, err := resources.Parse("cpus:3", "*")
	if err != nil {
		t.Fatal(err)
	}
	ps := lent.Proto()
	for _, p := range ps {
		p.Revocable = &mesos.Resource_RevocableInfo{}
	}
	lent, err = resources.FromProto(ps)
	if err != nil {
		t.Fatal(err)
	}
	tenant := ContainerUsage{ContainerID: "tenant", Allocated: lent}
	var f Forwarder
	got, _ := f.Next(rev("cpus:1"), []ContainerUsage{tenant, ctr("batch", "cpus:0.5", true, nil)})
	if !got.Equal(rev("cpus:1.5")) {
		t.Fatalf("total %v, want cpus:1.5 throttle-able", got)
	}
	if !got.Throttleable().Equal(got) || got.Scalar("cpus") != 1.5 {
		t.Fatalf("total %v is not all throttle-able", got)
	}
	for _, p := range got.Proto() {
		if p.GetRevocable().GetThrottleInfo() == nil {
			t.Fatalf("resource without throttle_info: %v", p)
		}
	}
}
