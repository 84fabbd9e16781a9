package sim

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/clock"
)

// testAgent is a lone agent on a fake clock registered with a fake master.
type testAgent struct {
	*Agent
	fm *fakeMaster
	fc *clock.Fake
}

func newTestAgent(t *testing.T, fm *fakeMaster, mutate func(*AgentConfig)) *testAgent {
	t.Helper()
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	cfg := AgentConfig{
		Masters:             []string{fm.addr},
		Clock:               fc,
		TaskDuration:        10 * time.Second,
		StatusRetry:         time.Second,
		RegistrationBackoff: 100 * time.Millisecond,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := NewAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	a.Start()
	ta := &testAgent{Agent: a, fm: fm, fc: fc}
	ta.await("registration", func() bool { return a.Registered() })
	return ta
}

// await waits for cond, advancing the fake clock in small steps so that
// timers armed concurrently with the check still fire.
func (ta *testAgent) await(what string, cond func() bool) {
	ta.fm.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			ta.fm.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// awaitCall waits for a call matching pred at index >= from, advancing
// the clock by step per poll (0: real time only).
func (ta *testAgent) awaitCall(what string, from int, step time.Duration, pred func(*protocol.AgentCall) bool) (*protocol.AgentCall, int) {
	ta.fm.t.Helper()
	var found *protocol.AgentCall
	idx := -1
	ta.await(what, func() bool {
		ta.fm.mu.Lock()
		for i := from; i < len(ta.fm.calls); i++ {
			if pred(ta.fm.calls[i]) {
				found, idx = ta.fm.calls[i], i
			}
			if found != nil {
				break
			}
		}
		ta.fm.mu.Unlock()
		if found == nil && step > 0 {
			ta.fc.Advance(step)
		}
		return found != nil
	})
	return found, idx
}

func (ta *testAgent) ack(fw string, st *mesos.TaskStatus) {
	ta.fm.send(ta.ID(), &protocol.AgentEvent{Type: protocol.AgentEvent_ACKNOWLEDGE.Enum(),
		Acknowledge: &protocol.AgentEvent_Acknowledge{FrameworkId: fwID(fw), TaskId: st.GetTaskId(), Uuid: st.GetUuid()}})
}

func fwID(id string) *mesos.FrameworkID { return &mesos.FrameworkID{Value: proto.String(id)} }

func runTask(fw, task string, labels ...*mesos.Label) *protocol.AgentEvent {
	ti := &mesos.TaskInfo{Name: proto.String(task), TaskId: &mesos.TaskID{Value: proto.String(task)},
		AgentId: &mesos.AgentID{Value: proto.String("S1")}}
	if len(labels) > 0 {
		ti.Labels = &mesos.Labels{Labels: labels}
	}
	return &protocol.AgentEvent{Type: protocol.AgentEvent_RUN_TASK.Enum(), RunTask: &protocol.AgentEvent_RunTask{
		FrameworkInfo: &mesos.FrameworkInfo{Id: fwID(fw), Name: proto.String(fw), User: proto.String("u")},
		Task:          ti,
	}}
}

func ping(seq uint64, epoch uint64) *protocol.AgentEvent {
	return &protocol.AgentEvent{Type: protocol.AgentEvent_PING.Enum(), Epoch: proto.Uint64(epoch),
		Ping: &protocol.AgentEvent_Ping{Sequence: proto.Uint64(seq)}}
}

func isPong(seq uint64) func(*protocol.AgentCall) bool {
	return func(c *protocol.AgentCall) bool {
		return c.GetType() == protocol.AgentCall_PONG && c.GetPong().GetSequence() == seq
	}
}

func TestAgentSubscribes(t *testing.T) {
	fm := newFakeMaster(t, 0)
	ta := newTestAgent(t, fm, func(c *AgentConfig) {
		c.Resources = "cpus:3;mem:1024"
		c.Port = 6000
		c.Attributes = map[string]string{"rack": "r1"}
	})
	subs := fm.subscriptions()
	if len(subs) != 1 {
		t.Fatalf("%d SUBSCRIBEs, want 1", len(subs))
	}
	s := subs[0]
	info := s.GetAgentInfo()
	if info.GetHostname() != "sim-0" || info.GetPort() != 6000 || info.GetId() != nil {
		t.Fatalf("agent_info = %v", info)
	}
	var cpus float64
	for _, r := range info.GetResources() {
		if r.GetName() == "cpus" {
			cpus += r.GetScalar().GetValue()
		}
	}
	if cpus != 3 || len(info.GetResources()) != 2 {
		t.Fatalf("resources = %v", info.GetResources())
	}
	if len(info.GetAttributes()) != 1 || info.GetAttributes()[0].GetText().GetValue() != "r1" {
		t.Fatalf("attributes = %v", info.GetAttributes())
	}
	if s.GetVersion() != protocol.Version_VERSION_1 || s.GetEndpoint() != "sim-0:6000" || s.GetAgentVersion() != Version {
		t.Fatalf("subscribe = %v", s)
	}
	if ta.ID() != "S1" || ta.Epoch() != 1 || ta.RegisteredAt().IsZero() {
		t.Fatalf("id %q epoch %d registeredAt %v", ta.ID(), ta.Epoch(), ta.RegisteredAt())
	}
}

func TestAgentConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  AgentConfig
		want string
	}{
		{"no masters", AgentConfig{}, "'Masters'"},
		{"bad master", AgentConfig{Masters: []string{"nohostport"}}, "invalid master address"},
		{"bad resources", AgentConfig{Masters: []string{"h:1"}, Resources: "cpus:x"}, "'Resources'"},
		{"bad port", AgentConfig{Masters: []string{"h:1"}, Port: 70000}, "'Port'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAgent(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	if _, err := NewFleet(FleetConfig{Agents: 0, Agent: AgentConfig{Masters: []string{"h:1"}}}); err == nil {
		t.Fatal("a fleet of 0 agents was accepted")
	}
}

// PING is answered with a PONG of the same sequence; events of a lower
// epoch than the highest seen are dropped.
func TestAgentPingAndStaleEpoch(t *testing.T) {
	fm := newFakeMaster(t, 0)
	ta := newTestAgent(t, fm, nil)
	fm.send(ta.ID(), ping(7, 3)) // epoch 3 > 1: accepted and raises the epoch
	ta.awaitCall("PONG 7", 0, 0, isPong(7))
	fm.send(ta.ID(), ping(8, 2)) // stale
	fm.send(ta.ID(), ping(9, 3))
	_, i := ta.awaitCall("PONG 9", 0, 0, isPong(9))
	fm.mu.Lock()
	for _, c := range fm.calls[:i+1] {
		if isPong(8)(c) {
			t.Error("a stale PING was answered")
		}
	}
	fm.mu.Unlock()
	if ta.Epoch() != 3 {
		t.Fatalf("epoch = %d, want 3", ta.Epoch())
	}
	if s := ta.rt.stats(); s.StaleEvents != 1 || s.Pings != 2 {
		t.Fatalf("stats = %+v", s)
	}
}

// A fake task's updates go one at a time, each with a 16-byte uuid,
// re-sent until acknowledged; TASK_FINISHED follows after the duration.
func TestAgentTaskLifecycle(t *testing.T) {
	fm := newFakeMaster(t, 0)
	ta := newTestAgent(t, fm, nil)
	fm.send(ta.ID(), runTask("F1", "t1"))
	starting, i := ta.awaitCall("TASK_STARTING", 0, 0, statusCall("t1", mesos.TaskState_TASK_STARTING))
	st := starting.GetStatusUpdate().GetStatus()
	if len(st.GetUuid()) != 16 || starting.GetStatusUpdate().GetFrameworkId().GetValue() != "F1" || starting.GetAgentId().GetValue() != "S1" {
		t.Fatalf("update = %v", starting)
	}
	if got := starting.GetStatusUpdate().GetLatestState(); got != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("latest_state = %v, want TASK_RUNNING (queued behind STARTING)", got)
	}
	// Unacknowledged: re-sent with the same uuid once the retry interval
	// passes, then after twice that (backoff, as the real agent).
	sent := ta.fc.Now()
	again, k := ta.awaitCall("STARTING retry", i+1, 200*time.Millisecond, statusCall("t1", mesos.TaskState_TASK_STARTING))
	if !proto.Equal(again.GetStatusUpdate().GetStatus(), st) {
		t.Fatalf("retry differs: %v vs %v", again.GetStatusUpdate().GetStatus(), st)
	}
	first := ta.fc.Now()
	ta.awaitCall("second STARTING retry", k+1, 200*time.Millisecond, statusCall("t1", mesos.TaskState_TASK_STARTING))
	if d1, d2 := first.Sub(sent), ta.fc.Now().Sub(first); d1 != time.Second || d2 != 2*time.Second {
		t.Fatalf("retries after %v, then %v; want 1s, then 2s", d1, d2)
	}
	ta.ack("F1", st)
	running, j := ta.awaitCall("TASK_RUNNING", i+1, 0, statusCall("t1", mesos.TaskState_TASK_RUNNING))
	if string(running.GetStatusUpdate().GetStatus().GetUuid()) == string(st.GetUuid()) {
		t.Fatal("RUNNING reuses STARTING's uuid")
	}
	ta.ack("F1", running.GetStatusUpdate().GetStatus())
	fin, _ := ta.awaitCall("TASK_FINISHED", j+1, time.Second, statusCall("t1", mesos.TaskState_TASK_FINISHED))
	ta.ack("F1", fin.GetStatusUpdate().GetStatus())
	ta.await("task forgotten", func() bool {
		s, _ := ta.State()
		return len(s.Tasks) == 0 && s.Unacknowledged == 0
	})
	if s := ta.rt.stats(); s.TasksLaunched != 1 || s.TasksFinished != 1 || s.UpdatesAcked != 3 {
		t.Fatalf("stats = %+v", s)
	}
}

