package master

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/master/allocator"
	"mezzo/resources"
)

func startMaster(t *testing.T, alloc allocator.Allocator) (*Master, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(epoch0)
	m, err := New(Config{ID: "M", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test", Clock: clk,
		Allocator: alloc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	return m, clk
}

// next waits (bounded, in wall time) for the next events of a stream.
func next[T any](t *testing.T, ready <-chan struct{}, drain func() ([]T, bool)) ([]T, bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if evs, ended := drain(); len(evs) > 0 || ended {
			return evs, ended
		}
		select {
		case <-ready:
		case <-deadline:
			t.Fatal("timed out waiting for stream events")
		}
	}
}

func recvEvent(t *testing.T, ch <-chan *masterpb.Event) *masterpb.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for an operator event")
		return nil
	}
}

func TestMasterLoopEndToEnd(t *testing.T) {
	alloc := &recordingAllocator{}
	m, _ := startMaster(t, alloc)
	ctx, cancel := context.WithCancel(context.Background())
	snap, events, err := m.Watch(ctx)
	if err != nil || snap == nil || len(snap.Frameworks) != 0 {
		t.Fatalf("Watch: %v %v", snap, err)
	}

	ast, err := m.SubscribeAgent(context.Background(), Principal{}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: agentSub("h", "cpus:2;mem:256")})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := next(t, ast.Ready(), ast.Drain)
	if evs[0].GetType() != protocol.AgentEvent_SUBSCRIBED {
		t.Fatalf("agent got %v", eventTypes(evs))
	}
	agent := evs[0].GetSubscribed().GetAgentId().GetValue()
	if ev := recvEvent(t, events); ev.GetType() != masterpb.Event_AGENT_ADDED || ev.GetAgentAdded().GetAgent().GetAgentInfo().GetId().GetValue() != agent {
		t.Fatalf("operator event %v", ev)
	}

	fst, err := m.Subscribe(context.Background(), Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: fwInfo("fw")}})
	if err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, events); ev.GetType() != masterpb.Event_FRAMEWORK_ADDED {
		t.Fatalf("operator event %v", ev)
	}
	// The reply comes after the snapshot reflecting the call is published.
	if s := m.Snapshot(); len(s.Frameworks) != 1 || !s.Frameworks[0].Connected {
		t.Fatalf("snapshot after Subscribe: %+v", s.Frameworks)
	}
	fevs, _ := next(t, fst.Ready(), fst.Drain)
	if got := eventTypes(fevs); len(got) < 2 || got[0] != "SUBSCRIBED" || got[1] != "HEARTBEAT" {
		t.Fatalf("framework got %v", got)
	}

	m.AllocatorOffer(fst.FrameworkID(), allocator.Offers{"*": {agent: resources.MustParse("cpus:2;mem:256")}})
	fevs, _ = next(t, fst.Ready(), fst.Drain)
	o := fevs[0].GetOffers().GetOffers()[0]
	call := acceptCall([]*mesos.Offer{o}, launch(cmdTask("t1", agent, "cpus:1;mem:32")))
	call.FrameworkId = frameworkID(fst.FrameworkID())
	if err := m.SchedulerCall(context.Background(), Principal{}, call, fst.ID()); err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, events); ev.GetType() != masterpb.Event_TASK_ADDED || ev.GetTaskAdded().GetTask().GetTaskId().GetValue() != "t1" {
		t.Fatalf("operator event %v", ev)
	}
	if s := m.Snapshot(); len(s.Frameworks[0].Tasks) != 1 || len(s.Agents[0].Used) == 0 {
		t.Fatalf("snapshot after ACCEPT: %+v", s.Frameworks[0])
	}
	if err := m.AgentCall(context.Background(), Principal{}, &protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), AgentId: agentID(agent),
		StatusUpdate: &protocol.AgentCall_StatusUpdate{FrameworkId: frameworkID(fst.FrameworkID()),
			Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t1")}, State: mesos.TaskState_TASK_RUNNING.Enum()}}}); err != nil {
		t.Fatal(err)
	}
	if ev := recvEvent(t, events); ev.GetType() != masterpb.Event_TASK_UPDATED || ev.GetTaskUpdated().GetState() != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("operator event %v", ev)
	}

	// The operator kills a task as its framework's KILL would: the agent
	// is told (mezzo's /master/kill-task; `mezzo kill`).
	for _, bad := range []struct{ fw, task string }{{"nope", "t1"}, {fst.FrameworkID(), "nope"}} {
		var ae *APIError
		if err := m.KillTask(context.Background(), Principal{}, bad.fw, bad.task); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
			t.Errorf("KillTask(%s, %s) = %v, want 404", bad.fw, bad.task, err)
		}
	}
	if err := m.KillTask(context.Background(), Principal{}, fst.FrameworkID(), "t1"); err != nil {
		t.Fatal(err)
	}
	killed := false
	for !killed {
		aevs, ended := next(t, ast.Ready(), ast.Drain)
		for _, ev := range aevs {
			killed = killed || (ev.GetType() == protocol.AgentEvent_KILL_TASK && ev.GetKillTask().GetTaskId().GetValue() == "t1")
		}
		if ended {
			t.Fatal("agent stream ended before KILL_TASK")
		}
	}

	if err := m.Teardown(context.Background(), Principal{}, "nope"); err == nil {
		t.Fatal("Teardown of unknown framework succeeded")
	}
	if err := m.Teardown(context.Background(), Principal{}, fst.FrameworkID()); err != nil {
		t.Fatal(err)
	}
	for {
		ev := recvEvent(t, events)
		if ev.GetType() == masterpb.Event_FRAMEWORK_REMOVED {
			break
		}
	}
	if _, ended := next(t, fst.Ready(), fst.Drain); !ended {
		for {
			if _, ended := next(t, fst.Ready(), fst.Drain); ended {
				break
			}
		}
	}
	cancel()
	for range events {
	}

	m.Stop()
	if _, ended := next(t, ast.Ready(), ast.Drain); !ended {
		for {
			if _, ended := next(t, ast.Ready(), ast.Drain); ended {
				break
			}
		}
	}
	if err := m.Teardown(context.Background(), Principal{}, "x"); err != ErrStopped {
		t.Fatalf("call after Stop: %v", err)
	}
}

