package agent

import (
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"google.golang.org/protobuf/proto"
)

// restartTestAgent stops ta (as the agent process exits on SIGTERM) and
// starts a new agent over the same work dir and address.
func restartTestAgent(t *testing.T, m *fakeMaster, ta *testAgent, mutate func(*Config)) (*testAgent, error) {
	t.Helper()
	ta.Stop()
	ta.srv.Close()
	addr := ta.srv.Listener.Addr().String()
	cfg := ta.cfg
	cfg.Clock = nil
	cfg.Logger = nil
	if os.Getenv("AGENT_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg.HTTPClient = nil
	cfg.Containerizer = nil
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	a.Start()
	t.Cleanup(func() {
		a.Shutdown()
		srv.Close()
	})
	return &testAgent{Agent: a, srv: srv, dir: ta.dir}, nil
}

func checkpointingFramework(id string) *mesos.FrameworkInfo {
	fi := frameworkInfo(id)
	fi.Checkpoint = proto.Bool(true)
	return fi
}

func pidOf(t *testing.T, ta *testAgent, fw, ex string) int {
	t.Helper()
	var pid int
	if err := ta.query(func() {
		if f := ta.frameworks[fw]; f != nil && f.executors[ex] != nil {
			pid = f.executors[ex].pid
		}
	}); err != nil {
		t.Fatal(err)
	}
	return pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil && !zombie(pid) }

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// A checkpointing framework's executor survives the agent's Stop; the
// restarted agent re-attaches to it, and when it does not re-subscribe
// within --executor_reregistration_timeout it is killed and its task gets
// one terminal update; the agent re-registers under its old ID with the
// task.
func TestRecoveryReregistrationTimeout(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(checkpointingFramework("F1"), customTask("t1", "ex-t1", "exec sleep 30"), 1))
	var pid int
	eventually(t, "executor started", func() bool { pid = pidOf(t, ta, "F1", "ex-t1"); return pid > 0 })

	ta2, err := restartTestAgent(t, m, ta, func(c *Config) { c.Clock = nil })
	if err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatal("the checkpointing executor did not survive the agent's stop")
	}
	// The agent waits (real clock, 2s) for the executor, then kills it.
	sub2 := m.nextSub(t)
	if sub2.call.GetAgentId().GetValue() != "S1" {
		t.Fatalf("restarted agent subscribed as %q, want S1", sub2.call.GetAgentId().GetValue())
	}
	if ts := sub2.call.GetSubscribe().GetTasks(); len(ts) != 1 || ts[0].GetTaskId().GetValue() != "t1" {
		t.Errorf("re-registration reports tasks %v", ts)
	}
	sub2.send(&protocol.AgentEvent{Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(1),
		Subscribed: &protocol.AgentEvent_Subscribed{AgentId: agentIDProto("S1")}})
	u := m.waitCall(t, "TASK_LOST", updateFor("t1", mesos.TaskState_TASK_LOST))
	if r := u.GetStatusUpdate().GetStatus().GetReason(); r != mesos.TaskStatus_REASON_EXECUTOR_REREGISTRATION_TIMEOUT {
		t.Errorf("reason %s", r)
	}
	eventually(t, "executor killed", func() bool { return !alive(pid) })
	if v := ta2.metric(t, "slave/recovery_time_secs"); v < 1.5 {
		t.Errorf("slave/recovery_time_secs = %v, want about the 2s re-registration wait", v)
	}
}

// Executors of non-checkpointing frameworks do not outlive the agent;
// after the restart each of their tasks gets exactly one terminal update.
// With a runtime directory their records are kept there, not in meta/.
func TestRecoveryNonCheckpointing(t *testing.T) {
	t.Run("records in meta", func(t *testing.T) { testRecoveryNonCheckpointing(t, "") })
	t.Run("records in the runtime directory", func(t *testing.T) { testRecoveryNonCheckpointing(t, t.TempDir()) })
}

