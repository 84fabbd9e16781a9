package master

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
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

// newThrottled starts a master whose snapshot builds count as costing at
// least cost (real builds in tests take microseconds, which never defer).
func newThrottled(t *testing.T, cfg Config, cost, maxDelay time.Duration) *Master {
	t.Helper()
	cfg.ID, cfg.Hostname, cfg.IP, cfg.Port, cfg.Version = "M", "m", "127.0.0.1", 5050, "test"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.pub.costFloor, m.pub.maxDelay = cost, maxDelay
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

func taskState(s *Snapshot, id string) mesos.TaskState {
	for _, fw := range s.Frameworks {
		for _, t := range fw.Tasks {
			if t.GetTaskId().GetValue() == id {
				return t.GetState()
			}
		}
	}
	return -1
}

// A burst of concurrent status updates, each followed by a read, shares a
// few snapshot builds, and every caller still sees its own update in
// Snapshot() once its call returns.
func TestPublishBurstSharesBuildsAndKeepsReplyInvariant(t *testing.T) {
	const n = 100
	m := newThrottled(t, Config{Clock: clock.NewFake(epoch0), Allocator: &recordingAllocator{}}, 50*time.Millisecond, 0)
	ctx := context.Background()
	ast, err := m.SubscribeAgent(ctx, Principal{}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: agentSub("h", "cpus:100;mem:10000")})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := next(t, ast.Ready(), ast.Drain)
	agent := evs[0].GetSubscribed().GetAgentId().GetValue()
	fst, err := m.Subscribe(ctx, Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: fwInfo("fw")}})
	if err != nil {
		t.Fatal(err)
	}
	m.AllocatorOffer(fst.FrameworkID(), allocator.Offers{"*": {agent: resources.MustParse("cpus:100;mem:10000")}})
	var offer *mesos.Offer
	for offer == nil {
		fevs, _ := next(t, fst.Ready(), fst.Drain)
		for _, ev := range fevs {
			if o := ev.GetOffers().GetOffers(); len(o) > 0 {
				offer = o[0]
			}
		}
	}
	var tasks []*mesos.TaskInfo
	for i := range n {
		tasks = append(tasks, cmdTask(fmt.Sprintf("t%d", i), agent, "cpus:0.1;mem:10"))
	}
	call := acceptCall([]*mesos.Offer{offer}, launch(tasks...))
	call.FrameworkId = frameworkID(fst.FrameworkID())
	if err := m.SchedulerCall(ctx, Principal{}, call, fst.ID()); err != nil {
		t.Fatal(err)
	}
	if s := m.Snapshot(); taskState(s, "t0") != mesos.TaskState_TASK_STAGING {
		t.Fatalf("ACCEPT returned before its snapshot: t0 is %v", taskState(s, "t0"))
	}

	update := func(id string) *protocol.AgentCall {
		return &protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), AgentId: agentID(agent),
			StatusUpdate: &protocol.AgentCall_StatusUpdate{FrameworkId: frameworkID(fst.FrameworkID()),
				Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(id)}, State: mesos.TaskState_TASK_RUNNING.Enum()}}}
	}

	// Concurrent callers: each sees its own update once its call returns.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n / 2 {
		wg.Go(func() {
			id := fmt.Sprintf("t%d", i)
			if err := m.AgentCall(ctx, Principal{}, update(id)); err != nil {
				errs <- err
				return
			}
			if got := taskState(m.Snapshot(), id); got != mesos.TaskState_TASK_RUNNING {
				errs <- fmt.Errorf("%s is %v in Snapshot() after its update returned", id, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Updates arriving one at a time (each applied before the next is
	// sent, as from many agents at a steady rate) and not read make no
	// builds at all.
	before := m.pub.builds.Load()
	for i := n / 2; i < n; i++ {
		applied := make(chan error, 1)
		m.post(func(s *state, now time.Time) {
			applied <- s.agentCallNotingPreemption(update(fmt.Sprintf("t%d", i)), now)
		})
		if err := <-applied; err != nil {
			t.Fatal(err)
		}
	}
	if err := m.call(ctx, func(*state, time.Time) error { return nil }); err != nil {
		t.Fatal(err)
	}
	builds := m.pub.builds.Load() - before
	t.Logf("%d updates, %d builds", n/2, builds)
	if builds > n/10 {
		t.Errorf("%d status updates made %d snapshot builds, want at most %d", n/2, builds, n/10)
	}
	s := m.Snapshot()
	for i := range n {
		if got := taskState(s, fmt.Sprintf("t%d", i)); got != mesos.TaskState_TASK_RUNNING {
			t.Errorf("t%d is %v after the burst", i, got)
		}
	}
}

// With cheap builds (the normal case in small states) every change is
// published at once: an event posted without a reply shows up without
// any other activity.
func TestPublishCheapBuildsAreImmediate(t *testing.T) {
	m := newThrottled(t, Config{Clock: clock.NewFake(epoch0), Allocator: &recordingAllocator{}}, 0, 0)
	for i := range 20 {
		m.post(func(s *state, now time.Time) { s.count("test/posted") })
		waitFor(t, "posted change published", func() bool {
			return m.Snapshot().Counters["test/posted"] == float64(i+1)
		})
	}
}

// Leadership fields are published at once even while a reader's build is
// being deferred, and that publish answers the waiting reader.
func TestPublishLeadershipImmediately(t *testing.T) {
	e := &fakeElection{}
	m := newThrottled(t, Config{Clock: clock.NewFake(epoch0), Allocator: &recordingAllocator{},
		Registrar: NewMemoryRegistrar(), Election: e}, time.Hour, time.Hour)
	e.set(true, 1, "")
	waitFor(t, "election published", func() bool { return m.LastPublished().Elected })

	// A plain change is answered at once but built only when asked for.
	if err := m.call(context.Background(), func(s *state, now time.Time) error { s.count("test/held"); return nil }); err != nil {
		t.Fatal(err)
	}
	if c := m.LastPublished().Counters["test/held"]; c != 0 {
		t.Fatalf("a change nobody read was built: %v", c)
	}
	// The last build "cost" an hour: a reader is held.
	read := make(chan *Snapshot, 1)
	go func() { read <- m.Snapshot() }()
	select {
	case s := <-read:
		t.Fatalf("reader answered during a deferred build: held=%v", s.Counters["test/held"])
	case <-time.After(50 * time.Millisecond):
	}

	// Losing leadership publishes at once and answers the reader with
	// everything so far.
	e.set(false, 2, "127.0.0.1:5051")
	select {
	case s := <-read:
		if s.Elected || s.Leader == nil || s.Counters["test/held"] != 1 {
			t.Fatalf("reader got elected=%v leader=%v held=%v, want the deposition and the change", s.Elected, s.Leader, s.Counters["test/held"])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("held reader not answered by the leadership publish")
	}
}

// Nothing is built while nobody reads: a stream of changes costs no
// snapshot builds, and the first read after them builds one showing all.
func TestPublishOnlyWhenRead(t *testing.T) {
	m := newThrottled(t, Config{Clock: clock.NewFake(epoch0), Allocator: &recordingAllocator{}}, 0, 0)
	ctx := context.Background()
	m.Snapshot()
	before := m.pub.builds.Load()
	for range 50 {
		if err := m.call(ctx, func(s *state, now time.Time) error { s.count("test/n"); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if b := m.pub.builds.Load() - before; b != 0 {
		t.Fatalf("50 unread changes made %d builds, want 0", b)
	}
	if got := m.Snapshot().Counters["test/n"]; got != 50 {
		t.Fatalf("Snapshot() shows %v changes, want 50", got)
	}
	if b := m.pub.builds.Load() - before; b != 1 {
		t.Fatalf("one read made %d builds, want 1", b)
	}
	m.Snapshot() // nothing changed since: no build
	if b := m.pub.builds.Load() - before; b != 1 {
		t.Fatalf("a read of an unchanged state built again (%d builds)", b)
	}
}

// A snapshot read after Stop shows the final state, without a loop.
func TestPublishFinalStateAfterStop(t *testing.T) {
	m := newThrottled(t, Config{Clock: clock.NewFake(epoch0), Allocator: &recordingAllocator{}}, 0, 0)
	if err := m.call(context.Background(), func(s *state, now time.Time) error { s.count("test/last"); return nil }); err != nil {
		t.Fatal(err)
	}
	m.Stop()
	if got := m.Snapshot().Counters["test/last"]; got != 1 {
		t.Fatalf("after Stop, Snapshot() shows %v, want the last change", got)
	}
}
