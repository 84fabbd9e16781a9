package group

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/executor/internal/fakeagent"
)

const wait = 10 * time.Second

func start(t *testing.T, a *fakeagent.Agent) *fakeagent.Running {
	t.Helper()
	return a.Start(t, Main, "default-ex", wait)
}

func last(a *fakeagent.Agent, id string) mesos.TaskState {
	s := a.States(id)
	if len(s) == 0 {
		return -1
	}
	return s[len(s)-1]
}

func TestGroupAllFinish(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.LaunchGroup(
		fakeagent.Task("a", `echo out-a; echo err-a >&2; printf '%s' "$MESOS_SANDBOX|$(pwd -P)" > where`),
		fakeagent.Task("b", "/bin/true"),
	)
	a.WaitState(t, "a", mesos.TaskState_TASK_FINISHED, wait)
	a.WaitState(t, "b", mesos.TaskState_TASK_FINISHED, wait)
	if code := r.WaitExit(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
	for _, id := range []string{"a", "b"} {
		got := a.States(id)
		want := []mesos.TaskState{mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_FINISHED}
		if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("task %s states %v, want %v", id, got, want)
		}
	}
	dir := filepath.Join(r.Sandbox, "tasks", "a")
	for file, want := range map[string]string{"stdout": "out-a\n", "stderr": "err-a\n"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "where"))
	real, _ := filepath.EvalSymlinks(dir)
	if string(b) != dir+"|"+real {
		t.Errorf("task saw sandbox|cwd %q, want %q", b, dir+"|"+real)
	}
}

// One failing task brings the rest of its group down (killed).
func TestGroupFailureKillsOthers(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.LaunchGroup(
		fakeagent.Task("sleeper", "sleep 30"),
		fakeagent.Task("failer", "exit 2"),
	)
	st := a.WaitState(t, "failer", mesos.TaskState_TASK_FAILED, wait)
	if st.GetMessage() != "Command exited with status 2" {
		t.Errorf("message %q", st.GetMessage())
	}
	a.WaitState(t, "sleeper", mesos.TaskState_TASK_KILLED, wait)
	if code := r.WaitExit(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// A KILL of one task kills the whole group; TASK_KILLING goes to frameworks
// that understand it.
func TestGroupKillOneKillsGroup(t *testing.T) {
	a := fakeagent.New(t)
	a.FrameworkInfo = fakeagent.KillingFramework()
	r := start(t, a)
	a.LaunchGroup(fakeagent.Task("x", "sleep 30"), fakeagent.Task("y", "sleep 30"))
	a.WaitState(t, "x", mesos.TaskState_TASK_RUNNING, wait)
	a.WaitState(t, "y", mesos.TaskState_TASK_RUNNING, wait)
	a.Kill("x", -1)
	a.WaitState(t, "x", mesos.TaskState_TASK_KILLED, wait)
	a.WaitState(t, "y", mesos.TaskState_TASK_KILLED, wait)
	for _, id := range []string{"x", "y"} {
		got := a.States(id)
		if len(got) != 4 || got[2] != mesos.TaskState_TASK_KILLING {
			t.Errorf("task %s states %v, want STARTING RUNNING KILLING KILLED", id, got)
		}
	}
	r.WaitExit(t)
}

// Several groups share one executor; a failure in one leaves the other alone,
// and the executor stays until every task is terminal.
func TestGroupSeveralGroups(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.LaunchGroup(fakeagent.Task("g1-long", "sleep 30"))
	a.WaitState(t, "g1-long", mesos.TaskState_TASK_RUNNING, wait)
	a.LaunchGroup(fakeagent.Task("g2-fail", "exit 1"), fakeagent.Task("g2-sleep", "sleep 30"))
	a.WaitState(t, "g2-sleep", mesos.TaskState_TASK_KILLED, wait)
	if got := last(a, "g1-long"); got != mesos.TaskState_TASK_RUNNING {
		t.Errorf("g1-long is %v; a failure in another group must not kill it", got)
	}
	if r.Exited() {
		t.Fatal("executor exited while a task was still running")
	}
	a.Kill("g1-long", 0)
	a.WaitState(t, "g1-long", mesos.TaskState_TASK_KILLED, wait)
	r.WaitExit(t)
}

// A task that ignores SIGTERM is SIGKILLed after its kill policy's grace
// period.
func TestGroupKillEscalation(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	task := fakeagent.Task("stubborn", `trap "" TERM; touch ready; sleep 30`)
	task.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(150 * time.Millisecond))}}
	a.LaunchGroup(task)
	a.WaitFor(t, wait, "the task to ignore SIGTERM", func() bool {
		_, err := os.Stat(filepath.Join(r.Sandbox, "tasks", "stubborn", "ready"))
		return err == nil
	})
	a.Kill("stubborn", -1)
	st := a.WaitState(t, "stubborn", mesos.TaskState_TASK_KILLED, wait)
	if st.GetMessage() != "Command terminated with signal Killed" {
		t.Errorf("message %q, want SIGKILL", st.GetMessage())
	}
	r.WaitExit(t)
}

func TestGroupShutdown(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	a.LaunchGroup(fakeagent.Task("s1", "sleep 30"), fakeagent.Task("s2", "sleep 30"))
	a.WaitState(t, "s1", mesos.TaskState_TASK_RUNNING, wait)
	a.WaitState(t, "s2", mesos.TaskState_TASK_RUNNING, wait)
	a.Shutdown()
	a.WaitState(t, "s1", mesos.TaskState_TASK_KILLED, wait)
	a.WaitState(t, "s2", mesos.TaskState_TASK_KILLED, wait)
	if code := r.WaitExit(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

func TestGroupLaunchFailure(t *testing.T) {
	a := fakeagent.New(t)
	r := start(t, a)
	bad := fakeagent.Task("bad", "")
	bad.Command = nil
	a.LaunchGroup(fakeagent.Task("ok", "sleep 30"), bad)
	st := a.WaitState(t, "bad", mesos.TaskState_TASK_FAILED, wait)
	if !strings.Contains(st.GetMessage(), "no command") || st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED {
		t.Errorf("bad task: %q %v", st.GetMessage(), st.GetReason())
	}
	a.WaitState(t, "ok", mesos.TaskState_TASK_KILLED, wait)
	r.WaitExit(t)
}
