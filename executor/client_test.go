package executor

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/executorpb"
	mesos "mezzo/api/mesos"
	"mezzo/executor/internal/fakeagent"
	"mezzo/internal/clock"
)

const wait = 10 * time.Second

// recorder is a Handler that reports events on a channel and can be told
// what to do on launch and shutdown.
type recorder struct {
	events     chan string
	onLaunch   func(c *Client, t *mesos.TaskInfo)
	onShutdown func(c *Client)
	onAck      func(c *Client)
}

func newRecorder() *recorder { return &recorder{events: make(chan string, 256)} }

func (r *recorder) Subscribed(c *Client, ev *executorpb.Event_Subscribed) { r.events <- "subscribed" }
func (r *recorder) Launch(c *Client, t *mesos.TaskInfo) {
	r.events <- "launch " + t.GetTaskId().GetValue()
	if r.onLaunch != nil {
		r.onLaunch(c, t)
	}
}
func (r *recorder) LaunchGroup(c *Client, g *mesos.TaskGroupInfo) { r.events <- "launch_group" }
func (r *recorder) Kill(c *Client, id *mesos.TaskID, p *mesos.KillPolicy) {
	r.events <- "kill " + id.GetValue()
}
func (r *recorder) Acknowledged(c *Client, id *mesos.TaskID, uuid []byte) {
	r.events <- "ack " + id.GetValue()
	if r.onAck != nil {
		r.onAck(c)
	}
}
func (r *recorder) Message(c *Client, data []byte) { r.events <- "message " + string(data) }
func (r *recorder) Shutdown(c *Client) {
	r.events <- "shutdown"
	if r.onShutdown != nil {
		r.onShutdown(c)
	}
}
func (r *recorder) Error(c *Client, msg string) { r.events <- "error " + msg }

// expect waits for an event with the given prefix, skipping others.
func (r *recorder) expect(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev := <-r.events:
			if strings.HasPrefix(ev, prefix) {
				return ev
			}
		case <-deadline:
			t.Fatalf("timed out waiting for event %q", prefix)
		}
	}
}

func testConfig(a *fakeagent.Agent, checkpoint bool) Config {
	cfg, err := ConfigFromEnv(a.Env("ex-1", "/tmp"))
	if err != nil {
		panic(err)
	}
	cfg.Checkpoint = checkpoint
	cfg.SubscriptionBackoffMax = 20 * time.Millisecond
	// Generous: a re-subscription after a broken connection must not race
	// it on a loaded machine (TestClientRecoveryTimeout sets its own).
	cfg.RecoveryTimeout = 30 * time.Second
	cfg.ShutdownGracePeriod = 5 * time.Second
	return cfg
}

type runResult struct{ err chan error }

func runClient(t *testing.T, c *Client, h Handler) runResult {
	ctx, cancel := context.WithCancel(context.Background())
	res := runResult{err: make(chan error, 1)}
	go func() { res.err <- c.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		<-res.err
	})
	return res
}

func (r runResult) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.err:
		r.err <- err
		return err
	case <-time.After(wait):
		t.Fatal("Run did not return")
	}
	return nil
}

func running(id string) *mesos.TaskStatus {
	return &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(id)}, State: mesos.TaskState_TASK_RUNNING.Enum()}
}

