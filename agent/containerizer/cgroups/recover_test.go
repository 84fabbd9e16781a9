package cgroups

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"mezzo/api/mesos"
)

// A container re-attached after an agent restart: a fresh Manager (the new
// agent process) that Recovers its memory cgroup reports its OOM kill on
// Watch, as for a container it prepared itself.
func TestV1RecoverDetectsOOM(t *testing.T) {
	m := testV1(t, Config{})
	id := "0b6f2a4e-1111-4c3e-9d2b-6a7e8f9a0b1c"
	startIn(t, m, id, res(0.1, 32), helper("sleep"), CPU, Memory)

	m2, err := NewManager(m.cfg) // the restarted agent's
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Controller{CPU, Memory} {
		if err := m2.Recover(id, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := m2.Recover(id, Memory); err != nil { // idempotent
		t.Fatal(err)
	}
	watch := m2.Watch(id)
	// A process of the container starts allocating past the limit.
	hog := helper("alloc", "MEZZO_CGTEST_MB=200", "MEZZO_CGTEST_CGROUP=freezer:"+m.relPath(id))
	hog.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hog.Process.Kill(); _ = hog.Wait() }()
	if err := m2.Isolate(id, hog.Process.Pid); err != nil {
		t.Fatal(err)
	}
	select {
	case l, ok := <-watch:
		if !ok || l.Reason != mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY {
			t.Fatalf("watch gave %+v, %v; want a memory limitation", l, ok)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no OOM limitation for the recovered container within 20s")
	}
	for _, c := range []Controller{CPU, Memory} {
		if err := m2.Release(id, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := <-watch; ok {
		t.Error("watch channel not closed after Release")
	}
	for _, p := range m2.Paths(id) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Release", p)
		}
	}
}

// Recover of a container without cgroups holds nothing.
func TestV1RecoverWithoutCgroups(t *testing.T) {
	m := testV1(t, Config{})
	if err := m.Recover("8d1f6b0e-2222-4c3e-9d2b-6a7e8f9a0b1c", Memory); err != nil {
		t.Fatal(err)
	}
	if len(m.groups) != 0 {
		t.Errorf("groups = %v, want none", m.groups)
	}
	if err := m.Recover("../x", Memory); err == nil {
		t.Error("Recover accepted a bad id")
	}
}

// Sweep kills and removes the container cgroups nobody knows (orphans),
// keeping the known ones, the ones this process holds, and directories
// not named like containers (another agent's nested root).
func TestV1SweepOrphans(t *testing.T) {
	m := testV1(t, Config{})
	orphan := "1c2d3e4f-3333-4c3e-9d2b-6a7e8f9a0b1c"
	kept := "2d3e4f5a-4444-4c3e-9d2b-6a7e8f9a0b1c"
	held := "3e4f5a6b-5555-4c3e-9d2b-6a7e8f9a0b1c"
	sleeper := helper("sleep")
	startIn(t, m, orphan, res(0.1, 32), sleeper, CPU, Memory)
	startIn(t, m, kept, res(0.1, 32), helper("sleep"), CPU)
	nested := filepath.Join(m.v1["cpu"], m.relPath("other-root"))
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	defer syscall.Rmdir(nested)

	m2, err := NewManager(m.cfg) // the restarted agent's
	if err != nil {
		t.Fatal(err)
	}
	startIn(t, m2, held, res(0.1, 32), helper("sleep"), CPU)
	ids, err := m2.Containers()
	if err != nil || !slices.Equal(ids, sorted(orphan, kept, held)) {
		t.Fatalf("Containers = %v, %v", ids, err)
	}
	swept, err := m2.Sweep(context.Background(), []string{kept})
	if err != nil || !slices.Equal(swept, []string{orphan}) {
		t.Fatalf("Sweep = %v, %v; want [%s]", swept, err, orphan)
	}
	_ = sleeper.Wait()
	if ws := sleeper.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("the orphan's process ended with %v, want SIGKILL", sleeper.ProcessState)
	}
	for _, p := range m2.Paths(orphan) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Sweep", p)
		}
	}
	for _, id := range []string{kept, held} {
		if _, err := os.Stat(m2.dir("cpu", id)); err != nil {
			t.Errorf("Sweep removed %s: %v", id, err)
		}
	}
	if _, err := os.Stat(nested); err != nil {
		t.Errorf("Sweep removed the nested root: %v", err)
	}
}

func sorted(s ...string) []string { slices.Sort(s); return s }
