package oversub

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"mezzo/resources"
)

func killed(cs []Correction) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ContainerID)
	}
	sort.Strings(ids)
	return ids
}

// Seed (oversubscription): "The noop controller does not provide any
// corrections".
func TestNoopControllerNeverCorrects(t *testing.T) {
	q, err := NewController(Config{}, &script{})
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := q.Corrections(context.Background(), t0); cs != nil || err != nil {
		t.Fatalf("noop corrections %v, %v", cs, err)
	}
}

// Seed (oversubscription): "If the load is above the thresholds controller
// evicts all the revocable executors", "when standard unix system load
// average for 5 minutes will be above 6, or for 15 minutes will be above 4
// then agent will evict all the revocable executors", and "1 minute system
// load is ignored".
func TestLoadController(t *testing.T) {
	running := snap("cpus:8", ctr("svc", "cpus:2", false, nil), ctr("r1", "cpus:1", true, nil), ctr("r2", "cpus:1", true, nil))
	for _, tc := range []struct {
		name      string
		five      *float64
		fifteen   *float64
		load      LoadAverage
		loadErr   error
		want      []string
		wantError bool
	}{
		{name: "5-minute load above its threshold", five: f64(6), fifteen: f64(4), load: LoadAverage{1, 6.5, 3}, want: []string{"r1", "r2"}},
		{name: "15-minute load above its threshold", five: f64(6), fifteen: f64(4), load: LoadAverage{1, 5, 4.1}, want: []string{"r1", "r2"}},
		{name: "at the threshold is not above it", five: f64(6), fifteen: f64(4), load: LoadAverage{9, 6, 4}},
		{name: "the 1-minute load is ignored", five: f64(6), fifteen: f64(4), load: LoadAverage{50, 1, 1}},
		{name: "an unset threshold is not checked", fifteen: f64(4), load: LoadAverage{50, 50, 1}},
		{name: "an unreadable load kills nothing", five: f64(6), loadErr: errors.New("no /proc"), wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{QoSController: "load", LoadThreshold5Min: tc.five, LoadThreshold15Min: tc.fifteen,
				LoadAverage: func() (LoadAverage, error) { return tc.load, tc.loadErr }}
			q, err := NewController(cfg, &script{snaps: []Snapshot{running}})
			if err != nil {
				t.Fatal(err)
			}
			cs, err := q.Corrections(context.Background(), t0)
			if tc.wantError {
				if err == nil || cs != nil {
					t.Fatalf("corrections %v, %v; want an error and none", cs, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := killed(cs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("killed %v, want %v", got, tc.want)
			}
			for _, c := range cs {
				if c.Type != Kill || c.Controller != "load" || !strings.Contains(c.Message, "load QoS controller") ||
					c.FrameworkID != "fw-"+c.ContainerID || c.ExecutorID != "ex-"+c.ContainerID {
					t.Errorf("correction %+v", c)
				}
			}
		})
	}
}

func TestParseLoadAverage(t *testing.T) {
	got, err := ParseLoadAverage("0.52 1.25 3.00 2/345 6789\n")
	if err != nil || got != (LoadAverage{0.52, 1.25, 3}) {
		t.Fatalf("parse: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1 2", "1 x 3", "1 -2 3"} {
		if _, err := ParseLoadAverage(bad); err == nil {
			t.Errorf("ParseLoadAverage(%q) accepted", bad)
		}
	}
}

// box is one container over a 10-second interval: its allocation, the cpus
// it used and the share of CFS periods it was throttled in.
type box struct {
	id        string
	alloc     string
	revocable bool
	rate      float64
	throttled float64
	// unmeasured leaves the second look without statistics.
	unmeasured bool
}

// looks returns the two snapshots 10 seconds apart that boxes describe.
func looks(total string, boxes ...box) []Snapshot {
	var first, second []ContainerUsage
	for _, b := range boxes {
		first = append(first, ctr(b.id, b.alloc, b.revocable, throttledCPU(0, 0, 0, 0)))
		st := throttledCPU(10, b.rate*10, 100, uint32(b.throttled*100))
		if b.unmeasured {
			st = nil
		}
		second = append(second, ctr(b.id, b.alloc, b.revocable, st))
	}
	return []Snapshot{snap(total, first...), snap(total, second...)}
}

// Seed (oversubscription, "Interference detection"): "it is important to
// constantly monitor the original task running on those resources and
// guarantee performance based on an SLA. In order to react to detected
// interference, the QoS controller needs to be able to kill ... running
// revocable tasks." and the NOTE: "the whole container is treated as a
// revocable container and can therefore be killed".
func TestInterferenceController(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snaps []Snapshot
		want  []string
	}{
		{name: "demand that fits kills nothing", snaps: looks("cpus:4",
			box{id: "svc", alloc: "cpus:2", rate: 1}, box{id: "b1", alloc: "cpus:2", revocable: true, rate: 2})},
		{name: "demand over the agent kills the fewest, largest allocation first", snaps: looks("cpus:4",
			box{id: "svc", alloc: "cpus:3", rate: 2.5},
			box{id: "b1", alloc: "cpus:0.5", revocable: true, rate: 1.4},
			box{id: "b2", alloc: "cpus:1.5", revocable: true, rate: 0.1},
			box{id: "b3", alloc: "cpus:0.5", revocable: true, rate: 0.3}),
			want: []string{"b2"}},
		{name: "a tenant filling idle CPU is not interference", snaps: looks("cpus:2",
			box{id: "svc", alloc: "cpus:2", rate: 0.45},
			box{id: "b1", alloc: "cpus:1.4", revocable: true, rate: 1.55})},
		{name: "the owner's rising load takes the lent CPU back", snaps: looks("cpus:2",
			box{id: "svc", alloc: "cpus:2", rate: 1.9},
			box{id: "b1", alloc: "cpus:1.4", revocable: true, rate: 0.1}),
			want: []string{"b1"}},
		{name: "a throttled regular container wants its whole allocation", snaps: looks("cpus:4",
			box{id: "svc", alloc: "cpus:3", rate: 1.5, throttled: 0.5},
			box{id: "b1", alloc: "cpus:1", revocable: true, rate: 1},
			box{id: "b2", alloc: "cpus:1", revocable: true, rate: 1}),
			want: []string{"b1"}},
		{name: "throttling below the ratio is not starvation", snaps: looks("cpus:4",
			box{id: "svc", alloc: "cpus:3", rate: 1.5, throttled: 0.01},
			box{id: "b1", alloc: "cpus:1", revocable: true, rate: 1},
			box{id: "b2", alloc: "cpus:1", revocable: true, rate: 1})},
		{name: "throttled but fitting kills nothing: evictions cannot lift its own quota", snaps: looks("cpus:4",
			box{id: "svc", alloc: "cpus:1", rate: 1, throttled: 0.9},
			box{id: "b1", alloc: "cpus:1", revocable: true, rate: 1})},
		{name: "several kills when one is not enough", snaps: looks("cpus:4",
			box{id: "svc", alloc: "cpus:3.5", rate: 3},
			box{id: "b1", alloc: "cpus:1", revocable: true, rate: 0.5},
			box{id: "b2", alloc: "cpus:1", revocable: true, rate: 0.5},
			box{id: "b3", alloc: "cpus:1", revocable: true, rate: 0.5}),
			want: []string{"b1", "b2"}},
		{name: "regular demand alone over the agent kills every revocable container", snaps: looks("cpus:4",
			box{id: "svc", alloc: "cpus:6", rate: 5},
			box{id: "b1", alloc: "cpus:1", revocable: true, rate: 0.1},
			box{id: "b2", alloc: "cpus:1", revocable: true, rate: 0.1}),
			want: []string{"b1", "b2"}},
		{name: "an unmeasured revocable container counts its allocation", snaps: looks("cpus:4",
			box{id: "svc", alloc: "cpus:3", rate: 2.5},
			box{id: "b1", alloc: "cpus:2", revocable: true, unmeasured: true}),
			want: []string{"b1"}},
		{name: "regular containers are never killed", snaps: looks("cpus:2",
			box{id: "svc1", alloc: "cpus:2", rate: 2}, box{id: "svc2", alloc: "cpus:2", rate: 2})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := NewController(Config{QoSController: "interference"}, &script{snaps: tc.snaps})
			if err != nil {
				t.Fatal(err)
			}
			first, err := q.Corrections(context.Background(), at(0))
			if err != nil || first != nil {
				t.Fatalf("first look: %v, %v; want nothing (no rates yet)", first, err)
			}
			cs, err := q.Corrections(context.Background(), at(10))
			if err != nil {
				t.Fatal(err)
			}
			if got := killed(cs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("killed %v, want %v", got, tc.want)
			}
			for _, c := range cs {
				if c.Type != Kill || c.Controller != "interference" || !strings.Contains(c.Message, "interference QoS controller") {
					t.Errorf("correction %+v", c)
				}
			}
		})
	}
}

func TestInterferenceNeedsTheAgentsCPUs(t *testing.T) {
	q, _ := NewController(Config{QoSController: "interference"}, &script{snaps: []Snapshot{snap("mem:1024")}})
	if _, err := q.Corrections(context.Background(), t0); err == nil {
		t.Fatal("no error for an agent total without cpus")
	}
}

// The bench's case: seven tenants hold 0.25 revocable cpus each beside
// their command executor's regular 0.1. Only the revocable cpus were lent;
// counting the executors' 0.7 as well evicted tenants while the owner used
// only 0.2 of the agent's 2 cpus.
func TestInterferenceCountsOnlyLentCPUs(t *testing.T) {
	look := func(ts float64) []ContainerUsage {
		cs := []ContainerUsage{ctr("svc", "cpus:2.2", false, cpu(ts, 0.2*ts))}
		for i := 0; i < 7; i++ {
			c := ctr(fmt.Sprintf("t%d", i), "cpus:0.25", true, cpu(ts, 0.25*ts))
			c.Allocated = c.Allocated.Add(resources.MustParse("cpus:0.1"))
			cs = append(cs, c)
		}
		return cs
	}
	src := &script{snaps: []Snapshot{{Total: snap("cpus:2").Total, Containers: look(0)}, {Total: snap("cpus:2").Total, Containers: look(10)}}}
	q, err := NewController(Config{QoSController: "interference"}, src)
	if err != nil {
		t.Fatal(err)
	}
	for i, now := range []float64{0, 10} {
		cs, err := q.Corrections(context.Background(), at(now))
		if err != nil || len(cs) != 0 {
			t.Fatalf("look %d: %v, %v; want no kills (0.2 + 7×0.25 of 2 cpus)", i, killed(cs), err)
		}
	}
}