func TestClientUpdateAndAcknowledge(t *testing.T) {
	for _, mt := range []codec.MediaType{codec.Protobuf, codec.JSON} {
		t.Run(string(mt), func(t *testing.T) {
			a := fakeagent.New(t)
			h := newRecorder()
			var uuid []byte
			h.onLaunch = func(c *Client, task *mesos.TaskInfo) {
				var err error
				if uuid, err = c.Update(running(task.GetTaskId().GetValue())); err != nil {
					t.Error(err)
				}
				if err := c.Message([]byte("hello")); err != nil {
					t.Error(err)
				}
			}
			h.onAck = func(c *Client) {
				if n := c.Unacknowledged(); n != 0 {
					t.Errorf("%d updates still unacknowledged after ack", n)
				}
				c.Stop()
			}
			c := NewClient(testConfig(a, false), Options{Codec: mt})
			res := runClient(t, c, h)
			h.expect(t, "subscribed")
			a.Launch(fakeagent.Task("t1", "true"))
			h.expect(t, "launch t1")
			h.expect(t, "ack t1")
			if err := res.wait(t); err != nil {
				t.Fatalf("Run = %v", err)
			}
			ups := a.Updates()
			if len(ups) != 1 {
				t.Fatalf("updates %v", ups)
			}
			st := ups[0]
			if string(st.GetUuid()) != string(uuid) || len(uuid) != 16 ||
				st.GetSource() != mesos.TaskStatus_SOURCE_EXECUTOR ||
				st.GetExecutorId().GetValue() != "ex-1" || st.GetTimestamp() <= 0 {
				t.Errorf("update not stamped: %v", st)
			}
			var sawMessage bool
			for _, call := range a.Calls() {
				if call.GetFrameworkId().GetValue() != "fw-1" || call.GetExecutorId().GetValue() != "ex-1" {
					t.Errorf("call %v lacks ids", call.GetType())
				}
				sawMessage = sawMessage || (call.GetType() == executorpb.Call_MESSAGE && string(call.GetMessage().GetData()) == "hello")
			}
			if !sawMessage {
				t.Error("MESSAGE call not received")
			}
		})
	}
}

func TestClientUpdateValidation(t *testing.T) {
	c := NewClient(Config{ExecutorID: "e"}, Options{})
	if _, err := c.Update(&mesos.TaskStatus{State: mesos.TaskState_TASK_RUNNING.Enum()}); err == nil || !strings.Contains(err.Error(), "task_id") {
		t.Errorf("missing task_id: %v", err)
	}
	if _, err := c.Update(&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("x")}}); err == nil || !strings.Contains(err.Error(), "state") {
		t.Errorf("missing state: %v", err)
	}
	if err := c.Message([]byte("x")); !errors.Is(err, ErrNotSubscribed) {
		t.Errorf("Message while unsubscribed: %v", err)
	}
}

// With checkpointing, a broken stream leads to a new SUBSCRIBE that carries
// the unacknowledged update and task, and the events keep flowing.
func TestClientResubscribesWithUnacknowledged(t *testing.T) {
	a := fakeagent.New(t)
	a.NoAutoAck = true
	h := newRecorder()
	h.onLaunch = func(c *Client, task *mesos.TaskInfo) {
		if _, err := c.Update(running(task.GetTaskId().GetValue())); err != nil {
			t.Error(err)
		}
	}
	c := NewClient(testConfig(a, true), Options{})
	runClient(t, c, h)
	h.expect(t, "subscribed")
	a.Launch(fakeagent.Task("t1", "true"))
	a.WaitFor(t, wait, "the update", func() bool { return len(a.Updates()) == 1 })
	first := a.Updates()[0]

	a.Break()
	a.WaitSubscribed(t, 2, wait)
	h.expect(t, "subscribed")
	sub := a.Subscribes()[1].GetSubscribe()
	if len(sub.GetUnacknowledgedUpdates()) != 1 ||
		string(sub.GetUnacknowledgedUpdates()[0].GetStatus().GetUuid()) != string(first.GetUuid()) {
		t.Errorf("re-SUBSCRIBE updates = %v, want the RUNNING update", sub.GetUnacknowledgedUpdates())
	}
	if len(sub.GetUnacknowledgedTasks()) != 1 || sub.GetUnacknowledgedTasks()[0].GetTaskId().GetValue() != "t1" {
		t.Errorf("re-SUBSCRIBE tasks = %v, want t1", sub.GetUnacknowledgedTasks())
	}
	// The first SUBSCRIBE carried nothing.
	if s := a.Subscribes()[0].GetSubscribe(); len(s.GetUnacknowledgedUpdates())+len(s.GetUnacknowledgedTasks()) != 0 {
		t.Errorf("first SUBSCRIBE carried %v", s)
	}

	// After the ack, a further re-subscription carries nothing.
	a.Send(&executorpb.Event{Type: executorpb.Event_ACKNOWLEDGED.Enum(),
		Acknowledged: &executorpb.Event_Acknowledged{TaskId: first.GetTaskId(), Uuid: first.GetUuid()}})
	h.expect(t, "ack t1")
	a.Break()
	a.WaitSubscribed(t, 3, wait)
	if s := a.Subscribes()[2].GetSubscribe(); len(s.GetUnacknowledgedUpdates())+len(s.GetUnacknowledgedTasks()) != 0 {
		t.Errorf("SUBSCRIBE after ack carried %v", s)
	}
}