func testRecoveryNonCheckpointing(t *testing.T, runtimeDir string) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, func(c *Config) { c.RuntimeDir = runtimeDir })
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), customTask("t1", "ex-t1", "exec sleep 30"), 1))
	var pid int
	eventually(t, "executor started", func() bool { pid = pidOf(t, ta, "F1", "ex-t1"); return pid > 0 })
	if runtimeDir != "" {
		inMeta, _ := filepath.Glob(filepath.Join(ta.dir, "meta", "slaves", "*", "frameworks", "F1", "executors", "ex-t1"))
		inRuntime, _ := filepath.Glob(filepath.Join(runtimeDir, "slaves", "*", "frameworks", "F1", "executors", "ex-t1", "executor.info"))
		pids, _ := filepath.Glob(filepath.Join(runtimeDir, "containers", "*", "pid"))
		if len(inMeta) != 0 || len(inRuntime) != 1 || len(pids) != 1 {
			t.Fatalf("executor records: %v in meta, %v in the runtime directory; pid records %v", inMeta, inRuntime, pids)
		}
	}
	if _, err := restartTestAgent(t, m, ta, nil); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatal("a non-checkpointing executor survived the agent's stop")
	}
	sub2 := m.nextSub(t)
	sub2.send(&protocol.AgentEvent{Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(1),
		Subscribed: &protocol.AgentEvent_Subscribed{AgentId: agentIDProto("S1")}})
	// The master's reconciliation (sent on re-registration) finds the task
	// known: no second update.
	sub2.send(&protocol.AgentEvent{Type: protocol.AgentEvent_RECONCILE.Enum(), Epoch: proto.Uint64(1),
		Reconcile: &protocol.AgentEvent_Reconcile{Tasks: []*mesos.Task{{
			Name: proto.String("task t1"), TaskId: &mesos.TaskID{Value: proto.String("t1")},
			FrameworkId: &mesos.FrameworkID{Value: proto.String("F1")}, AgentId: agentIDProto("S1"),
			State: mesos.TaskState_TASK_RUNNING.Enum(),
		}}}})
	u := m.waitCall(t, "TASK_LOST", updateFor("t1", mesos.TaskState_TASK_LOST))
	if r := u.GetStatusUpdate().GetStatus().GetReason(); r != mesos.TaskStatus_REASON_AGENT_RESTARTED {
		t.Errorf("reason %s", r)
	}
	// The PING round trip orders the check after the RECONCILE.
	(&testAgent{}).sync(t, m, sub2, 1)
	m.noCall(t, "second terminal update", func(c *protocol.AgentCall) bool {
		return c.GetType() == protocol.AgentCall_STATUS_UPDATE && c.GetStatusUpdate().GetStatus().GetTaskId().GetValue() == "t1"
	})
}

// An agent restarted with a runtime directory finds the containers a
// previous agent recorded under meta/ (before it had one): their records
// move to the runtime directory, and its checkpointing executor is
// recovered with the same pid.
func TestRecoveryMovesRecordsToRuntimeDir(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil) // records under meta/
	sub := register(t, m, 1)
	sub.send(runTask(checkpointingFramework("F1"), customTask("t1", "ex-t1", "exec sleep 30"), 1))
	var pid int
	eventually(t, "executor started", func() bool { pid = pidOf(t, ta, "F1", "ex-t1"); return pid > 0 })
	old, _ := filepath.Glob(filepath.Join(ta.dir, "meta", "containers", "*", "pid"))
	if len(old) != 1 {
		t.Fatalf("pid records under meta/: %v", old)
	}
	runtimeDir := t.TempDir()
	ta2, err := restartTestAgent(t, m, ta, func(c *Config) { c.RuntimeDir = runtimeDir })
	if err != nil {
		t.Fatal(err)
	}
	moved, _ := filepath.Glob(filepath.Join(runtimeDir, "containers", "*", "pid"))
	left, _ := filepath.Glob(filepath.Join(ta.dir, "meta", "containers", "*"))
	if len(moved) != 1 || len(left) != 0 {
		t.Fatalf("after the restart: %v in the runtime directory, %v left under meta/", moved, left)
	}
	if !alive(pid) {
		t.Fatal("the checkpointing executor died across the restart")
	}
	eventually(t, "the executor recovered", func() bool { return pidOf(t, ta2, "F1", "ex-t1") == pid })
}

