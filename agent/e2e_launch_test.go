package agent

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
	"mezzo/scheduler"
)

// e2eLaunch subscribes a checkpointing framework to master, launches
// tasks (AgentId and Resources cpus:0.1;mem:32 filled in) on the first
// offer, and returns each task's terminal status, acknowledging every
// update.
func e2eLaunch(t *testing.T, master string, tasks ...*mesos.TaskInfo) map[string]*mesos.TaskStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	name := "root"
	if u, err := user.Current(); err == nil {
		name = u.Username // the agent runs tasks as the framework's user
	}
	client := scheduler.New(scheduler.Config{Masters: []string{master}, Framework: &mesos.FrameworkInfo{
		User: proto.String(name), Name: proto.String("e2e-launch"), Checkpoint: proto.Bool(true)}})
	events, err := client.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Teardown(context.Background())
	res, err := resources.Parse("cpus:0.1;mem:32", "*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mesos.TaskStatus{}
	launched := false
	for len(out) < len(tasks) {
		var ev *schedulerpb.Event
		select {
		case ev = <-events:
		case <-ctx.Done():
			t.Fatalf("terminal updates so far %v; %v", out, ctx.Err())
		}
		if ev == nil {
			t.Fatalf("subscription ended: %v", client.Err())
		}
		switch ev.GetType() {
		case schedulerpb.Event_OFFERS:
			for _, o := range ev.GetOffers().GetOffers() {
				if launched {
					client.Decline(ctx, []*mesos.OfferID{o.GetId()}, scheduler.RefuseFor(3600))
					continue
				}
				launched = true
				for _, task := range tasks {
					task.AgentId = o.GetAgentId()
					task.Resources = res.Proto()
				}
				if err := client.Launch(ctx, []*mesos.OfferID{o.GetId()}, tasks, nil); err != nil {
					t.Fatal(err)
				}
			}
		case schedulerpb.Event_UPDATE:
			st := ev.GetUpdate().GetStatus()
			client.Acknowledge(ctx, st)
			switch st.GetState() {
			case mesos.TaskState_TASK_STAGING, mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING:
			default:
				out[st.GetTaskId().GetValue()] = st
			}
		}
	}
	return out
}

func shellTask(id, cmd string) *mesos.TaskInfo {
	return &mesos.TaskInfo{Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)},
		Command: &mesos.CommandInfo{Value: proto.String(cmd)}}
}

// The fetcher's local-path rule and SECRET variables, on the real binary
// (a master, an agent with --fetcher_allowed_dirs, a framework speaking
// the scheduler API; the tasks run under the command executor):
//   - file:///etc/shadow is refused: TASK_FAILED, REASON_CONTAINER_LAUNCH_FAILED,
//     a message saying the fetcher refused it;
//   - a file under --fetcher_allowed_dirs is fetched with its own mode;
//   - a VALUE secret is in the task's environment;
//   - a REFERENCE secret fails the task with the same reason.
func TestE2EFetcherAndSecrets(t *testing.T) {
	bin, _ := e2eBinaries(t)
	allowed := t.TempDir()
	if err := os.WriteFile(filepath.Join(allowed, "tool"), []byte("tool-bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(allowed, "tool"), 0o750)
	c := startE2ECluster(t, bin, "", "--fetcher_allowed_dirs="+allowed)

	shadow := shellTask("shadow", "true")
	shadow.Command.Uris = []*mesos.CommandInfo_URI{{Value: proto.String("file:///etc/shadow")}}
	outside := shellTask("outside", "true")
	outside.Command.Uris = []*mesos.CommandInfo_URI{{Value: proto.String(bin)}} // exists, not under the allowed dir
	tool := shellTask("tool", `test "$(stat -c %a tool)" = 750 && test "$(cat tool)" = tool-bytes`)
	tool.Command.Uris = []*mesos.CommandInfo_URI{{Value: proto.String("file://" + filepath.Join(allowed, "tool"))}}
	secret := shellTask("secret", `test "$DB_PASSWORD" = hunter2-e2e`)
	secret.Command.Environment = &mesos.Environment{Variables: []*mesos.Environment_Variable{{
		Name: proto.String("DB_PASSWORD"), Type: mesos.Environment_Variable_SECRET.Enum(),
		Secret: &mesos.Secret{Type: mesos.Secret_VALUE.Enum(), Value: &mesos.Secret_Value{Data: []byte("hunter2-e2e")}},
	}}}
	ref := shellTask("ref", "true")
	ref.Command.Environment = &mesos.Environment{Variables: []*mesos.Environment_Variable{{
		Name: proto.String("TOKEN"), Type: mesos.Environment_Variable_SECRET.Enum(),
		Secret: &mesos.Secret{Type: mesos.Secret_REFERENCE.Enum(), Reference: &mesos.Secret_Reference{Name: proto.String("vault/token")}},
	}}}

	got := e2eLaunch(t, c.master, shadow, outside, tool, secret, ref)
	for _, tc := range []struct {
		id     string
		state  mesos.TaskState
		reason mesos.TaskStatus_Reason
		msg    []string
	}{
		{"shadow", mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED,
			[]string{"the fetcher refused local path", "/etc/shadow"}},
		{"outside", mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED,
			[]string{"the fetcher refused local path", "not under --fetcher_allowed_dirs (" + allowed + ")"}},
		{"tool", mesos.TaskState_TASK_FINISHED, mesos.TaskStatus_REASON_COMMAND_EXECUTOR_FAILED, nil},
		{"secret", mesos.TaskState_TASK_FINISHED, mesos.TaskStatus_REASON_COMMAND_EXECUTOR_FAILED, nil},
		{"ref", mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED,
			[]string{`cannot resolve secret reference "vault/token"`, "no secret resolver"}},
	} {
		st := got[tc.id]
		if st.GetState() != tc.state || (tc.state != mesos.TaskState_TASK_FINISHED && st.GetReason() != tc.reason) {
			t.Errorf("%s: %v %v %q, want %v %v", tc.id, st.GetState(), st.GetReason(), st.GetMessage(), tc.state, tc.reason)
		}
		for _, m := range tc.msg {
			if !strings.Contains(st.GetMessage(), m) {
				t.Errorf("%s: message %q lacks %q", tc.id, st.GetMessage(), m)
			}
		}
	}
	if strings.Contains(c.agent.log.String(), "hunter2-e2e") {
		t.Error("the agent logged the secret's data")
	}
}