// Without checkpointing a broken connection means the agent is gone: the
// library injects SHUTDOWN.
func TestClientShutdownOnDisconnectWithoutCheckpoint(t *testing.T) {
	a := fakeagent.New(t)
	h := newRecorder()
	h.onShutdown = func(c *Client) {
		if !c.AgentGone() {
			t.Error("AgentGone false after injected shutdown")
		}
		c.Stop()
	}
	c := NewClient(testConfig(a, false), Options{})
	res := runClient(t, c, h)
	h.expect(t, "subscribed")
	a.Break()
	h.expect(t, "shutdown")
	if err := res.wait(t); err != nil {
		t.Errorf("Run = %v", err)
	}
	if n := len(a.Subscribes()); n != 1 {
		t.Errorf("%d SUBSCRIBEs; a non-checkpointing executor must not re-subscribe", n)
	}
}

// With checkpointing, an agent that stays away past the recovery timeout
// leads to SHUTDOWN; a handler that never stops is cut off after the
// shutdown grace period.
func TestClientRecoveryTimeout(t *testing.T) {
	a := fakeagent.New(t)
	h := newRecorder()
	cfg := testConfig(a, true)
	cfg.RecoveryTimeout = 300 * time.Millisecond
	cfg.ShutdownGracePeriod = 50 * time.Millisecond
	c := NewClient(cfg, Options{})
	res := runClient(t, c, h)
	h.expect(t, "subscribed")
	a.Down()
	h.expect(t, "shutdown")
	if err := res.wait(t); !errors.Is(err, ErrShutdownTimeout) {
		t.Errorf("Run = %v, want ErrShutdownTimeout", err)
	}
}

// An agent that answers 503 (recovering) is retried every second.
func TestClientRetriesRejectedSubscribe(t *testing.T) {
	a := fakeagent.New(t)
	a.RejectSubscribe(http.StatusServiceUnavailable)
	fake := clock.NewFake(time.Unix(1000, 0))
	h := newRecorder()
	c := NewClient(testConfig(a, false), Options{Clock: fake})
	runClient(t, c, h)
	a.WaitFor(t, wait, "a rejected SUBSCRIBE and the retry timer", func() bool {
		// The heartbeat ticker is always pending; the retry timer makes two.
		return len(a.Subscribes()) == 1 && fake.Pending() >= 2
	})
	a.RejectSubscribe(0)
	fake.Advance(SubscribeRetryInterval)
	h.expect(t, "subscribed")
}

func TestClientEvents(t *testing.T) {
	a := fakeagent.New(t)
	h := newRecorder()
	c := NewClient(testConfig(a, false), Options{})
	runClient(t, c, h)
	h.expect(t, "subscribed")
	a.Send(&executorpb.Event{Type: executorpb.Event_HEARTBEAT.Enum()})
	a.Send(&executorpb.Event{Type: executorpb.Event_MESSAGE.Enum(), Message: &executorpb.Event_Message{Data: []byte("hi")}})
	a.Kill("t9", -1)
	a.LaunchGroup(fakeagent.Task("g1", "true"))
	a.Send(&executorpb.Event{Type: executorpb.Event_ERROR.Enum(), Error: &executorpb.Event_Error{Message: proto.String("boom")}})
	for _, want := range []string{"message hi", "kill t9", "launch_group", "error boom"} {
		select {
		case got := <-h.events:
			if got != want {
				t.Errorf("event %q, want %q (HEARTBEAT must not be delivered)", got, want)
			}
		case <-time.After(wait):
			t.Fatalf("timed out waiting for %q", want)
		}
	}
}