// KILL_TASK kills a running task; an unknown task is reported lost; the
// duration label overrides the configured one.
func TestAgentKill(t *testing.T) {
	fm := newFakeMaster(t, 0)
	ta := newTestAgent(t, fm, func(c *AgentConfig) { c.TaskDuration = time.Millisecond })
	fm.send(ta.ID(), runTask("F1", "t1", &mesos.Label{Key: proto.String(DurationLabel), Value: proto.String("never")}))
	c, _ := ta.awaitCall("TASK_STARTING", 0, 0, statusCall("t1", mesos.TaskState_TASK_STARTING))
	ta.ack("F1", c.GetStatusUpdate().GetStatus())
	c, _ = ta.awaitCall("TASK_RUNNING", 0, 0, statusCall("t1", mesos.TaskState_TASK_RUNNING))
	ta.fc.Advance(30 * time.Second) // "never" means never (and 30s is within the ping timeout)
	ta.ack("F1", c.GetStatusUpdate().GetStatus())
	fm.send(ta.ID(), &protocol.AgentEvent{Type: protocol.AgentEvent_KILL_TASK.Enum(), KillTask: &protocol.AgentEvent_KillTask{
		FrameworkId: fwID("F1"), TaskId: &mesos.TaskID{Value: proto.String("t1")}}})
	killed, _ := ta.awaitCall("TASK_KILLED", 0, 0, statusCall("t1", mesos.TaskState_TASK_KILLED))
	fm.mu.Lock()
	for _, c := range fm.calls {
		if statusCall("t1", mesos.TaskState_TASK_FINISHED)(c) {
			t.Error("a task labelled never finished")
		}
	}
	fm.mu.Unlock()
	ta.ack("F1", killed.GetStatusUpdate().GetStatus())

	fm.send(ta.ID(), &protocol.AgentEvent{Type: protocol.AgentEvent_KILL_TASK.Enum(), KillTask: &protocol.AgentEvent_KillTask{
		FrameworkId: fwID("F1"), TaskId: &mesos.TaskID{Value: proto.String("ghost")}}})
	lost, _ := ta.awaitCall("TASK_LOST", 0, 0, statusCall("ghost", mesos.TaskState_TASK_LOST))
	if s := lost.GetStatusUpdate().GetStatus(); s.GetReason() != mesos.TaskStatus_REASON_TASK_UNKNOWN || s.GetSource() != mesos.TaskStatus_SOURCE_AGENT {
		t.Fatalf("lost update = %v", s)
	}
}

