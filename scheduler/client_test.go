package scheduler_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/scheduler"
	"mezzo/scheduler/schedulertest"
)

const wait = 30 * time.Second

func framework() *mesos.FrameworkInfo {
	return &mesos.FrameworkInfo{
		User: proto.String("tester"),
		Name: proto.String("sdk-test"),
		Capabilities: []*mesos.FrameworkInfo_Capability{
			{Type: mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT.Enum()},
		},
	}
}

func newClient(clk clock.Clock, mt codec.MediaType, masters ...string) *scheduler.Client {
	return scheduler.New(scheduler.Config{
		Masters:    masters,
		Codec:      mt,
		Framework:  framework(),
		Clock:      clk,
		MinBackoff: time.Second,
		MaxBackoff: time.Second,
	})
}

// next returns the next event, failing the test if none comes in time.
func next(t *testing.T, ch <-chan *schedulerpb.Event) *schedulerpb.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event channel closed")
		}
		return ev
	case <-time.After(wait):
		t.Fatal("no event")
	}
	return nil
}

// expectClosed drains ch until it closes.
func expectClosed(t *testing.T, ch <-chan *schedulerpb.Event) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("event channel not closed")
		}
	}
}

func subscribe(t *testing.T, c *scheduler.Client) (<-chan *schedulerpb.Event, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if ev := next(t, ch); ev.GetType() != schedulerpb.Event_SUBSCRIBED {
		t.Fatalf("first event %v, want SUBSCRIBED", ev)
	}
	return ch, cancel
}

func TestSubscribeAndCalls(t *testing.T) {
	for _, mt := range []codec.MediaType{codec.Protobuf, codec.JSON} {
		t.Run(string(mt), func(t *testing.T) {
			m := schedulertest.NewMaster(t)
			c := newClient(clock.NewFake(time.Unix(0, 0)), mt, m.Addr())
			ch, _ := subscribe(t, c)
			if ev := next(t, ch); ev.GetType() != schedulerpb.Event_HEARTBEAT {
				t.Fatalf("second event %v, want HEARTBEAT", ev)
			}
			if got := c.FrameworkID().GetValue(); got != m.FrameworkID() || got == "" {
				t.Fatalf("FrameworkID = %q, master assigned %q", got, m.FrameworkID())
			}
			sub := m.Calls(schedulerpb.Call_SUBSCRIBE)[0]
			// (JSON writes explicit defaults, which then read back as set.)
			fi := sub.GetSubscribe().GetFrameworkInfo()
			if fi.GetUser() != "tester" || fi.GetName() != "sdk-test" || len(fi.GetCapabilities()) != 1 || fi.Id != nil || sub.FrameworkId != nil {
				t.Errorf("SUBSCRIBE = %v", sub)
			}

			ctx := context.Background()
			o1 := &mesos.OfferID{Value: proto.String("O1")}
			task := &mesos.TaskInfo{
				Name: proto.String("t"), TaskId: &mesos.TaskID{Value: proto.String("t1")},
				AgentId: &mesos.AgentID{Value: proto.String("S1")},
			}
			status := &mesos.TaskStatus{
				TaskId: task.TaskId, State: mesos.TaskState_TASK_RUNNING.Enum(),
				AgentId: task.AgentId, Uuid: []byte("0123456789abcdef"),
			}
			steps := []struct {
				do   func() error
				want *schedulerpb.Call
			}{
				{func() error { return c.Launch(ctx, []*mesos.OfferID{o1}, []*mesos.TaskInfo{task}, nil) },
					&schedulerpb.Call{Type: schedulerpb.Call_ACCEPT.Enum(), Accept: &schedulerpb.Call_Accept{
						OfferIds: []*mesos.OfferID{o1}, Operations: []*mesos.Offer_Operation{scheduler.LaunchOp(task)}}}},
				{func() error { return c.Decline(ctx, []*mesos.OfferID{o1}, scheduler.RefuseFor(3600)) },
					&schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(), Decline: &schedulerpb.Call_Decline{
						OfferIds: []*mesos.OfferID{o1}, Filters: &mesos.Filters{RefuseSeconds: proto.Float64(3600)}}}},
				{func() error { return c.Acknowledge(ctx, status) },
					&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
						AgentId: task.AgentId, TaskId: task.TaskId, Uuid: status.Uuid}}},
				{func() error { return c.Kill(ctx, task.TaskId, task.AgentId) },
					&schedulerpb.Call{Type: schedulerpb.Call_KILL.Enum(), Kill: &schedulerpb.Call_Kill{TaskId: task.TaskId, AgentId: task.AgentId}}},
				{func() error {
					return c.Reconcile(ctx, []*schedulerpb.Call_Reconcile_Task{{TaskId: task.TaskId}})
				},
					&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{
						Tasks: []*schedulerpb.Call_Reconcile_Task{{TaskId: task.TaskId}}}}},
				{func() error { return c.Revive(ctx) }, &schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum()}},
				{func() error { return c.Suppress(ctx, "web") },
					&schedulerpb.Call{Type: schedulerpb.Call_SUPPRESS.Enum(), Suppress: &schedulerpb.Call_Suppress{Roles: []string{"web"}}}},
			}
			for i, s := range steps {
				if err := s.do(); err != nil {
					t.Fatalf("step %d (%s): %v", i, s.want.GetType(), err)
				}
			}
			// An update without uuid needs no ack and sends nothing.
			if err := c.Acknowledge(ctx, &mesos.TaskStatus{TaskId: task.TaskId}); err != nil {
				t.Fatal(err)
			}
			rec := m.Received()[1:]
			if len(rec) != len(steps) {
				t.Fatalf("master received %d calls, want %d", len(rec), len(steps))
			}
			for i, r := range rec {
				want := proto.CloneOf(steps[i].want)
				want.FrameworkId = c.FrameworkID()
				if !proto.Equal(r.Call, want) {
					t.Errorf("call %d:\n got %v\nwant %v", i, r.Call, want)
				}
				if r.StreamID != c.StreamID() || r.StreamID == "" {
					t.Errorf("call %d: stream id %q, want %q", i, r.StreamID, c.StreamID())
				}
				if r.ContentType != string(mt) || r.Status != http.StatusAccepted {
					t.Errorf("call %d: content type %q status %d", i, r.ContentType, r.Status)
				}
			}
		})
	}
}

