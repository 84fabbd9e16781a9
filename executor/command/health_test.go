package command

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/executor/internal/fakeagent"
)

// healthServer answers every request with status and returns its port.
func healthServer(t *testing.T, status int) uint32 {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return uint32(port)
}

// httpHealthCheck checks at once and then every 20ms, with no grace period.
func httpHealthCheck(port uint32, failures uint32) *mesos.HealthCheck {
	return &mesos.HealthCheck{
		Type:                mesos.HealthCheck_HTTP.Enum(),
		Http:                &mesos.HealthCheck_HTTPCheckInfo{Port: proto.Uint32(port), Path: proto.String("/health")},
		DelaySeconds:        proto.Float64(0),
		IntervalSeconds:     proto.Float64(0.02),
		TimeoutSeconds:      proto.Float64(5),
		ConsecutiveFailures: proto.Uint32(failures),
		GracePeriodSeconds:  proto.Float64(0),
	}
}

// An HTTP health check that keeps failing gets the task killed after
// consecutive_failures checks, as in Mesos: one unhealthy TASK_RUNNING per
// failure, then TASK_KILLING (for frameworks that take it) and TASK_KILLED
// with healthy=false.
func TestCommandFailingHealthCheckKillsTask(t *testing.T) {
	a := fakeagent.New(t)
	a.FrameworkInfo = fakeagent.KillingFramework()
	r := start(t, a)
	task := fakeagent.Task("task-1", "sleep 30")
	task.HealthCheck = httpHealthCheck(healthServer(t, http.StatusInternalServerError), 3)
	a.Launch(task)

	st := a.WaitState(t, "task-1", mesos.TaskState_TASK_KILLED, wait)
	if st.Healthy == nil || st.GetHealthy() {
		t.Errorf("terminal update healthy=%v, want false", st.Healthy)
	}
	if st.GetMessage() != "Command terminated with signal Terminated" {
		t.Errorf("terminal message %q", st.GetMessage())
	}
	want := []mesos.TaskState{
		mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING,
		mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_RUNNING,
		mesos.TaskState_TASK_KILLING, mesos.TaskState_TASK_KILLED,
	}
	if got := a.States("task-1"); !statesEqual(got, want...) {
		t.Errorf("states %v, want %v", got, want)
	}
	hs := a.HealthUpdates("task-1")
	if len(hs) != 3 {
		t.Fatalf("%d health updates, want 3", len(hs))
	}
	for i, h := range hs {
		if h.GetHealthy() || h.GetReason() != mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED {
			t.Errorf("health update %d: healthy=%v reason=%v", i, h.GetHealthy(), h.GetReason())
		}
	}
	if code := r.WaitExit(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// A passing health check reports healthy once; a later kill is a plain kill.
func TestCommandPassingHealthCheck(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	task := fakeagent.Task("task-1", "sleep 30")
	task.HealthCheck = httpHealthCheck(healthServer(t, http.StatusOK), 1)
	a.Launch(task)
	a.WaitFor(t, wait, "a healthy update", func() bool { return len(a.HealthUpdates("task-1")) > 0 })
	a.Kill("task-1", 0)
	st := a.WaitState(t, "task-1", mesos.TaskState_TASK_KILLED, wait)
	if st.Healthy != nil {
		t.Errorf("terminal update of a healthy task has healthy=%v", st.GetHealthy())
	}
	hs := a.HealthUpdates("task-1")
	if len(hs) != 1 || !hs[0].GetHealthy() || hs[0].GetReason() != mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED {
		t.Errorf("health updates %v, want one healthy", hs)
	}
	r.WaitExit(t)
}

// A COMMAND health check runs with the task's environment in the sandbox.
func TestCommandHealthCheckCommand(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	task := fakeagent.Task("task-1", "touch marker; sleep 30")
	task.Command.Environment = &mesos.Environment{Variables: []*mesos.Environment_Variable{
		{Name: proto.String("TASK_ONLY"), Value: proto.String("yes")},
	}}
	task.HealthCheck = &mesos.HealthCheck{
		Type:               mesos.HealthCheck_COMMAND.Enum(),
		Command:            &mesos.CommandInfo{Value: proto.String(`test "$TASK_ONLY" = yes && test -f marker`)},
		DelaySeconds:       proto.Float64(0),
		IntervalSeconds:    proto.Float64(0.02),
		GracePeriodSeconds: proto.Float64(30), // until marker exists
	}
	a.Launch(task)
	a.WaitFor(t, wait, "a healthy update", func() bool {
		hs := a.HealthUpdates("task-1")
		return len(hs) > 0 && hs[0].GetHealthy()
	})
	a.Kill("task-1", 0)
	a.WaitState(t, "task-1", mesos.TaskState_TASK_KILLED, wait)
	r.WaitExit(t)
}