// RUN_TASK_GROUP runs each task; SHUTDOWN_FRAMEWORK kills them; the
// executor exits once its last task ended.
func TestAgentTaskGroupAndShutdownFramework(t *testing.T) {
	fm := newFakeMaster(t, 0)
	ta := newTestAgent(t, fm, func(c *AgentConfig) { c.TaskDuration = Never })
	ex := &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("E1")}, Type: mesos.ExecutorInfo_DEFAULT.Enum(), FrameworkId: fwID("F1")}
	var tasks []*mesos.TaskInfo
	for _, id := range []string{"a", "b"} {
		tasks = append(tasks, &mesos.TaskInfo{Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)},
			AgentId: &mesos.AgentID{Value: proto.String("S1")}})
	}
	fm.send(ta.ID(), &protocol.AgentEvent{Type: protocol.AgentEvent_RUN_TASK_GROUP.Enum(), RunTaskGroup: &protocol.AgentEvent_RunTaskGroup{
		FrameworkInfo: &mesos.FrameworkInfo{Id: fwID("F1"), Name: proto.String("f"), User: proto.String("u")},
		ExecutorInfo:  ex, TaskGroup: &mesos.TaskGroupInfo{Tasks: tasks}}})
	for _, id := range []string{"a", "b"} {
		c, _ := ta.awaitCall("STARTING "+id, 0, 0, statusCall(id, mesos.TaskState_TASK_STARTING))
		if c.GetStatusUpdate().GetExecutorId().GetValue() != "E1" {
			t.Fatalf("update lacks the executor: %v", c)
		}
	}
	fm.send(ta.ID(), &protocol.AgentEvent{Type: protocol.AgentEvent_SHUTDOWN_FRAMEWORK.Enum(),
		ShutdownFramework: &protocol.AgentEvent_ShutdownFramework{FrameworkId: fwID("F1")}})
	ta.awaitCall("EXECUTOR_EXITED", 0, 0, func(c *protocol.AgentCall) bool {
		return c.GetType() == protocol.AgentCall_EXECUTOR_EXITED && c.GetExecutorExited().GetExecutorId().GetValue() == "E1"
	})
	// KILLED is queued behind the unacknowledged STARTING and RUNNING.
	for _, id := range []string{"a", "b"} {
		for _, state := range []mesos.TaskState{mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_KILLED} {
			c, _ := ta.awaitCall(state.String()+" "+id, 0, 0, statusCall(id, state))
			ta.ack("F1", c.GetStatusUpdate().GetStatus())
		}
	}
	ta.await("framework forgotten", func() bool {
		s, _ := ta.State()
		return len(s.Tasks) == 0 && s.Unacknowledged == 0
	})
}

