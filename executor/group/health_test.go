package group

import (
	"net"
	"testing"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/executor/internal/fakeagent"
)

// closedPort is a TCP port nothing listens on.
func closedPort(t *testing.T) uint32 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return uint32(port)
}

// A task whose TCP health check fails is killed after consecutive_failures,
// the group policy then kills its sibling, and both terminal updates say
// healthy=false (Mesos's default executor marks every terminal update once
// a task was killed as unhealthy).
func TestGroupFailingHealthCheckKillsGroup(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	checked := fakeagent.Task("checked", "sleep 30")
	checked.HealthCheck = &mesos.HealthCheck{
		Type:                mesos.HealthCheck_TCP.Enum(),
		Tcp:                 &mesos.HealthCheck_TCPCheckInfo{Port: proto.Uint32(closedPort(t))},
		DelaySeconds:        proto.Float64(0),
		IntervalSeconds:     proto.Float64(0.02),
		TimeoutSeconds:      proto.Float64(5),
		ConsecutiveFailures: proto.Uint32(2),
		GracePeriodSeconds:  proto.Float64(0),
	}
	a.LaunchGroup(checked, fakeagent.Task("sibling", "sleep 30"))

	for _, id := range []string{"checked", "sibling"} {
		st := a.WaitState(t, id, mesos.TaskState_TASK_KILLED, wait)
		if st.Healthy == nil || st.GetHealthy() {
			t.Errorf("task %s: terminal healthy=%v, want false", id, st.Healthy)
		}
	}
	hs := a.HealthUpdates("checked")
	if len(hs) != 2 {
		t.Fatalf("%d health updates, want 2", len(hs))
	}
	for i, h := range hs {
		if h.GetHealthy() || h.GetReason() != mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED {
			t.Errorf("health update %d: healthy=%v reason=%v", i, h.GetHealthy(), h.GetReason())
		}
	}
	if len(a.HealthUpdates("sibling")) != 0 {
		t.Error("the unchecked sibling got health updates")
	}
	if code := r.WaitExit(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// A COMMAND check runs in the task's own sandbox with its environment.
func TestGroupHealthCheckInTaskSandbox(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	task := fakeagent.Task("web", "touch marker; sleep 30")
	task.HealthCheck = &mesos.HealthCheck{
		Type:               mesos.HealthCheck_COMMAND.Enum(),
		Command:            &mesos.CommandInfo{Value: proto.String(`test -f marker && test "$(basename "$MESOS_SANDBOX")" = web`)},
		DelaySeconds:       proto.Float64(0),
		IntervalSeconds:    proto.Float64(0.02),
		GracePeriodSeconds: proto.Float64(30),
	}
	a.LaunchGroup(task)
	a.WaitFor(t, wait, "a healthy update", func() bool {
		hs := a.HealthUpdates("web")
		return len(hs) > 0 && hs[0].GetHealthy()
	})
	a.Kill("web", 0)
	st := a.WaitState(t, "web", mesos.TaskState_TASK_KILLED, wait)
	if st.Healthy != nil {
		t.Errorf("plain kill of a healthy task has healthy=%v", st.GetHealthy())
	}
	r.WaitExit(t)
}
