package command

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/executorpb"
	mesos "mezzo/api/mesos"
	"mezzo/executor/internal/fakeagent"
)

const wait = 10 * time.Second

// start runs Main in-process against the fake agent, as the agent would
// launch `mezzo executor` for task-1.
func start(t *testing.T, a *fakeagent.Agent, extraEnv ...string) *fakeagent.Running {
	t.Helper()
	return a.Start(t, Main, "task-1", wait, extraEnv...)
}

func statesEqual(got []mesos.TaskState, want ...mesos.TaskState) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestCommandFinished(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.Launch(fakeagent.Task("task-1", "/bin/true"))
	st := a.WaitState(t, "task-1", mesos.TaskState_TASK_FINISHED, wait)
	if code := r.WaitExit(t); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if got := a.States("task-1"); !statesEqual(got, mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_FINISHED) {
		t.Errorf("states %v", got)
	}
	if st.GetMessage() != "Command exited with status 0" {
		t.Errorf("message %q", st.GetMessage())
	}
	seen := map[string]bool{}
	for _, s := range a.Updates() {
		if len(s.GetUuid()) != 16 || seen[string(s.GetUuid())] {
			t.Errorf("update %v: uuid %x not a fresh 16-byte uuid", s.GetState(), s.GetUuid())
		}
		seen[string(s.GetUuid())] = true
		if s.GetSource() != mesos.TaskStatus_SOURCE_EXECUTOR || s.GetExecutorId().GetValue() != "task-1" || s.GetTimestamp() <= 0 {
			t.Errorf("update %v: source %v executor %q timestamp %v", s.GetState(), s.GetSource(), s.GetExecutorId().GetValue(), s.GetTimestamp())
		}
	}
}

func TestCommandExitStatusAndSignal(t *testing.T) {
	tests := []struct {
		name string
		task *mesos.TaskInfo
		msg  string
	}{
		{"shell exit 3", fakeagent.Task("task-1", "exit 3"), "Command exited with status 3"},
		{"exec /bin/false", fakeagent.Task("task-1", "/bin/false", "false"), "Command exited with status 1"},
		{"exec from PATH", fakeagent.Task("task-1", "false", "false"), "Command exited with status 1"},
		{"signal", fakeagent.Task("task-1", "kill -KILL $$"), "Command terminated with signal Killed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := fakeagent.New(t)
			r := start(t, a)
			a.Launch(tt.task)
			st := a.WaitState(t, "task-1", mesos.TaskState_TASK_FAILED, wait)
			if st.GetMessage() != tt.msg {
				t.Errorf("message %q, want %q", st.GetMessage(), tt.msg)
			}
			r.WaitExit(t)
		})
	}
}

func TestCommandLaunchFailure(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.Launch(fakeagent.Task("task-1", "no-such-binary-xyz", "no-such-binary-xyz"))
	st := a.WaitState(t, "task-1", mesos.TaskState_TASK_FAILED, wait)
	if !strings.Contains(st.GetMessage(), "no-such-binary-xyz") {
		t.Errorf("message %q should name the executable", st.GetMessage())
	}
	r.WaitExit(t)
}

func TestCommandKill(t *testing.T) {
	for _, killing := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "TASK_KILLING_STATE"}[killing], func(t *testing.T) {
			a := fakeagent.New(t)
			if killing {
				a.FrameworkInfo = fakeagent.KillingFramework()
			}
			r := start(t, a)
			a.Launch(fakeagent.Task("task-1", "sleep 30"))
			a.WaitState(t, "task-1", mesos.TaskState_TASK_RUNNING, wait)
			a.Kill("task-1", -1)
			st := a.WaitState(t, "task-1", mesos.TaskState_TASK_KILLED, wait)
			if st.GetMessage() != "Command terminated with signal Terminated" {
				t.Errorf("message %q", st.GetMessage())
			}
			want := []mesos.TaskState{mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING}
			if killing {
				want = append(want, mesos.TaskState_TASK_KILLING)
			}
			want = append(want, mesos.TaskState_TASK_KILLED)
			if got := a.States("task-1"); !statesEqual(got, want...) {
				t.Errorf("states %v, want %v", got, want)
			}
			if code := r.WaitExit(t); code != 0 {
				t.Errorf("exit code %d", code)
			}
		})
	}
}

// A task that ignores SIGTERM is SIGKILLed once the KILL's grace period is up.
func TestCommandKillEscalatesToSIGKILL(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.Launch(fakeagent.Task("task-1", `trap "" TERM; touch ready; sleep 30`))
	a.WaitFor(t, wait, "the task to ignore SIGTERM", func() bool {
		_, err := os.Stat(filepath.Join(r.Sandbox, "ready"))
		return err == nil
	})
	a.Kill("task-1", 200*time.Millisecond)
	st := a.WaitState(t, "task-1", mesos.TaskState_TASK_KILLED, wait)
	if st.GetMessage() != "Command terminated with signal Killed" {
		t.Errorf("message %q, want SIGKILL", st.GetMessage())
	}
	r.WaitExit(t)
}

