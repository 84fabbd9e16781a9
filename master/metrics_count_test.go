package master

import (
	"context"
	"time"

	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
)

// The message, dropped-message, re-registration, per-reason and
// per-framework counters move when their events happen.
func TestMessageAndFrameworkCounters(t *testing.T) {
	h := newHarness(t)
	c := func(k string) float64 { return h.s.counters[k] }
	a := h.addAgent("agent1", "cpus:4;mem:1024")
	f := h.subscribe(fwInfo("fw"))
	fm := func(k string) float64 { return h.s.frameworks[f.id].metrics[k] }
	if c("master/messages_register_slave") != 1 || c("master/messages_register_framework") != 1 {
		t.Fatalf("registrations: slave %v framework %v", c("master/messages_register_slave"), c("master/messages_register_framework"))
	}
	if fm("events/subscribed") != 1 || fm("events/heartbeat") != 1 || fm("events") != 2 {
		t.Errorf("subscription events %v", h.s.frameworks[f.id].metrics)
	}

	o := h.offer(f, a, "*", "cpus:4;mem:1024")
	if fm("offers/sent") != 1 || fm("events/offers") != 1 {
		t.Errorf("offers sent %v, OFFERS events %v", fm("offers/sent"), fm("events/offers"))
	}
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t1", a.id, "cpus:1;mem:128"))))
	if c("master/messages_launch_tasks") != 1 || fm("calls/accept") != 1 || fm("calls") != 1 ||
		fm("offers/accepted") != 1 || fm("operations/launch") != 1 || fm("operations") != 1 {
		t.Errorf("accept: launch_tasks %v, calls %v, framework %v", c("master/messages_launch_tasks"), fm("calls"), h.s.frameworks[f.id].metrics)
	}

	a.update(f.id, "t1", mesos.TaskState_TASK_RUNNING, true)
	if c("master/messages_status_update") != 1 {
		t.Errorf("messages_status_update %v", c("master/messages_status_update"))
	}
	err := a.call(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(),
		StatusUpdate: &protocol.AgentCall_StatusUpdate{FrameworkId: frameworkID(f.id), Status: &mesos.TaskStatus{
			TaskId: &mesos.TaskID{Value: proto.String("t1")}, State: mesos.TaskState_TASK_FAILED.Enum(),
			Source: mesos.TaskStatus_SOURCE_AGENT.Enum(), Reason: mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY.Enum(),
			Uuid: []byte("0123456789abcdef")}}})
	if err != nil {
		t.Fatal(err)
	}
	if k := "master/task_failed/source_slave/reason_container_limitation_memory"; c(k) != 1 {
		t.Errorf("%s = %v; counters %v", k, c(k), h.s.counters)
	}
	if fm("tasks/terminal/task_failed") != 1 {
		t.Errorf("tasks/terminal/task_failed = %v", fm("tasks/terminal/task_failed"))
	}

	o = h.offer(f, a, "*", "cpus:1")
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(), Decline: &schedulerpb.Call_Decline{OfferIds: []*mesos.OfferID{o.GetId()}}})
	if c("master/messages_decline_offers") != 1 || fm("offers/declined") != 1 {
		t.Errorf("decline: %v %v", c("master/messages_decline_offers"), fm("offers/declined"))
	}
	o = h.offer(f, a, "*", "cpus:1")
	h.s.rescindOffer(h.s.offers[o.GetId().GetValue()], true)
	h.settle()
	if fm("offers/rescinded") != 1 || fm("events/rescind") != 1 {
		t.Errorf("rescind: offers/rescinded %v, events/rescind %v", fm("offers/rescinded"), fm("events/rescind"))
	}
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum()})
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_SUPPRESS.Enum()})
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_RECONCILE.Enum(), Reconcile: &schedulerpb.Call_Reconcile{}})
	for _, k := range []string{"master/messages_revive_offers", "master/messages_suppress_offers", "master/messages_reconcile_tasks"} {
		if c(k) != 1 {
			t.Errorf("%s = %v", k, c(k))
		}
	}

	// A call on a stale stream is dropped and counts toward no framework.
	calls := fm("calls")
	if err := h.s.schedulerCall(Principal{}, &schedulerpb.Call{FrameworkId: frameworkID(f.id), Type: schedulerpb.Call_REVIVE.Enum()}, "stale", h.now); err == nil {
		t.Fatal("call with a stale stream ID accepted")
	}
	if c("master/dropped_messages") != 1 || fm("calls") != calls {
		t.Errorf("stale stream: dropped %v, calls %v (was %v)", c("master/dropped_messages"), fm("calls"), calls)
	}
	// So is an agent call from an agent the master does not know.
	ghost := &fakeAgent{h: h, id: "nobody"}
	if err := ghost.call(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum()}); err == nil {
		t.Fatal("call from an unknown agent accepted")
	}
	if c("master/dropped_messages") != 2 {
		t.Errorf("unknown agent: dropped %v", c("master/dropped_messages"))
	}

	// The agent re-registers on a new connection.
	sub := agentSub("agent1", "cpus:4;mem:1024")
	sub.AgentInfo.Id = agentID(a.id)
	h.agentSubscribe(sub)
	if c("master/messages_reregister_slave") != 1 || c("master/slave_reregistrations") != 1 {
		t.Errorf("re-registration: messages %v, slave_reregistrations %v", c("master/messages_reregister_slave"), c("master/slave_reregistrations"))
	}

	// The snapshot carries the framework's counters.
	snap := h.s.snapshot(h.now)
	if len(snap.Frameworks) != 1 || snap.Frameworks[0].Metrics["calls/accept"] != 1 {
		t.Errorf("snapshot framework metrics %v", snap.Frameworks[0].Metrics)
	}
}