func TestCallErrorCarriesStatusAndBody(t *testing.T) {
	m := schedulertest.NewMaster(t)
	m.Respond(func(call *schedulerpb.Call) (int, string) {
		if call.GetType() == schedulerpb.Call_DECLINE {
			return http.StatusConflict, "offer O9 is no longer valid"
		}
		return 0, ""
	})
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.Protobuf, m.Addr())
	if err := c.Revive(context.Background()); !errors.Is(err, scheduler.ErrNotSubscribed) {
		t.Fatalf("call before subscribing: %v, want ErrNotSubscribed", err)
	}
	subscribe(t, c)
	err := c.Decline(context.Background(), nil, nil)
	var e *scheduler.Error
	if !errors.As(err, &e) || e.Status != http.StatusConflict || e.Body != "offer O9 is no longer valid" || e.Call != "DECLINE" {
		t.Fatalf("Decline error = %#v", err)
	}
	if !strings.Contains(err.Error(), "409") {
		t.Errorf("error text %q lacks the status", err)
	}
}

func TestRedirectToLeader(t *testing.T) {
	leader := schedulertest.NewMaster(t)
	follower := schedulertest.NewMaster(t)
	follower.RedirectTo(leader.Addr())
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.JSON, follower.Addr())
	subscribe(t, c)
	if c.Leader() != "http://"+leader.Addr() {
		t.Errorf("Leader() = %q, want %q", c.Leader(), leader.Addr())
	}
	if err := c.Revive(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(leader.Calls(schedulerpb.Call_REVIVE)); n != 1 {
		t.Errorf("leader got %d REVIVE calls, want 1", n)
	}
	if n := len(follower.Calls()); n != 0 {
		t.Errorf("follower decoded %d calls, want 0 (it only redirects)", n)
	}
}

func TestTriesNextMasterOnFailure(t *testing.T) {
	// A port nobody listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	busy := schedulertest.NewMaster(t)
	busy.SetUnavailable(true)
	good := schedulertest.NewMaster(t)
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.Protobuf, dead, busy.Addr(), good.Addr())
	subscribe(t, c)
	if c.Leader() != "http://"+good.Addr() {
		t.Errorf("Leader() = %q, want %q", c.Leader(), good.Addr())
	}
}

func TestSubscribeRefused(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		http.Error(w, "Failed to validate scheduler::Call: 'framework_info.user' is invalid", http.StatusBadRequest)
	}))
	defer srv.Close()
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.Protobuf, srv.URL)
	_, err := c.Subscribe(context.Background())
	var e *scheduler.Error
	if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Body, "framework_info.user") {
		t.Fatalf("Subscribe error = %v", err)
	}
	if hits != 1 {
		t.Errorf("a refused subscription was retried: %d requests", hits)
	}
}

func TestNoMasterReachable(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	c := scheduler.New(scheduler.Config{Masters: []string{dead}, Framework: framework(), InitialRounds: 1})
	if _, err := c.Subscribe(context.Background()); !errors.Is(err, scheduler.ErrNoMaster) {
		t.Fatalf("Subscribe error = %v, want ErrNoMaster", err)
	}
	if _, err := scheduler.New(scheduler.Config{Framework: framework()}).Subscribe(context.Background()); err == nil {
		t.Error("no masters: want a config error")
	}
}

// advanceUntil advances the fake clock by step once a timer is pending,
// until cond holds.
func advanceUntil(t *testing.T, clk *clock.Fake, step time.Duration, cond func() bool) {
	t.Helper()
	ok := schedulertest.Eventually(wait, func() bool {
		if cond() {
			return true
		}
		if clk.Pending() > 0 {
			clk.Advance(step)
		}
		return false
	})
	if !ok {
		t.Fatal("condition not reached")
	}
}