// After losing the stream the agent re-subscribes with its ID, its tasks
// and its unacknowledged updates, and resends the latter.
func TestAgentReregistersWithState(t *testing.T) {
	fm := newFakeMaster(t, 0)
	ta := newTestAgent(t, fm, func(c *AgentConfig) { c.TaskDuration = Never })
	fm.send(ta.ID(), runTask("F1", "t1"))
	c, _ := ta.awaitCall("TASK_STARTING", 0, 0, statusCall("t1", mesos.TaskState_TASK_STARTING))
	ta.ack("F1", c.GetStatusUpdate().GetStatus())
	running, _ := ta.awaitCall("TASK_RUNNING", 0, 0, statusCall("t1", mesos.TaskState_TASK_RUNNING))
	first := ta.RegisteredAt()
	fm.set(func(fm *fakeMaster) { fm.epoch = 2 })
	fm.dropStreams()
	ta.await("re-registration", func() bool {
		if len(fm.subscriptions()) < 2 {
			ta.fc.Advance(50 * time.Millisecond)
			return false
		}
		return ta.Registered()
	})
	s := fm.subscriptions()[1]
	if s.GetAgentInfo().GetId().GetValue() != "S1" || s.GetEpoch() != 1 {
		t.Fatalf("re-SUBSCRIBE id %q epoch %d", s.GetAgentInfo().GetId().GetValue(), s.GetEpoch())
	}
	if len(s.GetTasks()) != 1 || s.GetTasks()[0].GetState() != mesos.TaskState_TASK_RUNNING ||
		s.GetTasks()[0].GetStatusUpdateState() != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("reported tasks = %v", s.GetTasks())
	}
	if len(s.GetUnacknowledged()) != 1 || !proto.Equal(s.GetUnacknowledged()[0], running.GetStatusUpdate().GetStatus()) {
		t.Fatalf("reported unacknowledged = %v", s.GetUnacknowledged())
	}
	if len(s.GetFrameworks()) != 1 || s.GetFrameworks()[0].GetId().GetValue() != "F1" {
		t.Fatalf("reported frameworks = %v", s.GetFrameworks())
	}
	if !ta.RegisteredAt().After(first) || ta.FirstRegisteredAt() != first {
		t.Fatalf("registration times %v (first %v)", ta.RegisteredAt(), ta.FirstRegisteredAt())
	}
	// The unacknowledged RUNNING is resent on the new stream.
	ta.awaitCall("RUNNING resent", 0, 0, func(c *protocol.AgentCall) bool {
		return statusCall("t1", mesos.TaskState_TASK_RUNNING)(c) && proto.Equal(c.GetStatusUpdate().GetStatus(), running.GetStatusUpdate().GetStatus())
	})
	// RECONCILE: a task the master believes runs here but the agent does
	// not know is reported lost.
	fm.send(ta.ID(), &protocol.AgentEvent{Type: protocol.AgentEvent_RECONCILE.Enum(), Reconcile: &protocol.AgentEvent_Reconcile{
		Tasks: []*mesos.Task{
			reconcileTask("t1"), reconcileTask("t9"),
		}}})
	lost, _ := ta.awaitCall("TASK_LOST t9", 0, 0, statusCall("t9", mesos.TaskState_TASK_LOST))
	if lost.GetStatusUpdate().GetStatus().GetReason() != mesos.TaskStatus_REASON_RECONCILIATION {
		t.Fatalf("reconcile answer = %v", lost)
	}
}

