package cgroups

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
)

func scalar(name string, v float64) *mesos.Resource {
	return &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}}
}

func res(cpus, memMB float64) []*mesos.Resource {
	return []*mesos.Resource{scalar("cpus", cpus), scalar("mem", memMB)}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// startIn prepares controllers for id, starts cmd as the containerizer
// would (own session) and isolates it; the process is killed at the end.
func startIn(t *testing.T, m *Manager, id string, rs []*mesos.Resource, cmd *exec.Cmd, ctrls ...Controller) {
	t.Helper()
	spec := &containerizer.LaunchSpec{SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	for _, c := range ctrls {
		if err := m.Prepare(id, c, rs, spec); err != nil {
			t.Fatal(err)
		}
	}
	cmd.SysProcAttr = spec.SysProcAttr
	if m.version == V1 {
		cmd.Env = append(cmd.Env, "MEZZO_CGTEST_CGROUP=freezer:"+m.relPath(id)) // written last
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, c := range ctrls {
			_ = m.Release(id, c)
		}
	})
	if err := m.Isolate(id, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
}

func TestV1LimitsAndPlacement(t *testing.T) {
	m := testV1(t, Config{EnableCFS: true})
	id := "limits"
	cmd := helper("sleep")
	startIn(t, m, id, res(0.5, 64), cmd, CPU, Memory)
	pid := strconv.Itoa(cmd.Process.Pid)

	checks := []struct{ ctrl, file, want string }{
		{"cpu", "cpu.shares", "512"},
		{"cpu", "cpu.cfs_period_us", "100000"},
		{"cpu", "cpu.cfs_quota_us", "50000"},
		{"memory", "memory.limit_in_bytes", strconv.Itoa(64 << 20)},
		{"memory", "memory.soft_limit_in_bytes", strconv.Itoa(64 << 20)},
	}
	for _, c := range checks {
		if got := readTrim(t, filepath.Join(m.dir(c.ctrl, id), c.file)); got != c.want {
			t.Errorf("%s = %s, want %s", c.file, got, c.want)
		}
	}
	for _, d := range []string{"cpu", "cpuacct", "memory", "freezer"} {
		procs := readTrim(t, filepath.Join(m.dir(d, id), "cgroup.procs"))
		if !slices.Contains(strings.Fields(procs), pid) {
			t.Errorf("%s cgroup.procs = %q, want pid %s", d, procs, pid)
		}
	}
	if got, _ := m.Pids(id); !slices.Equal(got, []int{cmd.Process.Pid}) {
		t.Errorf("Pids = %v, want [%d]", got, cmd.Process.Pid)
	}

	// Cleanup kills the process and removes every cgroup.
	if err := m.Release(id, CPU); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(id, Memory); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("process state %v, want killed by SIGKILL", cmd.ProcessState)
	}
	for _, p := range m.Paths(id) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after cleanup (err %v)", p, err)
		}
	}
}

func TestV1MinimumsWithoutCFS(t *testing.T) {
	m := testV1(t, Config{})
	id := "mins"
	startIn(t, m, id, res(0.001, 1), helper("sleep"), CPU, Memory)
	if got := readTrim(t, filepath.Join(m.dir("cpu", id), "cpu.shares")); got != "2" {
		t.Errorf("cpu.shares = %s, want the minimum 2", got)
	}
	if got := readTrim(t, filepath.Join(m.dir("cpu", id), "cpu.cfs_quota_us")); got != "-1" {
		t.Errorf("cpu.cfs_quota_us = %s, want -1 (no hard limit without --cgroups_enable_cfs)", got)
	}
	if got := readTrim(t, filepath.Join(m.dir("memory", id), "memory.limit_in_bytes")); got != strconv.Itoa(32<<20) {
		t.Errorf("memory.limit_in_bytes = %s, want the 32MB minimum", got)
	}
}

func TestV1OOMIsAMemoryLimitation(t *testing.T) {
	m := testV1(t, Config{})
	id := "oom"
	cmd := helper("alloc", "MEZZO_CGTEST_MB=200")
	startIn(t, m, id, res(0.1, 32), cmd, Memory)
	watch := m.Watch(id)

	var lim Limitation
	select {
	case l, ok := <-watch:
		if !ok {
			t.Fatal("watch channel closed without a limitation")
		}
		lim = l
	case <-time.After(20 * time.Second):
		t.Fatal("no OOM limitation within 20s")
	}
	if lim.Reason != mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY {
		t.Errorf("reason = %v", lim.Reason)
	}
	if !strings.HasPrefix(lim.Message, "Memory limit exceeded: Requested: 32MB Maximum Used: ") ||
		!strings.Contains(lim.Message, "\n\nMEMORY STATISTICS: \n") {
		t.Errorf("message = %q", lim.Message)
	}
	if len(lim.Resources) != 1 || lim.Resources[0].GetName() != "mem" || lim.Resources[0].GetScalar().GetValue() <= 0 {
		t.Errorf("resources = %v, want mem with the maximum usage", lim.Resources)
	}
	// The kernel killed the allocating process.
	_ = cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("helper ended with %v, want SIGKILL from the OOM killer", cmd.ProcessState)
	}
	// A Manager that did not prepare the container (agent restarted) still
	// finds the OOM kill from the cgroup.
	m2, err := NewManager(m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !m2.oomKilled(id) {
		t.Error("oom_kill not found in memory.oom_control")
	}
	if err := m.Release(id, Memory); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-watch; ok {
		t.Error("second value on the watch channel; want it closed after Release")
	}
}

