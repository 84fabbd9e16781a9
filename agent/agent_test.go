package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mezzo/agent/statusupdate"
	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"google.golang.org/protobuf/proto"
)

func TestRegistration(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 3)

	s := sub.call.GetSubscribe()
	if sub.call.GetAgentId() != nil || s.GetAgentInfo().GetId() != nil {
		t.Errorf("a new agent subscribed with an id: %v", sub.call)
	}
	if s.GetEndpoint() != ta.endpoint || s.GetAgentInfo().GetHostname() != "agent.test" ||
		s.GetAgentInfo().GetPort() != int32(ta.cfg.Port) || s.GetAgentVersion() != "test-1" ||
		s.GetVersion() != protocol.Version_VERSION_1 {
		t.Errorf("subscribe = %v", s)
	}
	if s.GetBootId() != readBootID() {
		t.Errorf("boot id %q, want %q", s.GetBootId(), readBootID())
	}
	var names []string
	for _, r := range s.GetAgentInfo().GetResources() {
		names = append(names, r.GetName())
	}
	if strings.Join(names, ",") != "cpus,disk,mem,ports" && len(names) != 4 {
		t.Errorf("resources %v", names)
	}
	if len(s.GetAgentInfo().GetAttributes()) != 2 {
		t.Errorf("attributes %v", s.GetAgentInfo().GetAttributes())
	}
	ta.sync(t, m, sub, 3)

	if got := ta.metric(t, "slave/registered"); got != 1 {
		t.Errorf("slave/registered = %v", got)
	}
	// The host's metrics, as Mesos's agent reports them beside slave/*.
	if got := ta.metric(t, "system/cpus_total"); got < 1 {
		t.Errorf("system/cpus_total = %v", got)
	}
	if ta.metric(t, "system/mem_total_bytes") < ta.metric(t, "system/mem_free_bytes") {
		t.Error("system/mem_free_bytes exceeds system/mem_total_bytes")
	}
	ta.metric(t, "system/load_1min")
	st := ta.state(t)
	if st["id"] != "S1" || st["pid"] != "slave(1)@"+ta.endpoint || st["hostname"] != "agent.test" || st["master_hostname"] != "master.test" {
		t.Errorf("state header: id=%v pid=%v hostname=%v master=%v", st["id"], st["pid"], st["hostname"], st["master_hostname"])
	}
	if res := st["resources"].(map[string]any); res["cpus"] != 2.0 || res["mem"] != 1024.0 || res["ports"] != "[31000-32000]" {
		t.Errorf("state resources %v", res)
	}
	if attrs := st["attributes"].(map[string]any); attrs["rack"] != "r1" || attrs["level"] != 3.0 {
		t.Errorf("state attributes %v", attrs)
	}
	// The identity is checkpointed.
	link, err := os.Readlink(filepath.Join(ta.dir, "meta", "slaves", "latest"))
	if err != nil || link != "S1" {
		t.Errorf("meta/slaves/latest -> %q, %v", link, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ta.dir, "meta", "epoch")); string(b) != "3" {
		t.Errorf("checkpointed epoch %q", b)
	}
	if code, _ := ta.get(t, "/health"); code != 200 {
		t.Errorf("/health: %d", code)
	}
	if code, _ := ta.get(t, "/slave(1)/health"); code != 200 {
		t.Errorf("/slave(1)/health: %d", code)
	}
	code, body := ta.get(t, "/state?jsonp=cb")
	if code != 200 || !strings.HasPrefix(string(body), "cb({") || !strings.HasSuffix(string(body), "});") {
		t.Errorf("jsonp state: %d %.40s", code, body)
	}
}

