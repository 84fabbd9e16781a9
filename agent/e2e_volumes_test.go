package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// The real `mezzo agent` binary against the in-process fake master: the
// master's CHECKPOINT_RESOURCES reserves and creates a volume, a task
// writes to it, the agent is killed with SIGKILL and restarted, reports
// the reservation and volume in its SUBSCRIBE, and the next task reads
// the data; restarted with too little disk it refuses to start, naming
// the volume. With --isolation=filesystem/linux when this host allows it
// (root), else the default (symlinks).
func TestE2EVolumesSurviveAgentKill(t *testing.T) {
	bin, _ := e2eBinaries(t)
	m := newFakeMaster(t)
	dir := t.TempDir()
	args := []string{"agent", "--master=" + m.addr(), "--ip=127.0.0.1", fmt.Sprintf("--port=%d", freePort(t)),
		"--work_dir=" + dir, "--hostname=agent.test"}
	resFlag := "--resources=cpus:2;mem:1024;disk:1000;ports:[31000-32000]"
	if checkMountNamespacesForTest() == nil {
		args = append(args, "--isolation=filesystem/linux")
	}
	agent := startE2E(t, bin, append(args, resFlag)...)
	sub := register(t, m, 1)

	vol := persistentVolume("db", "v1", "data", 300)
	set := []*mesos.Resource{reservedCPUs("db", 1), vol}
	sub.send(checkpointResourcesEvent(1, set...))
	fw := frameworkInfo("F1")
	sub.send(runTask(fw, volumeTask("writer", "echo survived > data/f", vol), 1))
	finishes(t, m, sub, "writer")
	volDir := filepath.Join(dir, "volumes", "roles", "db", "v1")
	if got := readFile(t, filepath.Join(volDir, "f")); got != "survived\n" {
		t.Fatalf("the volume holds %q", got)
	}

	agent.cmd.Process.Signal(syscall.SIGKILL)
	agent.wait(t, 10*time.Second)
	startE2E(t, bin, append(args, resFlag)...)
	sub = m.nextSub(t)
	got, err := resources.FromProto(sub.call.GetSubscribe().GetCheckpointedResources())
	want, _ := resources.FromProto(set)
	if err != nil || !got.Equal(want) {
		t.Fatalf("SUBSCRIBE after kill -9: checkpointed %s (%v), want %s", got, err, want)
	}
	sub.send(&protocol.AgentEvent{Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(1),
		Subscribed: &protocol.AgentEvent_Subscribed{AgentId: agentIDProto("S1")}})
	sub.send(runTask(fw, volumeTask("reader", `test "$(cat data/f)" = survived`, vol), 1))
	finishes(t, m, sub, "reader")
}

// The real binary refuses to start when --resources cannot hold its
// checkpointed reservations, with an error naming the resource and the fix.
func TestE2EConflictingResourcesRefused(t *testing.T) {
	bin, _ := e2eBinaries(t)
	dir := t.TempDir()
	meta := metaDir(filepath.Join(dir, "meta"))
	set, _ := resources.New(persistentVolume("db", "v1", "data", 300))
	if err := writeProto(meta.resourcesInfoPath(), &protocol.AgentEvent_CheckpointResources{Resources: set.Proto()}); err != nil {
		t.Fatal(err)
	}
	p := startE2E(t, bin, "agent", "--master=127.0.0.1:1", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", freePort(t)),
		"--work_dir="+dir, "--resources=cpus:2;mem:1024;disk:200;ports:[31000-32000]")
	if code := p.wait(t, 30*time.Second); code == 0 {
		t.Fatal("the agent started with too little disk for its volume")
	}
	out := p.log.String() + p.out.String()
	for _, want := range []string{"[v1,data:RW]:300", "disk:100 is missing", "restart with --resources", meta.resourcesInfoPath()} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(meta.resourcesInfoPath()); err != nil {
		t.Errorf("the refused start touched the checkpoint: %v", err)
	}
}