func TestResubscribeAfterDisconnect(t *testing.T) {
	m := schedulertest.NewMaster(t)
	clk := clock.NewFake(time.Unix(0, 0))
	c := newClient(clk, codec.Protobuf, m.Addr())
	ch, _ := subscribe(t, c)
	next(t, ch) // HEARTBEAT
	firstStream, fwID := c.StreamID(), c.FrameworkID()

	m.Disconnect()
	// The client waits out its backoff on the fake clock, then
	// re-subscribes; the new stream starts with SUBSCRIBED again.
	advanceUntil(t, clk, time.Second, func() bool { return m.Subscriptions() >= 2 })
	if ev := next(t, ch); ev.GetType() != schedulerpb.Event_SUBSCRIBED {
		t.Fatalf("after reconnect got %v, want SUBSCRIBED", ev)
	}
	re := m.Calls(schedulerpb.Call_SUBSCRIBE)[1]
	if !proto.Equal(re.GetFrameworkId(), fwID) || !proto.Equal(re.GetSubscribe().GetFrameworkInfo().GetId(), fwID) {
		t.Errorf("re-SUBSCRIBE without the framework id in both places: %v", re)
	}
	if c.StreamID() == firstStream {
		t.Error("stream id not replaced after re-subscription")
	}
	if err := c.Revive(context.Background()); err != nil {
		t.Fatalf("call on the new stream: %v", err)
	}
}

func TestDeadStreamDetected(t *testing.T) {
	m := schedulertest.NewMaster(t)
	m.HeartbeatInterval = time.Second
	clk := clock.NewFake(time.Unix(0, 0))
	c := newClient(clk, codec.JSON, m.Addr())
	ch, _ := subscribe(t, c)
	next(t, ch) // HEARTBEAT

	// 4.9 intervals of silence are fine.
	schedulertest.Eventually(wait, func() bool { return clk.Pending() > 0 })
	clk.Advance(4900 * time.Millisecond)
	if m.Heartbeat(); next(t, ch).GetType() != schedulerpb.Event_HEARTBEAT {
		t.Fatal("heartbeat not delivered")
	}
	if m.Subscriptions() != 1 {
		t.Fatal("re-subscribed although heartbeats arrived")
	}
	// The heartbeat re-armed the deadline; 5 silent intervals kill it.
	clk.Advance(4900 * time.Millisecond)
	if m.Subscriptions() != 1 {
		t.Fatal("deadline not re-armed by the heartbeat")
	}
	advanceUntil(t, clk, time.Second, func() bool { return m.Subscriptions() >= 2 })
	if ev := next(t, ch); ev.GetType() != schedulerpb.Event_SUBSCRIBED {
		t.Fatalf("after dead stream got %v, want SUBSCRIBED", ev)
	}
}

func TestErrorEventEndsSubscription(t *testing.T) {
	m := schedulertest.NewMaster(t)
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.Protobuf, m.Addr())
	ch, _ := subscribe(t, c)
	next(t, ch)
	m.Send(&schedulerpb.Event{Type: schedulerpb.Event_ERROR.Enum(), Error: &schedulerpb.Event_Error{Message: proto.String("Framework failed over")}})
	if ev := next(t, ch); ev.GetType() != schedulerpb.Event_ERROR {
		t.Fatalf("got %v, want ERROR", ev)
	}
	expectClosed(t, ch)
	var fe *scheduler.FrameworkError
	if !errors.As(c.Err(), &fe) || fe.Message != "Framework failed over" {
		t.Errorf("Err() = %v", c.Err())
	}
	if m.Subscriptions() != 1 {
		t.Error("re-subscribed after ERROR")
	}
}

func TestTeardownEndsSubscription(t *testing.T) {
	m := schedulertest.NewMaster(t)
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.Protobuf, m.Addr())
	ch, _ := subscribe(t, c)
	if err := c.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, ch)
	if !errors.Is(c.Err(), scheduler.ErrTornDown) {
		t.Errorf("Err() = %v, want ErrTornDown", c.Err())
	}
}

func TestCancelClosesChannel(t *testing.T) {
	m := schedulertest.NewMaster(t)
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.Protobuf, m.Addr())
	ch, cancel := subscribe(t, c)
	cancel()
	expectClosed(t, ch)
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err() = %v", c.Err())
	}
}

// A Location without a path ("//host:port", as a master's /redirect
// answers) means the scheduler endpoint on that master.
func TestRedirectWithoutPath(t *testing.T) {
	leader := schedulertest.NewMaster(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "//"+leader.Addr())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.Protobuf, srv.URL)
	subscribe(t, c)
	if c.Leader() != "http://"+leader.Addr() || leader.Subscriptions() != 1 {
		t.Errorf("Leader() = %q, subscriptions at leader %d", c.Leader(), leader.Subscriptions())
	}
}

func TestTooManyRedirects(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "//"+strings.TrimPrefix(srv.URL, "http://")+r.URL.Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := scheduler.New(scheduler.Config{Masters: []string{srv.URL}, Framework: framework(), InitialRounds: 1})
	if _, err := c.Subscribe(context.Background()); err == nil || !strings.Contains(err.Error(), "too many redirects") {
		t.Errorf("Subscribe error = %v", err)
	}
}