func TestReasonCounter(t *testing.T) {
	for _, tc := range []struct {
		st     mesos.TaskState
		src    mesos.TaskStatus_Source
		reason mesos.TaskStatus_Reason
		want   string
	}{
		{mesos.TaskState_TASK_FAILED, mesos.TaskStatus_SOURCE_EXECUTOR, mesos.TaskStatus_REASON_COMMAND_EXECUTOR_FAILED,
			"master/task_failed/source_executor/reason_command_executor_failed"},
		{mesos.TaskState_TASK_LOST, mesos.TaskStatus_SOURCE_MASTER, mesos.TaskStatus_REASON_AGENT_REMOVED,
			"master/task_lost/source_master/reason_slave_removed"},
		{mesos.TaskState_TASK_DROPPED, mesos.TaskStatus_SOURCE_AGENT, mesos.TaskStatus_REASON_AGENT_RESTARTED,
			"master/task_dropped/source_slave/reason_slave_restarted"},
	} {
		if got := ReasonCounter(tc.st, tc.src, tc.reason); got != tc.want {
			t.Errorf("ReasonCounter(%v, %v, %v) = %s, want %s", tc.st, tc.src, tc.reason, got, tc.want)
		}
	}
}

// The event-queue gauges count what waits for the loop: requests (calls)
// apart from other events. The loop is held busy by a call that blocks
// until the test has looked.
func TestEventQueueMetrics(t *testing.T) {
	m, _ := startMaster(t, &recordingAllocator{})
	release := make(chan struct{})
	entered := make(chan struct{})
	go m.call(context.Background(), func(*state, time.Time) error {
		close(entered)
		<-release
		return nil
	})
	<-entered
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- m.call(context.Background(), func(*state, time.Time) error { return nil }) }()
	}
	m.post(func(*state, time.Time) {})
	deadline := time.Now().Add(10 * time.Second)
	for {
		q := m.EventQueueMetrics()
		if q["master/event_queue_http_requests"] == 2 && q["master/event_queue_dispatches"] == 1 && q["master/event_queue_messages"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue gauges %v, want 2 requests and 1 dispatch", q)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if q := m.EventQueueMetrics(); q["master/event_queue_http_requests"] != 0 || q["master/event_queue_dispatches"] != 0 {
		t.Errorf("after draining: %v", q)
	}
}