// TestCommandTaskLifecycle launches a command task through the synthesized
// command executor (the test executor stands in for `mezzo executor`) and
// follows its updates to the master, retried until acknowledged.
func TestCommandTaskLifecycle(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	fw := frameworkInfo("F1")
	fw.Checkpoint = proto.Bool(true)
	sub.send(runTask(fw, commandTask("t1", "finish"), 1))

	running := m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	su := running.GetStatusUpdate()
	if running.GetAgentId().GetValue() != "S1" || su.GetFrameworkId().GetValue() != "F1" ||
		su.GetStatus().GetSource() != mesos.TaskStatus_SOURCE_EXECUTOR || su.GetStatus().GetAgentId().GetValue() != "S1" ||
		su.GetStatus().GetExecutorId().GetValue() != "t1" || len(su.GetStatus().GetUuid()) != 16 {
		t.Errorf("running update %v", running)
	}
	if su.GetLatestState() != mesos.TaskState_TASK_FINISHED && su.GetLatestState() != mesos.TaskState_TASK_RUNNING {
		t.Errorf("latest_state %v", su.GetLatestState())
	}

	// Not acknowledged: the manager forwards it again after its backoff.
	eventually(t, "retry timer", func() bool { return ta.clock.Pending() > 0 })
	ta.clock.Advance(statusupdate.RetryIntervalMin)
	again := m.waitCall(t, "TASK_RUNNING retry", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	if string(again.GetStatusUpdate().GetStatus().GetUuid()) != string(su.GetStatus().GetUuid()) {
		t.Errorf("retry carries a different uuid")
	}
	m.noCall(t, "TASK_FINISHED before the RUNNING ack", updateFor("t1", mesos.TaskState_TASK_FINISHED))

	// Sandbox, environment and output.
	st := ta.state(t)
	fws := st["frameworks"].([]any)
	if len(fws) != 1 {
		t.Fatalf("frameworks %v", fws)
	}
	ex := fws[0].(map[string]any)["executors"].([]any)[0].(map[string]any)
	dir := ex["directory"].(string)
	cid := ex["container"].(string)
	wantDir := filepath.Join(ta.dir, "slaves", "S1", "frameworks", "F1", "executors", "t1", "runs", cid)
	if dir != wantDir {
		t.Errorf("directory %s, want %s", dir, wantDir)
	}
	if ex["name"] != "Command Executor (Task: t1) (Command: sh -c 'finish')" || ex["source"] != "t1" {
		t.Errorf("executor name %q source %q", ex["name"], ex["source"])
	}
	if link, _ := os.Readlink(filepath.Join(filepath.Dir(dir), "latest")); link != cid {
		t.Errorf("runs/latest -> %q", link)
	}
	env := readFile(t, filepath.Join(dir, "env.txt"))
	for _, want := range []string{
		"MESOS_FRAMEWORK_ID=F1", "MESOS_EXECUTOR_ID=t1", "MESOS_DIRECTORY=" + dir, "MESOS_SANDBOX=" + dir,
		"MESOS_AGENT_ENDPOINT=" + ta.endpoint, "MESOS_SLAVE_ID=S1", "MESOS_SLAVE_PID=slave(1)@" + ta.endpoint,
		"MESOS_CHECKPOINT=1", "MESOS_HTTP_COMMAND_EXECUTOR=0", "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD=5secs",
		"MESOS_RECOVERY_TIMEOUT=15mins", "MESOS_SUBSCRIPTION_BACKOFF_MAX=2secs", "LIBPROCESS_PORT=0",
		"PATH=" + defaultPath,
	} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("executor environment lacks %s:\n%s", want, env)
		}
	}
	if out := readFile(t, filepath.Join(dir, "stdout")); !strings.HasPrefix(out, "testexec started executor\n") {
		t.Errorf("stdout %q", out)
	}
	if errOut := readFile(t, filepath.Join(dir, "stderr")); !strings.Contains(errOut, "testexec stderr") {
		t.Errorf("stderr %q", errOut)
	}
	// The sandbox is under /files at its three virtual paths.
	for _, v := range []string{dir, filepath.Join(filepath.Dir(dir), "latest"), "/frameworks/F1/executors/t1/runs/latest"} {
		if code, body := ta.get(t, "/files/read?path="+v+"/stdout&offset=0"); code != 200 || !strings.Contains(string(body), "testexec started") {
			t.Errorf("/files/read %s: %d %s", v, code, body)
		}
	}
	// The agent's view is the latest state (FINISHED) while the updates
	// await the scheduler's acknowledgement; the executor exits once the
	// agent has taken its terminal update (ACKNOWLEDGED).
	eventually(t, "the agent's view FINISHED", func() bool { return ta.metric(t, "slave/tasks_running") == 0 })
	eventually(t, "executor exit", func() bool { return ta.metric(t, "slave/executors_terminated") == 1 })

	// Acknowledging RUNNING releases FINISHED; acknowledging FINISHED ends
	// the executor (the test executor exits then).
	sub.send(ack("F1", running, 1))
	finished := m.waitCall(t, "TASK_FINISHED", updateFor("t1", mesos.TaskState_TASK_FINISHED))
	sub.send(ack("F1", finished, 1))
	exited := m.waitCall(t, "EXECUTOR_EXITED", ofType(protocol.AgentCall_EXECUTOR_EXITED))
	if e := exited.GetExecutorExited(); e.GetExecutorId().GetValue() != "t1" || e.GetFrameworkId().GetValue() != "F1" || e.GetStatus() != 0 {
		t.Errorf("executor exited %v", exited)
	}
	ta.sync(t, m, sub, 1)
	m.noCall(t, "agent update after a clean exit", func(c *protocol.AgentCall) bool {
		return c.GetStatusUpdate().GetStatus().GetSource() == mesos.TaskStatus_SOURCE_AGENT
	})
	eventually(t, "framework completed", func() bool {
		st := ta.state(t)
		return len(st["frameworks"].([]any)) == 0 && len(st["completed_frameworks"].([]any)) == 1
	})
	st = ta.state(t)
	cex := st["completed_frameworks"].([]any)[0].(map[string]any)["completed_executors"].([]any)[0].(map[string]any)
	ct := cex["completed_tasks"].([]any)[0].(map[string]any)
	if ct["state"] != "TASK_FINISHED" || ct["executor_id"] != "" || ct["framework_id"] != "F1" || ct["slave_id"] != "S1" {
		t.Errorf("completed task %v", ct)
	}
	if got := ta.metric(t, "slave/tasks_finished"); got != 1 {
		t.Errorf("slave/tasks_finished = %v", got)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the sandbox was removed: %v", err)
	}
}

