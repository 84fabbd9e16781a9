package agent

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/recordio"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

// fakeExecutor speaks the v1 executor API over real HTTP from the test.
type fakeExecutor struct {
	t        *testing.T
	url      string
	fw, exec string
	events   chan *executorpb.Event
	resp     *http.Response
}

func (f *fakeExecutor) call(c *executorpb.Call) (int, string) {
	f.t.Helper()
	c.FrameworkId = &mesos.FrameworkID{Value: proto.String(f.fw)}
	c.ExecutorId = &mesos.ExecutorID{Value: proto.String(f.exec)}
	b, _ := proto.Marshal(c)
	resp, err := http.Post(f.url, "application/x-protobuf", bytes.NewReader(b))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// subscribe opens the event stream; events arrive on f.events.
func (f *fakeExecutor) subscribe(sub *executorpb.Call_Subscribe) {
	f.t.Helper()
	c := &executorpb.Call{
		Type:        executorpb.Call_SUBSCRIBE.Enum(),
		FrameworkId: &mesos.FrameworkID{Value: proto.String(f.fw)},
		ExecutorId:  &mesos.ExecutorID{Value: proto.String(f.exec)},
		Subscribe:   sub,
	}
	b, _ := proto.Marshal(c)
	req, _ := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Accept", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-protobuf" || resp.ContentLength != -1 {
		body, _ := io.ReadAll(resp.Body)
		f.t.Fatalf("subscribe: %s %q content-length %d: %s", resp.Status, resp.Header.Get("Content-Type"), resp.ContentLength, body)
	}
	f.resp = resp
	events := make(chan *executorpb.Event, 64)
	f.events = events
	go func() {
		defer close(events)
		r := recordio.NewReader(resp.Body, 0)
		for {
			rec, err := r.Next()
			if err != nil {
				return
			}
			ev := &executorpb.Event{}
			if proto.Unmarshal(rec, ev) != nil {
				return
			}
			events <- ev
		}
	}()
	f.t.Cleanup(func() { resp.Body.Close() })
}

func (f *fakeExecutor) next(want executorpb.Event_Type) *executorpb.Event {
	f.t.Helper()
	select {
	case ev, ok := <-f.events:
		if !ok {
			f.t.Fatalf("stream ended waiting for %s", want)
		}
		if ev.GetType() != want {
			f.t.Fatalf("event %s, want %s: %v", ev.GetType(), want, ev)
		}
		return ev
	case <-time.After(20 * time.Second):
		f.t.Fatalf("no %s event", want)
		return nil
	}
}

func update(task string, state mesos.TaskState) *executorpb.Call {
	id := uuid.New()
	return &executorpb.Call{
		Type: executorpb.Call_UPDATE.Enum(),
		Update: &executorpb.Call_Update{Status: &mesos.TaskStatus{
			TaskId: &mesos.TaskID{Value: proto.String(task)},
			State:  state.Enum(),
			Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum(),
			Uuid:   id[:],
		}},
	}
}

func TestExecutorAPI(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	fw := frameworkInfo("F1")
	sub.send(runTask(fw, customTask("t1", "e1", "exec sleep 600"), 1))
	ta.sync(t, m, sub, 1)
	eventually(t, "container launched", func() bool { return len(ta.cz.Containers()) == 1 })

	url := ta.srv.URL + "/api/v1/executor"
	ex := &fakeExecutor{t: t, url: url, fw: "F1", exec: "e1"}

	// Header and method checks.
	for _, tc := range []struct {
		method, ctype, body string
		code                int
		msg                 string
	}{
		{"GET", "", "", 405, "Expecting one of { 'POST' }"},
		{"POST", "", "x", 400, "Expecting 'Content-Type' to be present"},
		{"POST", "text/plain", "x", 415, ""},
		{"POST", "application/x-protobuf", "\xff\xff", 400, "Failed to parse body"},
		{"POST", "application/json", `{"type":"HEARTBEAT"}`, 400, ""},
	} {
		req, _ := http.NewRequest(tc.method, url, strings.NewReader(tc.body))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.msg) {
			t.Errorf("%s %s %q: %d %s; want %d %q", tc.method, tc.ctype, tc.body, resp.StatusCode, b, tc.code, tc.msg)
		}
	}
	// Unknown framework or executor; calls before subscribing.
	if code, msg := (&fakeExecutor{t: t, url: url, fw: "nope", exec: "e1"}).call(&executorpb.Call{Type: executorpb.Call_HEARTBEAT.Enum()}); code != 400 || msg != "Framework cannot be found" {
		t.Errorf("unknown framework: %d %s", code, msg)
	}
	if code, msg := (&fakeExecutor{t: t, url: url, fw: "F1", exec: "nope"}).call(&executorpb.Call{Type: executorpb.Call_HEARTBEAT.Enum()}); code != 400 || msg != "Executor cannot be found" {
		t.Errorf("unknown executor: %d %s", code, msg)
	}
	if code, msg := ex.call(update("t1", mesos.TaskState_TASK_RUNNING)); code != 403 || msg != "Executor is not subscribed" {
		t.Errorf("update before subscribe: %d %s", code, msg)
	}

	ex.subscribe(&executorpb.Call_Subscribe{})
	s := ex.next(executorpb.Event_SUBSCRIBED).GetSubscribed()
	if s.GetExecutorInfo().GetExecutorId().GetValue() != "e1" || s.GetFrameworkInfo().GetId().GetValue() != "F1" ||
		s.GetAgentInfo().GetId().GetValue() != "S1" || s.GetContainerId().GetValue() != ta.cz.Containers()[0] {
		t.Errorf("subscribed %v", s)
	}
	if l := ex.next(executorpb.Event_LAUNCH).GetLaunch().GetTask(); l.GetTaskId().GetValue() != "t1" {
		t.Errorf("launch %v", l)
	}

	// UPDATE: ACKNOWLEDGED on the stream, 202, forwarded to the master.
	up := update("t1", mesos.TaskState_TASK_RUNNING)
	if code, msg := ex.call(up); code != 202 {
		t.Fatalf("update: %d %s", code, msg)
	}
	acked := ex.next(executorpb.Event_ACKNOWLEDGED).GetAcknowledged()
	if acked.GetTaskId().GetValue() != "t1" || !bytes.Equal(acked.GetUuid(), up.GetUpdate().GetStatus().GetUuid()) {
		t.Errorf("acknowledged %v", acked)
	}
	running := m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	if running.GetStatusUpdate().GetExecutorId().GetValue() != "e1" {
		t.Errorf("forwarded %v", running)
	}

	// Invalid updates.
	bad := update("t1", mesos.TaskState_TASK_RUNNING)
	bad.Update.Status.Source = mesos.TaskStatus_SOURCE_AGENT.Enum()
	staging := update("t1", mesos.TaskState_TASK_STAGING)
	noUUID := update("t1", mesos.TaskState_TASK_RUNNING)
	noUUID.Update.Status.Uuid = nil
	otherExec := update("t1", mesos.TaskState_TASK_RUNNING)
	otherExec.Update.Status.ExecutorId = &mesos.ExecutorID{Value: proto.String("e2")}
	for name, c := range map[string]*executorpb.Call{
		"source": bad, "staging": staging, "uuid": noUUID, "executor": otherExec,
		"no update": {Type: executorpb.Call_UPDATE.Enum()},
	} {
		if code, msg := ex.call(c); code != 400 || !strings.HasPrefix(msg, "Failed to validate Executor::Call") {
			t.Errorf("%s: %d %s", name, code, msg)
		}
	}

	// MESSAGE and HEARTBEAT.
	if code, _ := ex.call(&executorpb.Call{Type: executorpb.Call_MESSAGE.Enum(), Message: &executorpb.Call_Message{Data: []byte("hi")}}); code != 202 {
		t.Errorf("message: %d", code)
	}
	msg := m.waitCall(t, "FRAMEWORK_MESSAGE", ofType(protocol.AgentCall_FRAMEWORK_MESSAGE))
	if fm := msg.GetFrameworkMessage(); string(fm.GetData()) != "hi" || fm.GetExecutorId().GetValue() != "e1" {
		t.Errorf("framework message %v", fm)
	}
	if code, _ := ex.call(&executorpb.Call{Type: executorpb.Call_HEARTBEAT.Enum()}); code != 202 {
		t.Errorf("heartbeat: %d", code)
	}

	// Master to executor: FRAMEWORK_MESSAGE and KILL.
	sub.send(&protocol.AgentEvent{Type: protocol.AgentEvent_FRAMEWORK_MESSAGE.Enum(), Epoch: proto.Uint64(1),
		FrameworkMessage: &protocol.AgentEvent_FrameworkMessage{FrameworkId: fw.GetId(),
			ExecutorId: &mesos.ExecutorID{Value: proto.String("e1")}, Data: []byte("yo")}})
	if d := ex.next(executorpb.Event_MESSAGE).GetMessage().GetData(); string(d) != "yo" {
		t.Errorf("message data %q", d)
	}
	if v := ta.metric(t, "slave/valid_framework_messages"); v != 1 {
		t.Errorf("slave/valid_framework_messages = %v, want 1", v)
	}
	// A message for an executor the agent does not run is dropped and counted.
	sub.send(&protocol.AgentEvent{Type: protocol.AgentEvent_FRAMEWORK_MESSAGE.Enum(), Epoch: proto.Uint64(1),
		FrameworkMessage: &protocol.AgentEvent_FrameworkMessage{FrameworkId: fw.GetId(),
			ExecutorId: &mesos.ExecutorID{Value: proto.String("nobody")}, Data: []byte("lost")}})
	eventually(t, "invalid framework message counted", func() bool { return ta.metric(t, "slave/invalid_framework_messages") == 1 })
	sub.send(killTask("F1", "t1", 1))
	if k := ex.next(executorpb.Event_KILL).GetKill(); k.GetTaskId().GetValue() != "t1" {
		t.Errorf("kill %v", k)
	}

	// Re-subscription: the old stream ends; an unacknowledged update the
	// executor replays is taken (once) and acknowledged.
	old := ex.events
	replay := update("t1", mesos.TaskState_TASK_KILLING)
	ex2 := &fakeExecutor{t: t, url: url, fw: "F1", exec: "e1"}
	ex2.subscribe(&executorpb.Call_Subscribe{
		UnacknowledgedUpdates: []*executorpb.Call_Update{replay.GetUpdate(), up.GetUpdate()},
		UnacknowledgedTasks:   []*mesos.TaskInfo{customTask("t1", "e1", "x")},
	})
	ex2.next(executorpb.Event_SUBSCRIBED)
	ex2.next(executorpb.Event_ACKNOWLEDGED)
	ex2.next(executorpb.Event_ACKNOWLEDGED)
	eventually(t, "old stream closed", func() bool {
		select {
		case _, ok := <-old:
			return !ok
		default:
			return false
		}
	})

	// SHUTDOWN_EXECUTOR: SHUTDOWN event, then the container is killed after
	// the grace period; the pending kill makes the task KILLED.
	sub.send(&protocol.AgentEvent{Type: protocol.AgentEvent_SHUTDOWN_EXECUTOR.Enum(), Epoch: proto.Uint64(1),
		ShutdownExecutor: &protocol.AgentEvent_ShutdownExecutor{FrameworkId: fw.GetId(), ExecutorId: &mesos.ExecutorID{Value: proto.String("e1")}}})
	ex2.next(executorpb.Event_SHUTDOWN)
	eventually(t, "grace timer", func() bool { return ta.clock.Pending() > 0 })
	ta.clock.Advance(DefaultExecutorShutdownGracePeriod)
	m.waitCall(t, "EXECUTOR_EXITED", ofType(protocol.AgentCall_EXECUTOR_EXITED))
	// Acknowledge what is pending so the agent's terminal update is sent.
	sub.send(ack("F1", running, 1))
	killing := m.waitCall(t, "TASK_KILLING", updateFor("t1", mesos.TaskState_TASK_KILLING))
	sub.send(ack("F1", killing, 1))
	killed := m.waitCall(t, "TASK_KILLED", updateFor("t1", mesos.TaskState_TASK_KILLED))
	if st := killed.GetStatusUpdate().GetStatus(); st.GetSource() != mesos.TaskStatus_SOURCE_AGENT {
		t.Errorf("killed %v", st)
	}
	if n := len(ta.cz.Containers()); n != 0 {
		t.Errorf("%d containers left", n)
	}
}
