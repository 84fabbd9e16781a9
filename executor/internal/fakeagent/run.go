package fakeagent

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
)

// LockedBuffer collects an executor's log from its goroutines.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// MainFunc is a built-in executor's Main.
type MainFunc func(ctx context.Context, environ []string, stderr io.Writer) int

// Running is an executor that Start runs in-process against the agent.
type Running struct {
	Sandbox string
	Log     *LockedBuffer
	exit    chan int
	timeout time.Duration
}

// Start runs main in its own goroutine with the environment the agent
// would give executor executorID (and extraEnv), in a fresh sandbox, and
// waits up to timeout for it to subscribe. On cleanup the executor is
// cancelled and, if the test failed, its log is printed.
func (a *Agent) Start(t testing.TB, main MainFunc, executorID string, timeout time.Duration, extraEnv ...string) *Running {
	t.Helper()
	r := &Running{Sandbox: t.TempDir(), exit: make(chan int, 1), Log: &LockedBuffer{}, timeout: timeout}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.exit <- main(ctx, a.Env(executorID, r.Sandbox, extraEnv...), r.Log) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.exit:
		case <-time.After(timeout):
			t.Errorf("executor did not return after cancel")
		}
		if t.Failed() {
			t.Logf("executor log:\n%s", r.Log.String())
		}
	})
	a.WaitSubscribed(t, 1, timeout)
	return r
}

// WaitExit waits for the executor to return and gives its exit code.
func (r *Running) WaitExit(t testing.TB) int {
	t.Helper()
	select {
	case code := <-r.exit:
		r.exit <- code // let Cleanup and later calls see it too
		return code
	case <-time.After(r.timeout):
		t.Fatalf("executor did not exit; log:\n%s", r.Log.String())
	}
	return -1
}

// Exited says whether the executor has returned.
func (r *Running) Exited() bool {
	_, ok := r.ExitCode()
	return ok
}

// ExitCode is the executor's exit code, if it has returned, without waiting.
func (r *Running) ExitCode() (int, bool) {
	select {
	case code := <-r.exit:
		r.exit <- code
		return code, true
	default:
		return 0, false
	}
}

// HealthUpdates are the task's health updates: TASK_RUNNING with healthy set.
func (a *Agent) HealthUpdates(taskID string) []*mesos.TaskStatus {
	var out []*mesos.TaskStatus
	for _, st := range a.Updates() {
		if st.GetTaskId().GetValue() == taskID && st.Healthy != nil && st.GetState() == mesos.TaskState_TASK_RUNNING {
			out = append(out, st)
		}
	}
	return out
}

// KillingFramework is a FrameworkInfo with the TASK_KILLING_STATE
// capability, for tests that expect TASK_KILLING before TASK_KILLED.
func KillingFramework() *mesos.FrameworkInfo {
	return &mesos.FrameworkInfo{
		User: proto.String("root"), Name: proto.String("fw"),
		Capabilities: []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_TASK_KILLING_STATE.Enum()}},
	}
}