func TestV1OOMFoundAtCleanup(t *testing.T) {
	m := testV1(t, Config{})
	id := "oom-late"
	spec := &containerizer.LaunchSpec{SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := m.Prepare(id, Memory, res(0.1, 32), spec); err != nil {
		t.Fatal(err)
	}
	watch := m.Watch(id)
	// Stop the event listener, as if the process ended before the
	// notification was read: Release must still find the OOM kill.
	m.mu.Lock()
	w := m.groups[id].oom
	m.mu.Unlock()
	w.f.Close()
	<-w.done

	cmd := helper("alloc", "MEZZO_CGTEST_MB=200", "MEZZO_CGTEST_CGROUP=freezer:"+m.relPath(id))
	cmd.SysProcAttr = spec.SysProcAttr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := m.Isolate(id, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := m.Release(id, Memory); err != nil {
		t.Fatal(err)
	}
	l, ok := <-watch
	if !ok || l.Reason != mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY {
		t.Fatalf("after Release: limitation %+v (ok %v), want the OOM", l, ok)
	}
	if _, ok := <-watch; ok {
		t.Error("channel not closed after Release")
	}
}

func TestV1KillsDaemonizedGrandchild(t *testing.T) {
	for _, exit := range []bool{false, true} {
		name := "parent-alive"
		if exit {
			name = "parent-exited"
		}
		t.Run(name, func(t *testing.T) {
			m := testV1(t, Config{})
			id := "daemon-" + name
			pidfile := filepath.Join(t.TempDir(), "pid")
			env := []string{"MEZZO_CGTEST_PIDFILE=" + pidfile}
			if exit {
				env = append(env, "MEZZO_CGTEST_EXIT=1")
			}
			cmd := helper("daemon", env...)
			startIn(t, m, id, res(0.1, 64), cmd, CPU, Memory)
			var daemon int
			pollUntil(t, 10*time.Second, "the daemon's pid file", func() bool {
				data, err := os.ReadFile(pidfile)
				if err != nil {
					return false
				}
				daemon, _ = strconv.Atoi(string(data))
				return daemon > 0
			})
			// What the containerizer does when the executor ends or is
			// destroyed: kill its process group. The daemon, in its own
			// session, survives that.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			if !alive(daemon) {
				t.Fatalf("daemon %d died with its parent's group; the test proves nothing", daemon)
			}
			if pids, _ := m.Pids(id); !slices.Contains(pids, daemon) {
				t.Fatalf("daemon %d not in the container's cgroups %v", daemon, pids)
			}
			if err := m.Release(id, CPU); err != nil {
				t.Fatal(err)
			}
			if err := m.Release(id, Memory); err != nil {
				t.Fatal(err)
			}
			pollUntil(t, 5*time.Second, "the daemon to die", func() bool { return !alive(daemon) })
			for _, p := range m.Paths(id) {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s still exists", p)
				}
			}
		})
	}
}

func TestV1StatsOfBusyProcess(t *testing.T) {
	m := testV1(t, Config{EnableCFS: true})
	id := "stats"
	cmd := helper("busy")
	startIn(t, m, id, res(1.5, 64), cmd, CPU, Memory)
	var s *Statistics
	pollUntil(t, 30*time.Second, "cpu time in the statistics", func() bool {
		var err error
		s, err = m.Stats(id, time.Unix(1700000000, 500000000))
		if err != nil {
			t.Fatal(err)
		}
		return s.CPUsUserTimeSecs+s.CPUsSystemTimeSecs >= 0.1 // over a CFS period, so nr_periods > 0
	})
	if s.Timestamp != 1700000000.5 {
		t.Errorf("timestamp = %v", s.Timestamp)
	}
	if s.CPUsLimit != 1.5 {
		t.Errorf("cpus_limit = %v, want 1.5", s.CPUsLimit)
	}
	if s.MemLimitBytes != 64<<20 {
		t.Errorf("mem_limit_bytes = %d, want %d", s.MemLimitBytes, 64<<20)
	}
	if s.MemRSSBytes == 0 || s.MemTotalBytes < s.MemRSSBytes {
		t.Errorf("mem_rss_bytes = %d, mem_total_bytes = %d; want 0 < rss <= total", s.MemRSSBytes, s.MemTotalBytes)
	}
	if s.Processes != 1 || s.Threads < 1 {
		t.Errorf("processes = %d, threads = %d", s.Processes, s.Threads)
	}
	if s.CPUsNrPeriods == 0 {
		t.Errorf("cpus_nr_periods = 0 with CFS enabled")
	}
	// A Manager of a restarted agent derives cpus_limit from the quota.
	m2, err := NewManager(m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := m2.Stats(id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s2.CPUsLimit != 1.5 {
		t.Errorf("recovered cpus_limit = %v, want 1.5 from cpu.cfs_quota_us", s2.CPUsLimit)
	}
	if _, err := m.Stats("no-such-container", time.Now()); !errors.Is(err, ErrNoCgroups) {
		t.Errorf("Stats of an unknown container: %v, want ErrNoCgroups", err)
	}
}