// A subscriber that does not read is cut off instead of stalling the loop.
func TestWatchSlowSubscriberDisconnected(t *testing.T) {
	m, _ := startMaster(t, &recordingAllocator{})
	_, events, err := m.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < watcherBuffer; i++ {
		st, err := m.Subscribe(context.Background(), Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
			Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: fwInfo("fw")}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Teardown(context.Background(), Principal{}, st.FrameworkID()); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for range events {
		n++
	}
	if n != watcherBuffer {
		t.Fatalf("read %d events before the channel closed, want %d", n, watcherBuffer)
	}
}

// With the registered DRF allocator, offers flow without test help.
func TestMasterWithDefaultAllocator(t *testing.T) {
	m, clk := startMaster(t, nil)
	ast, err := m.SubscribeAgent(context.Background(), Principal{}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: agentSub("h", "cpus:2;mem:256")})
	if err != nil {
		t.Fatal(err)
	}
	next(t, ast.Ready(), ast.Drain)
	fst, err := m.Subscribe(context.Background(), Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: fwInfo("fw")}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		evs, _ := fst.Drain()
		for _, ev := range evs {
			if ev.GetType() == schedulerpb.Event_OFFERS {
				if r, _ := resources.FromProto(ev.GetOffers().GetOffers()[0].GetResources()); r.Scalar("cpus") != 2 {
					t.Fatalf("offer %v", ev)
				}
				return
			}
		}
		clk.Advance(time.Second)
		select {
		case <-fst.Ready():
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("no offer from the default allocator")
}
