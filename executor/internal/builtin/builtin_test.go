package builtin

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	mesos "mezzo/api/mesos"
	"mezzo/executor"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		code    int
		want    int
		wantLog string
	}{
		{"clean end", nil, 0, 0, ""},
		{"clean end with the executor's code", nil, 1, 1, ""},
		{"shutdown timeout", fmt.Errorf("loop: %w", executor.ErrShutdownTimeout), 0, 1, "grace elapsed"},
		{"other error", errors.New("agent gone"), 0, 1, "agent gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log []string
			logf := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
			if got := ExitCode(tt.err, tt.code, logf, "grace elapsed"); got != tt.want {
				t.Errorf("ExitCode = %d, want %d", got, tt.want)
			}
			if got := strings.Join(log, "\n"); got != tt.wantLog {
				t.Errorf("log %q, want %q", got, tt.wantLog)
			}
		})
	}
}

func TestMainBadEnvironment(t *testing.T) {
	var stderr bytes.Buffer
	ran := false
	code := Main("mezzo test-executor", []string{"MESOS_EXECUTOR_ID=x"}, &stderr, func(executor.Config, Logf) int {
		ran = true
		return 0
	})
	if code != 1 || ran || !strings.HasPrefix(stderr.String(), "mezzo test-executor: ") {
		t.Errorf("Main = %d, ran=%v, stderr %q; want 1 without running, prefixed message", code, ran, stderr.String())
	}
}

func TestNewStatus(t *testing.T) {
	id := &mesos.TaskID{Value: new(string)}
	if st := NewStatus(id, mesos.TaskState_TASK_RUNNING, nil, ""); st.Message != nil || st.GetState() != mesos.TaskState_TASK_RUNNING {
		t.Errorf("empty message: %v", st)
	}
	if st := NewStatus(id, mesos.TaskState_TASK_FAILED, nil, "boom"); st.GetMessage() != "boom" {
		t.Errorf("message %q", st.GetMessage())
	}
	if st := HealthStatus(id, false); st.Healthy == nil || st.GetHealthy() ||
		st.GetReason() != mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED || st.GetState() != mesos.TaskState_TASK_RUNNING {
		t.Errorf("health status %v", st)
	}
}

func TestDiscard(t *testing.T) {
	Discard(nil)("dropped %d", 1) // must not panic
	called := false
	Discard(func(string, ...any) { called = true })("x")
	if !called {
		t.Error("Discard replaced a non-nil logger")
	}
}