func TestCommandEnvironmentAndSandbox(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a, "FOO=from-executor", "BAR=kept", "MESOS_EXECUTOR_AUTHENTICATION_TOKEN=secret")
	task := fakeagent.Task("task-1", `printf '%s|%s|%s|%s|%s' "$FOO" "$BAR" "$MESOS_SANDBOX" "$(pwd -P)" "${MESOS_EXECUTOR_AUTHENTICATION_TOKEN:-none}" > out`)
	task.Command.Environment = &mesos.Environment{Variables: []*mesos.Environment_Variable{
		{Name: proto.String("FOO"), Value: proto.String("from-task")},
	}}
	a.Launch(task)
	a.WaitState(t, "task-1", mesos.TaskState_TASK_FINISHED, wait)
	r.WaitExit(t)
	b, err := os.ReadFile(filepath.Join(r.Sandbox, "out"))
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(r.Sandbox)
	want := "from-task|kept|" + r.Sandbox + "|" + real + "|none"
	if string(b) != want {
		t.Errorf("task saw %q, want %q", b, want)
	}
}

func TestCommandMaxCompletionTime(t *testing.T) {
	a := fakeagent.New(t)
	a.FrameworkInfo = fakeagent.KillingFramework()
	r := start(t, a)
	task := fakeagent.Task("task-1", "sleep 30")
	task.MaxCompletionTime = &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(100 * time.Millisecond))}
	a.Launch(task)
	st := a.WaitState(t, "task-1", mesos.TaskState_TASK_FAILED, wait)
	if st.GetReason() != mesos.TaskStatus_REASON_MAX_COMPLETION_TIME_REACHED {
		t.Errorf("reason %v", st.GetReason())
	}
	// No TASK_KILLING for a max_completion_time kill.
	if got := a.States("task-1"); !statesEqual(got, mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_FAILED) {
		t.Errorf("states %v", got)
	}
	r.WaitExit(t)
}

func TestCommandShutdown(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.Launch(fakeagent.Task("task-1", "sleep 30"))
	a.WaitState(t, "task-1", mesos.TaskState_TASK_RUNNING, wait)
	a.Shutdown()
	a.WaitState(t, "task-1", mesos.TaskState_TASK_KILLED, wait)
	if code := r.WaitExit(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

func TestCommandSecondLaunchFails(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.Launch(fakeagent.Task("task-1", "sleep 30"))
	a.WaitState(t, "task-1", mesos.TaskState_TASK_RUNNING, wait)
	a.Launch(fakeagent.Task("task-2", "/bin/true"))
	st := a.WaitState(t, "task-2", mesos.TaskState_TASK_FAILED, wait)
	if !strings.Contains(st.GetMessage(), "multiple tasks") {
		t.Errorf("message %q", st.GetMessage())
	}
	a.Kill("task-1", 0)
	a.WaitState(t, "task-1", mesos.TaskState_TASK_KILLED, wait)
	r.WaitExit(t)
}

// The executor stays until the agent has acknowledged the terminal update.
func TestCommandWaitsForTerminalAck(t *testing.T) {
	a := fakeagent.New(t)
	a.NoAutoAck = true
	r := start(t, a)
	a.Launch(fakeagent.Task("task-1", "/bin/true"))
	st := a.WaitState(t, "task-1", mesos.TaskState_TASK_FINISHED, wait)
	if code, exited := r.ExitCode(); exited {
		t.Fatalf("executor exited (%d) before the terminal update was acknowledged", code)
	}
	a.Send(&executorpb.Event{
		Type:         executorpb.Event_ACKNOWLEDGED.Enum(),
		Acknowledged: &executorpb.Event_Acknowledged{TaskId: st.GetTaskId(), Uuid: st.GetUuid()},
	})
	if code := r.WaitExit(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

func TestCommandBadEnvironment(t *testing.T) {
	var log bytes.Buffer
	code := Main(context.Background(), []string{"MESOS_EXECUTOR_ID=x"}, &log)
	if code == 0 || !strings.Contains(log.String(), "MESOS_FRAMEWORK_ID") {
		t.Errorf("Main = %d, log %q; want failure naming MESOS_FRAMEWORK_ID", code, log.String())
	}
}

// Without an agent to talk to (and no checkpointing) the executor gives up
// at once and fails.
func TestCommandAgentUnreachable(t *testing.T) {
	a := fakeagent.New(t)
	env := a.Env("task-1", t.TempDir())
	a.Down()
	var log fakeagent.LockedBuffer
	done := make(chan int, 1)
	go func() { done <- Main(context.Background(), env, &log) }()
	select {
	case code := <-done:
		if code == 0 {
			t.Errorf("exit code 0 with no agent; log:\n%s", log.String())
		}
	case <-time.After(wait):
		t.Fatal("executor did not give up on an unreachable agent")
	}
}
