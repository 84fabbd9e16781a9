package agent

import (
	"os"
	"path/filepath"
	"testing"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// TestCacheOnly: only a non-checkpointing framework's records skip the
// fsyncs, and only when the boot id (which discards them after a host
// crash) is known.
func TestCacheOnly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		checkpoint bool
		bootID     string
		want       bool
	}{
		{"non-checkpointing, boot id known", false, "b1", true},
		{"checkpointing", true, "b1", false},
		{"non-checkpointing, no boot id", false, "", false},
		{"checkpointing, no boot id", true, "", false},
	} {
		fw := &framework{info: &mesos.FrameworkInfo{Checkpoint: proto.Bool(tc.checkpoint)}}
		if got := cacheOnly(fw, tc.bootID); got != tc.want {
			t.Errorf("%s: cacheOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWriteFileBothModes: synced or not, the file is replaced whole and
// no temp file is left behind.
func TestWriteFileBothModes(t *testing.T) {
	for _, sync := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, "sub", "f")
		for _, content := range []string{"first", "second, longer"} {
			if err := writeFile(path, []byte(content), sync); err != nil {
				t.Fatalf("sync=%v: %v", sync, err)
			}
			b, err := os.ReadFile(path)
			if err != nil || string(b) != content {
				t.Fatalf("sync=%v: read %q, %v; want %q", sync, b, err, content)
			}
		}
		ents, _ := os.ReadDir(filepath.Dir(path))
		if len(ents) != 1 {
			t.Errorf("sync=%v: %d entries left in the directory, want 1", sync, len(ents))
		}
		if err := writeFile(filepath.Join(path, "under-a-file"), []byte("x"), sync); err == nil {
			t.Errorf("sync=%v: writing under a regular file succeeded", sync)
		}
	}
}

// TestUnsyncedRecordsRecover: executor and task records written without
// fsync are recovered like synced ones after an agent (not host) restart.
func TestUnsyncedRecordsRecover(t *testing.T) {
	m := metaDir(t.TempDir())
	agentInfo := &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String("a1")}, Hostname: proto.String("h")}
	if err := m.checkpointAgent(agentInfo, "boot", 1); err != nil {
		t.Fatal(err)
	}
	fwInfo := &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String("f1")}, User: proto.String("u"), Name: proto.String("n")}
	if err := m.checkpointFramework("a1", fwInfo); err != nil {
		t.Fatal(err)
	}
	ei := &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("e1")}}
	if err := m.checkpointExecutor("a1", "f1", ei, kindCommand, "c1", false); err != nil {
		t.Fatal(err)
	}
	ti := &mesos.TaskInfo{TaskId: &mesos.TaskID{Value: proto.String("t1")}, Name: proto.String("t"), AgentId: &mesos.AgentID{Value: proto.String("a1")}}
	if err := m.checkpointTask("a1", "f1", "e1", "c1", ti, false); err != nil {
		t.Fatal(err)
	}
	r, err := recoverMeta(m, m, "boot", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.frameworks) != 1 || len(r.frameworks[0].executors) != 1 || len(r.frameworks[0].executors[0].tasks) != 1 {
		t.Fatalf("recovered %+v, want one framework with one executor with one task", r.frameworks)
	}
	if r2, err := recoverMeta(m, m, "other-boot", nil); err != nil || !r2.rebooted || len(r2.frameworks) != 0 {
		t.Fatalf("after a reboot: rebooted=%v frameworks=%d err=%v; want the checkpoint discarded", r2.rebooted, len(r2.frameworks), err)
	}
}