// --recover=cleanup kills what the previous agent left and registers anew.
func TestRecoverCleanup(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(checkpointingFramework("F1"), customTask("t1", "ex-t1", "exec sleep 30"), 1))
	var pid int
	eventually(t, "executor started", func() bool { pid = pidOf(t, ta, "F1", "ex-t1"); return pid > 0 })
	if _, err := restartTestAgent(t, m, ta, func(c *Config) { c.Recover = RecoverCleanup }); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Error("--recover=cleanup left the executor running")
	}
	if id := m.nextSub(t).call.GetAgentId().GetValue(); id != "" {
		t.Errorf("after cleanup the agent re-registered as %q, want a new agent", id)
	}
}

// A restart with other resources or attributes is refused, naming the
// difference, unless the policy allows it.
func TestRecoveryReconfiguration(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	register(t, m, 1)
	eventually(t, "checkpointed", func() bool {
		_, err := os.Stat(filepath.Join(ta.dir, "meta", "slaves", "latest"))
		return err == nil
	})
	_, err := restartTestAgent(t, m, ta, func(c *Config) { c.Resources = "cpus:3;mem:1024;disk:1000;ports:[31000-32000]" })
	if err == nil || !strings.Contains(err.Error(), "resources changed from") || !strings.Contains(err.Error(), "cpus:3") {
		t.Fatalf("restart with more cpus under 'equal': %v", err)
	}
	// The same change under 'additive' is accepted: same identity.
	_, err = restartTestAgent(t, m, ta, func(c *Config) {
		c.Resources = "cpus:3;mem:1024;disk:1000;ports:[31000-32000]"
		c.ReconfigurationPolicy = PolicyAdditive
	})
	if err != nil {
		t.Fatal(err)
	}
	if id := m.nextSub(t).call.GetAgentId().GetValue(); id != "S1" {
		t.Errorf("additive restart registered as %q, want S1", id)
	}
}

func TestCompatible(t *testing.T) {
	info := func(host string, port int32, res, attrs string) *mesos.AgentInfo {
		r, err := totalResources(res, "", realProbe)
		if err != nil {
			t.Fatal(err)
		}
		as, err := parseAttributes(attrs)
		if err != nil {
			t.Fatal(err)
		}
		return &mesos.AgentInfo{Hostname: proto.String(host), Port: proto.Int32(port), Resources: r.Proto(), Attributes: as}
	}
	const res = "cpus:2;mem:1024;disk:10;ports:[31000-32000]"
	base := info("h", 5051, res, "rack:r1;level:3")
	tests := []struct {
		name, policy string
		cur          *mesos.AgentInfo
		err          string // substring; "" = compatible
	}{
		{"same", PolicyEqual, info("h", 5051, res, "rack:r1;level:3"), ""},
		{"attribute order", PolicyEqual, info("h", 5051, res, "level:3;rack:r1"), ""},
		{"hostname", PolicyAdditive, info("h2", 5051, res, "rack:r1;level:3"), `hostname changed from "h" to "h2"`},
		{"port", PolicyEqual, info("h", 5052, res, "rack:r1;level:3"), "port changed from 5051 to 5052"},
		{"more cpus equal", PolicyEqual, info("h", 5051, "cpus:3;mem:1024;disk:10;ports:[31000-32000]", "rack:r1;level:3"), "resources changed"},
		{"more cpus additive", PolicyAdditive, info("h", 5051, "cpus:3;mem:1024;disk:10;ports:[31000-32000]", "rack:r1;level:3"), ""},
		{"fewer mem additive", PolicyAdditive, info("h", 5051, "cpus:2;mem:512;disk:10;ports:[31000-32000]", "rack:r1;level:3"), "were removed"},
		{"new attribute additive", PolicyAdditive, info("h", 5051, res, "rack:r1;level:3;zone:z"), ""},
		{"new attribute equal", PolicyEqual, info("h", 5051, res, "rack:r1;level:3;zone:z"), "attributes changed"},
		{"changed attribute additive", PolicyAdditive, info("h", 5051, res, "rack:r2;level:3"), "attribute 'rack:r1' changed to 'rack:r2'"},
		{"removed attribute additive", PolicyAdditive, info("h", 5051, res, "level:3"), "attribute 'rack:r1' was removed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := compatible(tt.policy, base, tt.cur)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("compatible = %v, want %q", err, tt.err)
			}
		})
	}
}

