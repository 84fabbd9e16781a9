package oversub

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"mezzo/resources"
)

// Seed (oversubscription, "Writing a custom resource estimator"): "The noop
// estimator only provides an empty estimate to the agent ... effectively
// disabling oversubscription."
func TestNoopEstimatorIsEmpty(t *testing.T) {
	e, err := NewEstimator(Config{}, &script{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r, err := e.Oversubscribable(context.Background(), at(float64(i)))
		if err != nil || !r.IsEmpty() {
			t.Fatalf("noop estimate %v, %v; want empty", r, err)
		}
	}
}

// Seed (oversubscription): "The fixed estimator doesn't use the actual
// measured slack, but oversubscribes the node with fixed resource amount
// (defined via a command line flag)" and "a fixed amount of 14 cpus will
// be offered as revocable resources". Like Mesos's, it subtracts what
// revocable containers already hold; the agent adds that back.
func TestFixedEstimator(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snap  Snapshot
		err   error
		want  resources.Resources
		fails bool
	}{
		{name: "nothing revocable running", snap: snap("cpus:16;mem:4096", ctr("a", "cpus:2;mem:128", false, nil)),
			want: rev("cpus:14")},
		{name: "revocable containers hold some", snap: snap("cpus:16", ctr("a", "cpus:2", false, nil), ctr("r1", "cpus:3", true, nil), ctr("r2", "cpus:1.5", true, nil)),
			want: rev("cpus:9.5")},
		{name: "revocable hold more than the fixed amount", snap: snap("cpus:16", ctr("r1", "cpus:20", true, nil)),
			want: resources.Resources{}},
		{name: "usage unavailable", err: errors.New("containerizer down"), fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &script{snaps: []Snapshot{tc.snap}, errs: []error{tc.err}}
			e, err := NewEstimator(Config{ResourceEstimator: "fixed", FixedResources: "cpus:14"}, src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Oversubscribable(context.Background(), t0)
			if tc.fails {
				if err == nil {
					t.Fatalf("estimate %v with a failing usage source, want an error", got)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Fatalf("estimate %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// slackStep is one look of the slack estimator: what the usage source
// returns at now, and the estimate wanted (0 = none of that resource).
type slackStep struct {
	now      float64
	snap     Snapshot
	cpus     float64
	mem      float64
	wantNone bool
}

// Seed (oversubscription, step 1): the estimator "determine[s] the amount of
// oversubscribed resources ... based on measured resource usage slack
// (allocated but unused resources)"; step 4: "It is recommended only to
// oversubscribe compressible resources such as cpu shares".
func TestSlackEstimator(t *testing.T) {
	regular := func(ts, used float64) ContainerUsage {
		return ctr("svc", "cpus:4;mem:1024", false, withRSS(cpu(ts, used), 256))
	}
	decayed := 3 - (1-math.Exp(-15.0/60))*2.5 // EWMA of 3 then 0.5 after 15s of a 60s window
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []slackStep
	}{
		{name: "a first sample gives no rate, so nothing is lent", steps: []slackStep{
			{now: 0, snap: snap("cpus:8", regular(0, 0)), wantNone: true},
		}},
		{name: "an idle regular container lends its allocation less the margin and its usage", steps: []slackStep{
			{now: 0, snap: snap("cpus:8", regular(0, 0)), wantNone: true},
			{now: 15, snap: snap("cpus:8", regular(15, 7.5)), cpus: 4*0.9 - 0.5},
		}},
		{name: "a rise in usage takes the slack back at once, a fall returns it slowly", steps: []slackStep{
			{now: 0, snap: snap("cpus:8", regular(0, 0))},
			{now: 15, snap: snap("cpus:8", regular(15, 7.5)), cpus: 3.1},
			{now: 30, snap: snap("cpus:8", regular(30, 7.5+45)), cpus: 0.6},
			{now: 45, snap: snap("cpus:8", regular(45, 52.5+7.5)), cpus: math.Floor((3.6-decayed)*100) / 100},
		}},
		{name: "revocable containers already hold part of the slack", steps: []slackStep{
			{now: 0, snap: snap("cpus:8", regular(0, 0), ctr("batch", "cpus:1", true, cpu(0, 0)))},
			{now: 15, snap: snap("cpus:8", regular(15, 7.5), ctr("batch", "cpus:1", true, cpu(15, 15))), cpus: 2.1},
		}},
		{name: "never more than the agent's total less the margin and the usage", steps: []slackStep{
			{now: 0, snap: snap("cpus:2", ctr("svc", "cpus:2.2", false, cpu(0, 0)))},
			{now: 15, snap: snap("cpus:2", ctr("svc", "cpus:2.2", false, cpu(15, 6))), cpus: 2*0.9 - 0.4},
		}},
		{name: "idle revocable containers are no source of slack", steps: []slackStep{
			{now: 0, snap: snap("cpus:8", ctr("batch", "cpus:2", true, cpu(0, 0)))},
			{now: 15, snap: snap("cpus:8", ctr("batch", "cpus:2", true, cpu(15, 0))), wantNone: true},
		}},
		{name: "memory is never lent unless asked", steps: []slackStep{
			{now: 0, snap: snap("cpus:8;mem:4096", regular(0, 0))},
			{now: 15, snap: snap("cpus:8;mem:4096", regular(15, 0)), cpus: 3.6},
		}},
		{name: "memory is lent when the flag names it", cfg: Config{SlackResources: []string{"cpus", "mem"}}, steps: []slackStep{
			{now: 0, snap: snap("cpus:8;mem:4096", regular(0, 0)), mem: 665},
			{now: 15, snap: snap("cpus:8;mem:4096", regular(15, 0)), cpus: 3.6, mem: 665},
		}},
		{name: "an unmeasured container lends nothing", steps: []slackStep{
			{now: 0, snap: snap("cpus:8", regular(0, 0))},
			{now: 15, snap: snap("cpus:8", regular(15, 0)), cpus: 3.6},
			{now: 30, snap: snap("cpus:8", ctr("svc", "cpus:4;mem:1024", false, nil)), wantNone: true},
		}},
		{name: "a container that ended is forgotten: a new one with its id starts over", steps: []slackStep{
			{now: 0, snap: snap("cpus:8", regular(0, 0))},
			{now: 15, snap: snap("cpus:8", regular(15, 0)), cpus: 3.6},
			{now: 30, snap: snap("cpus:8"), wantNone: true},
			{now: 45, snap: snap("cpus:8", regular(45, 0)), wantNone: true},
		}},
		{name: "cpu counters going back (a restarted process) restart the rate", steps: []slackStep{
			{now: 0, snap: snap("cpus:8", regular(0, 100))},
			{now: 15, snap: snap("cpus:8", regular(15, 100)), cpus: 3.6},
			{now: 30, snap: snap("cpus:8", regular(30, 1)), wantNone: true},
		}},
		{name: "a wider margin lends less", cfg: Config{SlackMargin: 0.5}, steps: []slackStep{
			{now: 0, snap: snap("cpus:8", regular(0, 0))},
			{now: 15, snap: snap("cpus:8", regular(15, 15)), cpus: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.ResourceEstimator = "slack"
			src := &script{}
			for _, s := range tc.steps {
				src.snaps = append(src.snaps, s.snap)
			}
			e, err := NewEstimator(cfg, src)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				got, err := e.Oversubscribable(context.Background(), at(s.now))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !got.NonRevocable().IsEmpty() || !got.Reserved().IsEmpty() {
					t.Fatalf("step %d: estimate %v has non-revocable or reserved resources", i, got)
				}
				if s.wantNone {
					if !got.IsEmpty() {
						t.Fatalf("step %d: estimate %v, want none", i, got)
					}
					continue
				}
				if math.Abs(got.Scalar("cpus")-s.cpus) > 1e-9 || math.Abs(got.Scalar("mem")-s.mem) > 1e-9 {
					t.Fatalf("step %d: estimate %v, want cpus %v mem %v", i, got, s.cpus, s.mem)
				}
				if got.Scalar("disk") != 0 {
					t.Fatalf("step %d: estimate %v lends disk", i, got)
				}
			}
		})
	}
}

// The slack estimator decays by elapsed time, not by call count: looking
// more often does not make slack appear sooner.
func TestSlackDecayDependsOnTimeNotCalls(t *testing.T) {
	run := func(step float64) float64 {
		// Busy at 3 cpus over the second before 0, idle from then on.
		src := &script{snaps: []Snapshot{
			snap("cpus:8", ctr("svc", "cpus:4", false, cpu(-1, 0))),
			snap("cpus:8", ctr("svc", "cpus:4", false, cpu(0, 3))),
		}}
		nows := []float64{-1, 0}
		for ts := step; ts <= 60+1e-9; ts += step {
			src.snaps = append(src.snaps, snap("cpus:8", ctr("svc", "cpus:4", false, cpu(ts, 3))))
			nows = append(nows, ts)
		}
		e, _ := NewEstimator(Config{ResourceEstimator: "slack"}, src)
		var last float64
		for _, n := range nows {
			r, err := e.Oversubscribable(context.Background(), t0.Add(time.Duration(n*float64(time.Second))))
			if err != nil {
				t.Fatal(err)
			}
			last = r.Scalar("cpus")
		}
		return last
	}
	a, b := run(5), run(15)
	if math.Abs(a-b) > 0.02 {
		t.Errorf("after 60s idle: %v cpus sampling every 5s, %v every 15s; want the same", a, b)
	}
	if a <= 0 || a >= 3.6 {
		t.Errorf("after one window idle the estimate %v should be between 0 and 3.6", a)
	}
}
