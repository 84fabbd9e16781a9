package allocator

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/resources"
)

type offerEvent struct {
	fw     string
	offers Offers
}

func startDriver(t *testing.T, name string) (Allocator, *clock.Fake, chan offerEvent) {
	t.Helper()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ch := make(chan offerEvent, 100)
	a, err := New(name, Options{
		Clock: fake,
		Offer: func(fw string, o Offers) { ch <- offerEvent{fw, o} },
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(a.Stop)
	// Wait until the loop armed its ticker.
	deadline := time.Now().Add(30 * time.Second)
	for fake.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("allocator loop did not start")
		}
		time.Sleep(time.Millisecond)
	}
	return a, fake, ch
}

func waitOffer(t *testing.T, ch chan offerEvent) offerEvent {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no offer")
	}
	return offerEvent{}
}

func noOffer(t *testing.T, a Allocator, ch chan offerEvent) {
	t.Helper()
	// Metrics drains the queue under the lock, so once it returns any run
	// triggered by earlier notifications has at least started; a second
	// call waits for that run (the loop holds the lock while allocating).
	in := a.(Introspector)
	in.Metrics()
	in.Metrics()
	select {
	case e := <-ch:
		t.Fatalf("unexpected offer %v", e)
	default:
	}
}

func TestDriverOffersDeclineAndInterval(t *testing.T) {
	a, fake, ch := startDriver(t, Default)
	total := resources.MustParse("cpus:4;mem:1024")
	a.AddAgent("a1", &mesos.AgentInfo{Hostname: proto.String("h")}, total, nil)
	a.AddFramework("f1", &mesos.FrameworkInfo{Role: proto.String("web")}, nil, true, FrameworkOptions{})
	e := waitOffer(t, ch)
	if e.fw != "f1" || !e.offers["web"]["a1"].Equal(total) {
		t.Fatalf("offer = %v %v", e.fw, e.offers)
	}
	// Decline with the default 5s filter: nothing until 5s pass.
	a.RecoverResources("f1", "a1", total, &mesos.Filters{})
	noOffer(t, a, ch)
	fake.Advance(4 * time.Second)
	noOffer(t, a, ch)
	fake.Advance(time.Second)
	e = waitOffer(t, ch)
	if !e.offers["web"]["a1"].Equal(total) {
		t.Fatalf("offer after filter expiry = %v", e.offers)
	}
	m := a.(Introspector).Metrics()
	if m["allocator/mesos/allocation_runs"] < 2 {
		t.Errorf("allocation_runs = %v", m["allocator/mesos/allocation_runs"])
	}
	if _, ok := m["allocator/mesos/allocation_run_ms/p50"]; !ok {
		t.Errorf("no allocation_run_ms/p50 in %v", m)
	}
	if m["allocator/mesos/roles/web/shares/dominant"] != 1 {
		t.Errorf("web dominant share = %v", m["allocator/mesos/roles/web/shares/dominant"])
	}
}

func TestDriverStopEndsCallbacks(t *testing.T) {
	a, fake, ch := startDriver(t, Default)
	a.Stop()
	a.AddAgent("a1", nil, resources.MustParse("cpus:1;mem:64"), nil)
	a.AddFramework("f1", &mesos.FrameworkInfo{}, nil, true, FrameworkOptions{})
	fake.Advance(10 * time.Second)
	select {
	case e := <-ch:
		t.Fatalf("offer after Stop: %v", e)
	case <-time.After(20 * time.Millisecond):
	}
	a.Stop() // idempotent
}

func TestRegistry(t *testing.T) {
	names := strings.Join(Names(), ",")
	for _, n := range []string{Default, StrictPriority, Lottery} {
		if !strings.Contains(names, n) {
			t.Errorf("%s not registered (have %s)", n, names)
		}
	}
	if _, err := New("nope", Options{Offer: func(string, Offers) {}}); err == nil {
		t.Error("unknown allocator accepted")
	}
}

func TestOptionsValidation(t *testing.T) {
	offer := func(string, Offers) {}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "Offer"},
		{Options{Offer: offer, Interval: -1}, "Interval"},
		{Options{Offer: offer, Weights: map[string]float64{"a": 0}}, "Weights"},
		{Options{Offer: offer, MinAllocatable: []map[string]float64{{}}}, "MinAllocatable"},
		{Options{Offer: offer, MinAllocatable: []map[string]float64{{"cpus": -1}}}, "MinAllocatable"},
	} {
		_, err := New(Default, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) error = %v, want mention of %s", tc.opts, err, tc.want)
		}
	}
}

// A paused allocator applies notifications but makes no offers, neither
// on request nor at the interval, and says why; Resume allocates.
func TestDriverPause(t *testing.T) {
	a, fake, ch := startDriver(t, Default)
	a.Pause()
	total := resources.MustParse("cpus:4;mem:1024")
	a.AddAgent("a1", &mesos.AgentInfo{Hostname: proto.String("h")}, total, nil)
	a.AddFramework("f1", &mesos.FrameworkInfo{Role: proto.String("web")}, nil, true, FrameworkOptions{})
	a.Allocate()
	fake.Advance(time.Second)
	noOffer(t, a, ch)
	ex := a.(Introspector).Explain("f1")
	if len(ex.Roles) != 1 || ex.Roles[0].Reason != ReasonPaused {
		t.Fatalf("explanation while paused: %+v", ex)
	}
	a.Resume()
	if e := waitOffer(t, ch); e.fw != "f1" || !e.offers["web"]["a1"].Equal(total) {
		t.Fatalf("offer after Resume = %v %v", e.fw, e.offers)
	}
}

// UpdateAllocation through the goroutine driver: a RESERVE applied to an
// offer frees nothing (no new offer), a bogus conversion is refused and
// counted, and the reservation comes back, declined, in its new form.
func TestDriverUpdateAllocation(t *testing.T) {
	a, _, ch := startDriver(t, Default)
	total := resources.MustParse("cpus:4;mem:1024")
	a.AddAgent("a1", &mesos.AgentInfo{Hostname: proto.String("h")}, total, nil)
	a.AddFramework("f1", &mesos.FrameworkInfo{Role: proto.String("db")}, nil, true, FrameworkOptions{})
	waitOffer(t, ch)
	from := resources.MustParse("cpus:2;mem:512")
	to, err := from.PushReservation(dynamic("db"))
	if err != nil {
		t.Fatal(err)
	}
	a.UpdateAllocation("f1", "a1", from, to)
	a.UpdateAllocation("f1", "a1", resources.MustParse("cpus:1"), resources.MustParse("cpus:2"))
	noOffer(t, a, ch)
	if m := a.(Introspector).Metrics(); m["allocator/mesos/allocation_updates_rejected"] != 1 {
		t.Fatalf("allocation_updates_rejected = %v, want 1", m["allocator/mesos/allocation_updates_rejected"])
	}
	held := total.Subtract(from).Add(to)
	a.RecoverResources("f1", "a1", held, nil)
	if e := waitOffer(t, ch); !e.offers["db"]["a1"].Equal(held) {
		t.Fatalf("offer after the reservation = %v, want %s", e.offers, held)
	}
}
