package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"

	"mezzo/agent/containerizer"
)

// core is a pseudo controller for tests: the v2 cgroup with no controller
// enabled (hosts whose unified hierarchy offers none, like a hybrid
// /sys/fs/cgroup/unified), which still has cgroup.procs, cgroup.kill and
// cpu.stat.
const core Controller = ""

// prepareCore does what Prepare does on v2 without controller limits.
func prepareCore(t *testing.T, m *Manager, id string, spec *containerizer.LaunchSpec) {
	t.Helper()
	if _, err := cgroup2.NewManager(m.cfg.Hierarchy, m.relPath(id), &cgroup2.Resources{}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(m.dir("", id))
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.groups[id] = &group{id: id, held: map[Controller]bool{core: true}, known: map[Controller]bool{}, cgfd: f}
	m.mu.Unlock()
	spec.SysProcAttr.UseCgroupFD = true
	spec.SysProcAttr.CgroupFD = int(f.Fd())
}

func TestV2BornInCgroupStatsAndKill(t *testing.T) {
	m := testV2(t)
	id := "v2"
	spec := &containerizer.LaunchSpec{SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	prepareCore(t, m, id, spec)
	pidfile := filepath.Join(t.TempDir(), "pid")
	cmd := helper("daemon", "MEZZO_CGTEST_PIDFILE="+pidfile)
	cmd.SysProcAttr = spec.SysProcAttr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = m.Release(id, core) })
	// Born in the cgroup (clone3 CLONE_INTO_CGROUP): there before Isolate.
	procs, err := readProcs(filepath.Join(m.dir("", id), "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(procs, cmd.Process.Pid) {
		t.Fatalf("pid %d not in cgroup.procs %v right after start", cmd.Process.Pid, procs)
	}
	if err := m.Isolate(id, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	var daemon int
	pollUntil(t, 10*time.Second, "the daemon's pid file", func() bool {
		data, err := os.ReadFile(pidfile)
		daemon, _ = strconv.Atoi(string(data))
		return err == nil && daemon > 0
	})
	pollUntil(t, 10*time.Second, "cpu time in cpu.stat", func() bool {
		s, err := m.Stats(id, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return s.CPUsUserTimeSecs+s.CPUsSystemTimeSecs > 0 && s.Processes == 2
	})
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if !alive(daemon) {
		t.Fatalf("daemon %d died with its parent's group", daemon)
	}
	if err := m.Release(id, core); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, 5*time.Second, "the daemon to die", func() bool { return !alive(daemon) })
	if _, err := os.Stat(m.dir("", id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Release (err %v)", m.dir("", id), err)
	}
}

func TestV2CheckNamesMissingController(t *testing.T) {
	m := &Manager{cfg: Config{Hierarchy: "/x", Root: "mezzo"}, version: V2, v2: map[string]bool{"cpu": true}}
	if err := m.Check(CPU); err != nil {
		t.Errorf("Check(cpu) = %v", err)
	}
	err := m.Check(Memory)
	if err == nil || !containsAll(err.Error(), "memory", "/x") {
		t.Errorf("Check(memory) = %v, want an error naming the controller and hierarchy", err)
	}
}