func TestKillRunningTask(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), commandTask("t1", "hang"), 1))
	running := m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	sub.send(ack("F1", running, 1))
	sub.send(killTask("F1", "t1", 1))
	killed := m.waitCall(t, "TASK_KILLED", updateFor("t1", mesos.TaskState_TASK_KILLED))
	if killed.GetStatusUpdate().GetStatus().GetSource() != mesos.TaskStatus_SOURCE_EXECUTOR {
		t.Errorf("killed by %v", killed.GetStatusUpdate().GetStatus().GetSource())
	}
	sub.send(ack("F1", killed, 1))
	m.waitCall(t, "EXECUTOR_EXITED", ofType(protocol.AgentCall_EXECUTOR_EXITED))
	eventually(t, "tasks_killed metric", func() bool { return ta.metric(t, "slave/tasks_killed") == 1 })
}

// TestExecutorExit: an executor that dies leaves its tasks to the agent,
// which fails them and reports the exit.
func TestExecutorExit(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), commandTask("t1", "exit3"), 1))
	exited := m.waitCall(t, "EXECUTOR_EXITED", ofType(protocol.AgentCall_EXECUTOR_EXITED))
	if got := exited.GetExecutorExited().GetStatus(); got != 3<<8 {
		t.Errorf("exit status %d, want %d", got, 3<<8)
	}
	running := m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	sub.send(ack("F1", running, 1))
	failed := m.waitCall(t, "TASK_FAILED", updateFor("t1", mesos.TaskState_TASK_FAILED))
	st := failed.GetStatusUpdate().GetStatus()
	if st.GetSource() != mesos.TaskStatus_SOURCE_AGENT || st.GetReason() != mesos.TaskStatus_REASON_EXECUTOR_TERMINATED ||
		!strings.Contains(st.GetMessage(), "Command exited with status 3") {
		t.Errorf("failed update %v", st)
	}
	sub.send(ack("F1", failed, 1))
	eventually(t, "executor completed", func() bool {
		return ta.metric(t, "slave/executors_terminated") == 1 && ta.metric(t, "slave/frameworks_active") == 0
	})
}

func TestKillUnknownTask(t *testing.T) {
	m := newFakeMaster(t)
	_ = startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(killTask("F9", "nope", 1))
	lost := m.waitCall(t, "TASK_LOST", updateFor("nope", mesos.TaskState_TASK_LOST))
	if st := lost.GetStatusUpdate().GetStatus(); st.GetSource() != mesos.TaskStatus_SOURCE_AGENT || st.GetMessage() != "Cannot find executor" {
		t.Errorf("lost update %v", st)
	}
}

// customTask is a task whose custom executor runs cmd (a shell command
// that never subscribes unless it is the test executor).
func customTask(id, execID, cmd string) *mesos.TaskInfo {
	return &mesos.TaskInfo{
		Name:    proto.String("task " + id),
		TaskId:  &mesos.TaskID{Value: proto.String(id)},
		AgentId: agentIDProto("S1"),
		Executor: &mesos.ExecutorInfo{
			ExecutorId: &mesos.ExecutorID{Value: proto.String(execID)},
			Command:    &mesos.CommandInfo{Value: proto.String(cmd)},
		},
	}
}

