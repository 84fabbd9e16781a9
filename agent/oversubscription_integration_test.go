package agent

import (
	"log/slog"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mezzo/agent/oversub"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// Oversubscription on real processes: the real `mezzo executor` (so that
// executors of checkpointing frameworks re-subscribe to a restarted
// agent), the slack estimator measuring them, the load controller with an
// injected load average. The slack of a sleeping regular task is sent to
// the master as throttle-able revocable cpus; a revocable task runs on it;
// the agent restarts, recovers both tasks and sends its estimate again;
// the load rises and the revocable task, only it, is preempted
// (TASK_GONE for this partition-aware framework, REASON_CONTAINER_PREEMPTED).
func TestOversubscriptionRealProcesses(t *testing.T) {
	bin, _ := e2eBinaries(t)
	var load atomic.Uint64 // math.Float64bits of the 5-minute load
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, func(c *Config) {
		c.LauncherPath = bin
		c.Oversubscription = oversub.Config{
			ResourceEstimator: "slack",
			QoSController:     "load",
			LoadThreshold5Min: proto.Float64(4),
			LoadAverage: func() (oversub.LoadAverage, error) {
				return oversub.LoadAverage{Five: math.Float64frombits(load.Load())}, nil
			},
		}
	})
	sub := register(t, m, 1)

	regular := commandTask("svc", "sleep 1000")
	regular.Resources = resources.MustParse("cpus:1;mem:64").Proto()
	sub.send(runTask(checkpointingFramework("FR"), regular, 1))
	runningAcked(t, m, sub, "FR", "svc")

	// The slack estimator needs two measurements and smooths the fall of
	// usage: move the agent's clock an interval at a time until the estimate
	// lends cpus.
	var est resources.Resources
	eventually(t, "an estimate with slack", func() bool {
		ta.advance(t, m, sub, 15*time.Second)
		for _, c := range m.takeAll(ofType(protocol.AgentCall_UPDATE_RESOURCES)) {
			r, err := resources.FromProto(c.GetUpdateResources().GetOversubscribed())
			if err != nil {
				t.Fatalf("UPDATE_RESOURCES: %v", err)
			}
			est = r
		}
		time.Sleep(20 * time.Millisecond) // give the off-loop estimate time to land
		return est.Scalar("cpus") > 0.5
	})
	if !est.Throttleable().Equal(est) || est.Scalar("cpus") > 1.1 || est.Scalar("mem") != 0 {
		t.Fatalf("estimate %v: want throttle-able cpus only, at most the regular container's 1.1", est)
	}

	fb := checkpointingFramework("FB")
	fb.Capabilities = []*mesos.FrameworkInfo_Capability{
		{Type: mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES.Enum()},
		{Type: mesos.FrameworkInfo_Capability_PARTITION_AWARE.Enum()},
	}
	batch := commandTask("batch", "sleep 1000")
	batch.Resources = resources.MustParse("cpus:0.5;mem:32").Proto()
	batch.Resources[0].Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
	sub.send(runTask(fb, batch, 1))
	runningAcked(t, m, sub, "FB", "batch")
	if v := ta.metric(t, "slave/cpus_revocable_used"); v != 0.5 {
		t.Errorf("slave/cpus_revocable_used = %v, want 0.5", v)
	}
	before := map[string]int{"svc": pidOf(t, ta, "FR", "svc"), "batch": pidOf(t, ta, "FB", "batch")}
	m.takeAll(ofType(protocol.AgentCall_UPDATE_RESOURCES))

	// Restart (real clock from here): both checkpointing executors are
	// recovered, and the estimate is recomputed and sent again.
	ta2, err := restartTestAgent(t, m, ta, func(c *Config) { c.Clock = nil })
	if err != nil {
		t.Fatal(err)
	}
	sub2 := m.nextSub(t)
	if n := len(sub2.call.GetSubscribe().GetTasks()); n != 2 {
		t.Fatalf("re-registration reports %d tasks, want 2", n)
	}
	sub2.send(&protocol.AgentEvent{Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(1),
		Subscribed: &protocol.AgentEvent_Subscribed{AgentId: agentIDProto("S1")}})
	again := m.waitCall(t, "UPDATE_RESOURCES after the restart", ofType(protocol.AgentCall_UPDATE_RESOURCES))
	r, err := resources.FromProto(again.GetUpdateResources().GetOversubscribed())
	if err != nil || r.Scalar("cpus") < 0.5 || !r.Throttleable().Equal(r) {
		t.Fatalf("estimate after the restart %v (%v): want at least the 0.5 cpus the revocable task holds, throttle-able", r, err)
	}
	eventually(t, "both executors re-subscribed", func() bool {
		running := 0
		ta2.query(func() {
			for _, fw := range ta2.frameworks {
				for _, e := range fw.executors {
					if e.phase == phaseRunning && e.recovered {
						running++
					}
				}
			}
		})
		return running == 2
	})
	for task, pid := range before {
		if !alive(pid) {
			t.Fatalf("the %s executor (pid %d) did not survive the restart", task, pid)
		}
	}

	// Interference: the load rises past the threshold; the QoS loop kills
	// the revocable container within a look or two.
	load.Store(math.Float64bits(7))
	rise := time.Now()
	u := m.waitCall(t, "TASK_GONE of the revocable task", updateFor("batch", mesos.TaskState_TASK_GONE))
	t.Logf("preempted %v after the load rose", time.Since(rise))
	st := u.GetStatusUpdate().GetStatus()
	if st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_PREEMPTED || !strings.Contains(st.GetMessage(), "load QoS controller") {
		t.Errorf("revocable task ended %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
	eventually(t, "the revocable executor killed", func() bool { return !alive(before["batch"]) })
	if !alive(before["svc"]) {
		t.Fatal("the regular executor was killed")
	}
	m.noCall(t, "terminal update of the regular task", func(c *protocol.AgentCall) bool {
		st := c.GetStatusUpdate().GetStatus()
		return st.GetTaskId().GetValue() == "svc" && mesos.IsTerminal(st.GetState())
	})
	if v := ta2.metric(t, "slave/executors_preempted"); v != 1 {
		t.Errorf("slave/executors_preempted = %v, want 1", v)
	}
}

// runningAcked acknowledges a command task's TASK_STARTING and TASK_RUNNING
// (the agent forwards a task's next update once the last is acknowledged).
func runningAcked(t *testing.T, m *fakeMaster, sub *fakeSub, fw, task string) {
	t.Helper()
	for _, s := range []mesos.TaskState{mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING} {
		c := m.waitCall(t, s.String()+" of "+task, updateFor(task, s))
		sub.send(ack(fw, c, 1))
	}
}

// The interference controller on real processes, measured by the cgroups
// isolators: a regular task burning CPU in four processes and a revocable
// one burning in one, on an agent declaring a fifth of a cpu (so that the
// regular task's demand exceeds it even on a machine busy with other
// work); the revocable task, only it, is preempted.
func TestInterferenceControllerRealProcesses(t *testing.T) {
	isolation, err := cgroupsIsolation()
	if err != nil {
		t.Skipf("needs cgroups: %v", err)
	}
	bin, _ := e2eBinaries(t)
	m := newFakeMaster(t)
	root := testCgroupsRoot(t, "interference")
	ta := startTestAgent(t, m, func(c *Config) {
		c.LauncherPath = bin
		c.Clock = nil // the controller's rates come from real cpu time over real time
		c.Resources = "cpus:0.2;mem:1024;disk:1000"
		c.Isolation = isolation
		c.Cgroups.Root = root
		c.Oversubscription = oversub.Config{QoSController: "interference"}
		if os.Getenv("AGENT_TEST_LOG") != "" {
			c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	})
	sub := register(t, m, 1)
	burn := "while :; do :; done"
	regular := commandTask("svc", "for i in 1 2 3 4; do ("+burn+") & done; wait")
	regular.Resources = resources.MustParse("cpus:0.05;mem:32").Proto()
	sub.send(runTask(frameworkInfo("FR"), regular, 1))
	runningAcked(t, m, sub, "FR", "svc")
	fb := frameworkInfo("FB")
	fb.Capabilities = []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES.Enum()}}
	batch := commandTask("batch", burn)
	batch.Resources = resources.MustParse("cpus:0.05;mem:32").Proto()
	batch.Resources[0].Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
	sub.send(runTask(fb, batch, 1))
	// It may be preempted before it even runs (without a rate yet its
	// demand is its allocation): acknowledge what comes until it ends.
	var st *mesos.TaskStatus
	for st == nil || !mesos.IsTerminal(st.GetState()) {
		u := m.waitCall(t, "an update of the revocable task", func(c *protocol.AgentCall) bool {
			return c.GetStatusUpdate().GetStatus().GetTaskId().GetValue() == "batch"
		})
		st = u.GetStatusUpdate().GetStatus()
		sub.send(ack("FB", u, 1))
	}
	if st.GetState() != mesos.TaskState_TASK_LOST || st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_PREEMPTED || !strings.Contains(st.GetMessage(), "interference QoS controller") {
		t.Errorf("revocable task ended %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
	m.noCall(t, "terminal update of the regular task", func(c *protocol.AgentCall) bool {
		st := c.GetStatusUpdate().GetStatus()
		return st.GetTaskId().GetValue() == "svc" && mesos.IsTerminal(st.GetState())
	})
	if v := ta.metric(t, "slave/qos_corrections"); v != 1 {
		t.Errorf("slave/qos_corrections = %v, want 1", v)
	}
	if pid := pidOf(t, ta, "FR", "svc"); pid == 0 || !alive(pid) {
		t.Errorf("the regular executor is gone (pid %d)", pid)
	}
}