// A master that is not the leader answers 307 with "//host:port/...";
// the agent follows it and later tries that leader first.
func TestAgentFollowsRedirect(t *testing.T) {
	leader := newFakeMaster(t, 0)
	other := newFakeMaster(t, 0)
	other.set(func(fm *fakeMaster) { fm.redirect = leader.addr })
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	a, err := NewAgent(AgentConfig{Masters: []string{other.addr}, Clock: fc, RegistrationBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	a.Start()
	ta := &testAgent{Agent: a, fm: leader, fc: fc}
	ta.await("registration at the leader", a.Registered)
	if st, _ := a.State(); st.Master != leader.addr {
		t.Fatalf("registered at %q, want %q", st.Master, leader.addr)
	}
	leader.dropStreams()
	ta.await("re-registration at the leader", func() bool {
		if len(leader.subscriptions()) < 2 {
			fc.Advance(5 * time.Millisecond)
			return false
		}
		return a.Registered()
	})
	if n := len(other.subscriptions()); n != 0 {
		t.Fatalf("the redirecting master recorded %d subscriptions", n)
	}
}

// A 403 to a call means the master does not know the agent: it
// re-registers. SHUTDOWN stops it for good.
func TestAgentRefusedCallAndShutdown(t *testing.T) {
	fm := newFakeMaster(t, 0)
	ta := newTestAgent(t, fm, nil)
	fm.set(func(fm *fakeMaster) { fm.refuse = true })
	fm.send(ta.ID(), ping(1, 1))
	ta.await("re-subscription after 403", func() bool {
		if len(fm.subscriptions()) < 2 {
			ta.fc.Advance(20 * time.Millisecond)
			return false
		}
		return ta.Registered()
	})
	fm.send(ta.ID(), &protocol.AgentEvent{Type: protocol.AgentEvent_SHUTDOWN.Enum(), Shutdown: &protocol.AgentEvent_Shutdown{Message: proto.String("bye")}})
	ta.await("stop", func() bool { return !ta.Registered() })
	n := len(fm.subscriptions())
	ta.fc.Advance(time.Hour)
	if st, _ := ta.State(); st.Registered || len(fm.subscriptions()) != n {
		t.Fatal("a shut down agent re-registered")
	}
	if s := ta.rt.stats(); s.Shutdowns != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

func reconcileTask(id string) *mesos.Task {
	return &mesos.Task{Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)}, FrameworkId: fwID("F1"),
		AgentId: &mesos.AgentID{Value: proto.String("S1")}, State: mesos.TaskState_TASK_RUNNING.Enum()}
}

func newTestClock() *clock.Fake { return clock.NewFake(time.Unix(1_700_000_000, 0)) }
