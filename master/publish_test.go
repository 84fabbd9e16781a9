package master

import (
	"context"
	"errors"
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

// A burst of concurrent status updates shares a few snapshot builds, and
// every caller still sees its own update in Snapshot() once its call
// returns.
func TestPublishBurstSharesBuildsAndKeepsReplyInvariant(t *testing.T) {
	const n = 100
	m := newThrottled(t, Config{Clock: clock.NewFake(epoch0), Allocator: &recordingAllocator{}}, 50*time.Millisecond, 0)
	ctx := context.Background()
	ast, err := m.SubscribeAgent(ctx, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: agentSub("h", "cpus:100;mem:10000")})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := next(t, ast.Ready(), ast.Drain)
	agent := evs[0].GetSubscribed().GetAgentId().GetValue()
	fst, err := m.Subscribe(ctx, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
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
	if err := m.SchedulerCall(ctx, call, fst.ID()); err != nil {
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
			if err := m.AgentCall(ctx, update(id)); err != nil {
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
	// sent, as from many agents at a steady rate) share a few builds;
	// unthrottled, each would make one.
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

// Leadership fields are published at once even while other changes are
// being deferred, and publishing them releases the replies held so far.
func TestPublishLeadershipImmediately(t *testing.T) {
	e := &fakeElection{}
	m := newThrottled(t, Config{Clock: clock.NewFake(epoch0), Allocator: &recordingAllocator{},
		Registrar: NewMemoryRegistrar(), Election: e}, time.Hour, time.Hour)
	e.set(true, 1, "")
	waitFor(t, "election published", func() bool { return m.Snapshot().Elected })

	// A plain change is now deferred (the last build "cost" an hour): its
	// caller is not answered.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	held := make(chan error, 1)
	go func() {
		held <- m.call(context.Background(), func(s *state, now time.Time) error { s.count("test/held"); return nil })
	}()
	if err := m.call(ctx, func(s *state, now time.Time) error { s.count("test/held"); return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call under a deferred publish returned %v, want it held", err)
	}
	if c := m.Snapshot().Counters["test/held"]; c != 0 {
		t.Fatalf("deferred change published early: %v", c)
	}

	// Losing leadership publishes at once and answers the held caller.
	e.set(false, 2, "127.0.0.1:5051")
	waitFor(t, "deposition published", func() bool {
		s := m.Snapshot()
		return !s.Elected && s.Leader != nil
	})
	select {
	case err := <-held:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held reply not released by the leadership publish")
	}
}