// TestKillQueuedTask: killing a task whose executor has not subscribed is
// answered by the agent; the executor, left without tasks, is shut down.
func TestKillQueuedTask(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), customTask("t1", "e1", "exec sleep 600"), 1))
	ta.sync(t, m, sub, 1)
	eventually(t, "queued task", func() bool {
		fws := ta.state(t)["frameworks"].([]any)
		return len(fws) == 1 && len(fws[0].(map[string]any)["executors"].([]any)[0].(map[string]any)["queued_tasks"].([]any)) == 1
	})
	sub.send(killTask("F1", "t1", 1))
	killed := m.waitCall(t, "TASK_KILLED", updateFor("t1", mesos.TaskState_TASK_KILLED))
	if st := killed.GetStatusUpdate().GetStatus(); st.GetSource() != mesos.TaskStatus_SOURCE_AGENT ||
		st.GetReason() != mesos.TaskStatus_REASON_TASK_KILLED_DURING_LAUNCH {
		t.Errorf("killed update %v", st)
	}
	exited := m.waitCall(t, "EXECUTOR_EXITED", ofType(protocol.AgentCall_EXECUTOR_EXITED))
	if exited.GetExecutorExited().GetExecutorId().GetValue() != "e1" {
		t.Errorf("exited %v", exited)
	}
	m.noCall(t, "a second update for t1", func(c *protocol.AgentCall) bool {
		return c.GetStatusUpdate().GetStatus().GetTaskId().GetValue() == "t1"
	})
}

func TestExecutorRegistrationTimeout(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), customTask("t1", "e1", "exec sleep 600"), 1))
	ta.sync(t, m, sub, 1)
	eventually(t, "container launched", func() bool { return len(ta.cz.Containers()) == 1 })
	ta.clock.Advance(DefaultExecutorRegistrationTimeout)
	failed := m.waitCall(t, "TASK_FAILED", updateFor("t1", mesos.TaskState_TASK_FAILED))
	if st := failed.GetStatusUpdate().GetStatus(); st.GetReason() != mesos.TaskStatus_REASON_EXECUTOR_REGISTRATION_TIMEOUT ||
		st.GetMessage() != "Executor did not register within 1mins" {
		t.Errorf("failed update %v", st)
	}
	m.waitCall(t, "EXECUTOR_EXITED", ofType(protocol.AgentCall_EXECUTOR_EXITED))
	if n := len(ta.cz.Containers()); n != 0 {
		t.Errorf("%d containers left", n)
	}
}

func TestFetchFailure(t *testing.T) {
	m := newFakeMaster(t)
	_ = startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	task := commandTask("t1", "finish")
	task.Command.Uris = []*mesos.CommandInfo_URI{{Value: proto.String("/nonexistent/file.tgz")}}
	sub.send(runTask(frameworkInfo("F1"), task, 1))
	failed := m.waitCall(t, "TASK_FAILED", updateFor("t1", mesos.TaskState_TASK_FAILED))
	if st := failed.GetStatusUpdate().GetStatus(); st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED ||
		!strings.HasPrefix(st.GetMessage(), "Failed to launch container: Failed to fetch all URIs for container") {
		t.Errorf("failed update %v", st)
	}
}