// A corrupt checkpoint stops the agent with an error naming the file.
func TestCorruptCheckpointNamesFile(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(checkpointingFramework("F1"), customTask("t1", "ex-t1", "exec sleep 30"), 1))
	eventually(t, "executor started", func() bool { return pidOf(t, ta, "F1", "ex-t1") > 0 })
	ta.Shutdown()
	info := filepath.Join(ta.dir, "meta", "slaves", "S1", "frameworks", "F1", "executors", "ex-t1", "executor.info")
	for name, damage := range map[string]func([]byte) []byte{
		"torn":    func(b []byte) []byte { return b[:len(b)-3] },
		"flipped": func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b },
		"empty":   func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(info)
			if err != nil {
				t.Fatal(err)
			}
			orig := append([]byte(nil), b...)
			if err := os.WriteFile(info, damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(info, orig, 0o644)
			cfg := ta.cfg
			cfg.Clock, cfg.Logger, cfg.HTTPClient = nil, nil, nil
			_, err = New(cfg)
			var ce *CorruptCheckpointError
			if err == nil || !errors.As(err, &ce) || ce.File != info || !strings.Contains(err.Error(), info) {
				t.Fatalf("New with a %s checkpoint: %v", name, err)
			}
		})
	}
}

// A reboot (another boot id) makes the agent register as a new agent.
func TestRecoveryAfterReboot(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	register(t, m, 1)
	eventually(t, "checkpointed", func() bool {
		_, err := os.Stat(filepath.Join(ta.dir, "meta", "boot_id"))
		return err == nil
	})
	ta.Stop()
	if err := os.WriteFile(filepath.Join(ta.dir, "meta", "boot_id"), []byte("another-boot"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := restartTestAgent(t, m, ta, nil); err != nil {
		t.Fatal(err)
	}
	if id := m.nextSub(t).call.GetAgentId().GetValue(); id != "" {
		t.Errorf("after a reboot the agent re-registered as %q, want a new agent", id)
	}
}

func TestCheckpointFraming(t *testing.T) {
	payload := []byte("hello")
	framed := frameCheckpoint(payload)
	if got, err := unframeCheckpoint(framed); err != nil || string(got) != "hello" {
		t.Fatalf("round trip: %q %v", got, err)
	}
	for _, bad := range [][]byte{nil, framed[:5], framed[:len(framed)-1], append(append([]byte(nil), framed...), 'x'), []byte("XXXX00000000hello")} {
		if _, err := unframeCheckpoint(bad); err == nil {
			t.Errorf("unframe(%q) accepted", bad)
		}
	}
	if unescapeStreamName("a%2Fb") != "a/b" || unescapeStreamName("%") != "" || unescapeStreamName("x%") != "x%" {
		t.Error("unescapeStreamName")
	}
}

func FuzzUnframeCheckpoint(f *testing.F) {
	f.Add(frameCheckpoint([]byte("x")))
	f.Add([]byte("MZC1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := unframeCheckpoint(b); err == nil && !strings.HasSuffix(string(b), string(p)) {
			t.Fatal("payload not from the input")
		}
	})
}
