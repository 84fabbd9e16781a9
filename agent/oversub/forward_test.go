package oversub

import (
	"testing"

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