// TestReconnect: when the stream breaks the agent re-subscribes (after its
// backoff) with its id and what it runs, and forwarding resumes.
func TestReconnect(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), commandTask("t1", "hang"), 1))
	running := m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))

	sub.close()
	eventually(t, "agent disconnected", func() bool { return ta.metric(t, "slave/registered") == 0 })
	eventually(t, "reconnect timer", func() bool { return ta.clock.Pending() > 0 })
	ta.clock.Advance(DefaultRegistrationBackoff)
	sub2 := m.nextSub(t)
	s := sub2.call.GetSubscribe()
	if sub2.call.GetAgentId().GetValue() != "S1" || s.GetAgentInfo().GetId().GetValue() != "S1" || s.GetEpoch() != 1 {
		t.Errorf("re-subscribe %v", sub2.call)
	}
	// The command executor is the agent's own: not reported (as Mesos),
	// so the master never counts it.
	if len(s.GetFrameworks()) != 1 || len(s.GetExecutors()) != 0 || len(s.GetTasks()) != 1 ||
		s.GetTasks()[0].GetState() != mesos.TaskState_TASK_RUNNING ||
		s.GetTasks()[0].GetStatusUpdateState() != mesos.TaskState_TASK_RUNNING ||
		string(s.GetTasks()[0].GetStatusUpdateUuid()) != string(running.GetStatusUpdate().GetStatus().GetUuid()) {
		t.Errorf("re-subscribe reports frameworks=%d executors=%d tasks=%v", len(s.GetFrameworks()), len(s.GetExecutors()), s.GetTasks())
	}
	if len(s.GetUnacknowledged()) != 1 || s.GetUnacknowledged()[0].GetState() != mesos.TaskState_TASK_RUNNING {
		t.Errorf("unacknowledged %v", s.GetUnacknowledged())
	}
	sub2.send(&protocol.AgentEvent{
		Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(2),
		Subscribed: &protocol.AgentEvent_Subscribed{AgentId: agentIDProto("S1")},
	})
	// Resumed: the unacknowledged RUNNING is forwarded again at once.
	again := m.waitCall(t, "TASK_RUNNING after reconnect", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	if string(again.GetStatusUpdate().GetStatus().GetUuid()) != string(running.GetStatusUpdate().GetStatus().GetUuid()) {
		t.Errorf("a different update was resent")
	}
	sub2.send(ack("F1", again, 2))
	sub2.send(killTask("F1", "t1", 2))
	m.waitCall(t, "TASK_KILLED", updateFor("t1", mesos.TaskState_TASK_KILLED))
}

// TestStaleEpochDropped: events below the highest epoch seen are ignored.
func TestStaleEpochDropped(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 5)
	sub.send(runTask(frameworkInfo("F1"), commandTask("t1", "hang"), 4))
	ta.sync(t, m, sub, 5)
	if fws := ta.state(t)["frameworks"].([]any); len(fws) != 0 {
		t.Errorf("a stale RUN_TASK was acted on: %v", fws)
	}
	// A stale PING gets no PONG.
	sub.send(&protocol.AgentEvent{Type: protocol.AgentEvent_PING.Enum(), Epoch: proto.Uint64(4), Ping: &protocol.AgentEvent_Ping{Sequence: proto.Uint64(77)}})
	ta.sync(t, m, sub, 5)
	m.noCall(t, "PONG to a stale ping", func(c *protocol.AgentCall) bool { return c.GetPong().GetSequence() == 77 })
	// A newer epoch is accepted and remembered.
	sub.send(runTask(frameworkInfo("F1"), commandTask("t2", "hang"), 6))
	m.waitCall(t, "TASK_RUNNING", updateFor("t2", mesos.TaskState_TASK_RUNNING))
	if ta.metric(t, "slave/tasks_running") != 1 {
		t.Error("task t2 not running")
	}
	sub.send(killTask("F1", "t2", 5)) // stale now
	ta.sync(t, m, sub, 6)
	time.Sleep(0)
	m.noCall(t, "kill from a stale epoch", updateFor("t2", mesos.TaskState_TASK_KILLED))
}

func TestRedirectToLeader(t *testing.T) {
	leader := newFakeMaster(t)
	follower := newFakeMaster(t)
	follower.redirect = leader.addr()
	ta := startTestAgent(t, follower, nil)
	sub := register(t, leader, 1)
	ta.sync(t, leader, sub, 1)
	if ta.metric(t, "slave/registered") != 1 {
		t.Error("not registered through the redirect")
	}
}

func TestMasterShutdown(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), commandTask("t1", "hang"), 1))
	m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	sub.send(&protocol.AgentEvent{Type: protocol.AgentEvent_SHUTDOWN.Enum(), Epoch: proto.Uint64(1),
		Shutdown: &protocol.AgentEvent_Shutdown{Message: proto.String("agent removed")}})
	select {
	case <-ta.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not stop")
	}
	if err := ta.Err(); err == nil || !strings.Contains(err.Error(), "agent removed") {
		t.Errorf("Err() = %v", err)
	}
	if n := len(ta.cz.Containers()); n != 0 {
		t.Errorf("%d executors still running", n)
	}
	if _, err := os.Lstat(filepath.Join(ta.dir, "meta", "slaves", "latest")); !os.IsNotExist(err) {
		t.Errorf("meta/slaves/latest survived the shutdown: %v", err)
	}
}
