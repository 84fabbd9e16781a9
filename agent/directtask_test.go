package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// sandboxFile reads a file of the latest run of executor exec (framework F1).
func sandboxFile(t *testing.T, ta *testAgent, exec, name string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(ta.dir, "slaves", "*", "frameworks", "F1", "executors", exec, "runs", "latest", name))
	if len(matches) != 1 {
		t.Fatalf("sandbox file %s of %s: found %v", name, exec, matches)
	}
	return readFile(t, matches[0])
}

// Command tasks of a framework that does not checkpoint run with no
// executor process (the launcher does not even exist here): the agent
// sends STARTING, RUNNING with the task's pid, and the terminal update
// from the exit status, all from SOURCE_EXECUTOR; the task runs in the
// executor's environment in its sandbox, shell or argv form; a kill ends
// it TASK_KILLING then TASK_KILLED.
func TestDirectCommandTasks(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, func(c *Config) {
		c.DirectCommandTasks = true
		c.LauncherPath = "/nonexistent/mezzo"
	})
	sub := register(t, m, 1)
	fw := frameworkInfo("F1")
	fw.Capabilities = []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_TASK_KILLING_STATE.Enum()}}

	sub.send(runTask(fw, commandTask("ok", `echo "out $MESOS_EXECUTOR_ID $MESOS_FRAMEWORK_ID $(basename "$PWD")"; echo err >&2`), 1))
	waitUpdate(t, m, sub, "ok", mesos.TaskState_TASK_STARTING)
	running := waitUpdate(t, m, sub, "ok", mesos.TaskState_TASK_RUNNING)
	if running.GetContainerStatus().GetExecutorPid() == 0 || running.GetExecutorId().GetValue() != "ok" {
		t.Errorf("TASK_RUNNING without the task's pid or executor id: %v", running)
	}
	done := waitUpdate(t, m, sub, "ok", mesos.TaskState_TASK_FINISHED)
	if done.GetMessage() != "Command exited with status 0" {
		t.Errorf("TASK_FINISHED message %q", done.GetMessage())
	}
	out := sandboxFile(t, ta, "ok", "stdout")
	if !strings.HasPrefix(out, "out ok F1 ") || sandboxFile(t, ta, "ok", "stderr") != "err\n" {
		t.Errorf("stdout %q, stderr %q", out, sandboxFile(t, ta, "ok", "stderr"))
	}

	sub.send(runTask(fw, commandTask("bad", "exit 3"), 1))
	// Each update waits for the acknowledgement of the one before.
	waitUpdate(t, m, sub, "bad", mesos.TaskState_TASK_STARTING)
	waitUpdate(t, m, sub, "bad", mesos.TaskState_TASK_RUNNING)
	if st := waitUpdate(t, m, sub, "bad", mesos.TaskState_TASK_FAILED); st.GetMessage() != "Command exited with status 3" {
		t.Errorf("TASK_FAILED message %q", st.GetMessage())
	}

	argv := commandTask("argv", "/bin/echo")
	argv.Command.Shell = proto.Bool(false)
	argv.Command.Arguments = []string{"echo", "two  spaces", "$HOME"}
	sub.send(runTask(fw, argv, 1))
	waitUpdate(t, m, sub, "argv", mesos.TaskState_TASK_STARTING)
	waitUpdate(t, m, sub, "argv", mesos.TaskState_TASK_RUNNING)
	waitUpdate(t, m, sub, "argv", mesos.TaskState_TASK_FINISHED)
	if out := sandboxFile(t, ta, "argv", "stdout"); out != "two  spaces $HOME\n" {
		t.Errorf("argv task printed %q", out)
	}

	sub.send(runTask(fw, commandTask("long", "sleep 1000"), 1))
	waitUpdate(t, m, sub, "long", mesos.TaskState_TASK_STARTING)
	waitUpdate(t, m, sub, "long", mesos.TaskState_TASK_RUNNING)
	sub.send(killTask("F1", "long", 1))
	waitUpdate(t, m, sub, "long", mesos.TaskState_TASK_KILLING)
	waitUpdate(t, m, sub, "long", mesos.TaskState_TASK_KILLED)
}

// Tasks that need an executor process get one: those of checkpointing
// frameworks (they must survive an agent restart) and those with a COMMAND
// health check. With no launcher to run, their launch fails, which direct
// tasks never attempt.
func TestCommandTasksThatNeedAnExecutor(t *testing.T) {
	m := newFakeMaster(t)
	startTestAgent(t, m, func(c *Config) {
		c.DirectCommandTasks = true
		c.LauncherPath = "/nonexistent/mezzo"
	})
	sub := register(t, m, 1)
	checkpointing := frameworkInfo("F1")
	checkpointing.Checkpoint = proto.Bool(true)
	sub.send(runTask(checkpointing, commandTask("kept", "true"), 1))
	plain := frameworkInfo("F1")
	checked := commandTask("checked", "true")
	checked.HealthCheck = &mesos.HealthCheck{Type: mesos.HealthCheck_COMMAND.Enum(), Command: &mesos.CommandInfo{Value: proto.String("true")}}
	sub.send(runTask(plain, checked, 1))
	for _, id := range []string{"kept", "checked"} {
		c := m.waitCall(t, id+" failing to launch its executor", updateFor(id, mesos.TaskState_TASK_FAILED))
		if st := c.GetStatusUpdate().GetStatus(); st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED {
			t.Errorf("%s: %v, want REASON_CONTAINER_LAUNCH_FAILED", id, st)
		}
	}
}
