package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCpuacctCgroup(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"12:pids:/x\n4:cpu,cpuacct:/mezzo/abc\n1:name=systemd:/\n", "/mezzo/abc"},
		{"5:cpuacct:/r/c1\n6:cpu:/r/c1\n", "/r/c1"},
		{"0::/user.slice\n", ""},
		{"", ""},
	} {
		if got := cpuacctCgroup(tc.text); got != tc.want {
			t.Errorf("cpuacctCgroup(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestServiceLoadInterval(t *testing.T) {
	for _, tc := range []struct {
		threads int
		low     float64
		req     time.Duration
		want    time.Duration
	}{
		{2, 0.2, 5 * time.Millisecond, 50 * time.Millisecond}, // 2 threads × 20/s × 5 ms = 0.2 cpus
		{1, 1, 5 * time.Millisecond, 5 * time.Millisecond},
		{4, 0, 5 * time.Millisecond, 0}, // no open-loop phase
	} {
		l := serviceLoad{threads: tc.threads, lowCPUs: tc.low, req: tc.req}
		if got := l.interval(); got != tc.want {
			t.Errorf("interval(threads=%d, low=%g) = %v, want %v", tc.threads, tc.low, got, tc.want)
		}
	}
}

func TestOvsConfigCheck(t *testing.T) {
	ok := ovsConfig{duration: 10 * time.Second, riseAt: 5 * time.Second, serviceTasks: 2, threads: 2, serviceCPUs: 1, lowCPUs: 0.2, tenantCPUs: 0.25, rounds: 1}
	if err := ok.check(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	for name, mut := range map[string]func(*ovsConfig){
		"rise after end":     func(c *ovsConfig) { c.riseAt = 11 * time.Second },
		"no service task":    func(c *ovsConfig) { c.serviceTasks = 0 },
		"low above cpus":     func(c *ovsConfig) { c.lowCPUs = 2 },
		"zero tenant cpus":   func(c *ovsConfig) { c.tenantCPUs = 0 },
		"agent flag no =":    func(c *ovsConfig) { c.agentFlags = []string{"slack_estimator_margin"} },
		"zero service cpus":  func(c *ovsConfig) { c.serviceCPUs = 0 },
		"negative threads":   func(c *ovsConfig) { c.threads = -1 },
		"zero rise (no low)": func(c *ovsConfig) { c.riseAt = 0 },
		"zero rounds":        func(c *ovsConfig) { c.rounds = 0 },
	} {
		c := ok
		mut(&c)
		if err := c.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The clean-up must not leave what a previous attempt leaked: a busy loop
// in a frozen cgroup. A shell spinning in a frozen cgroup (in every v1
// controller, nested one deeper) is killed and every cgroup removed.
func TestSweepCgroupsKillsFrozenProcesses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	if _, err := os.Stat(filepath.Join(cgroupV1Base, "freezer", "cgroup.procs")); err != nil {
		t.Skip("needs the cgroups v1 freezer")
	}
	root := fmt.Sprintf("mezzo-test-sweep-%d", os.Getpid())
	leaf := filepath.Join(root, "container", "task")
	var ctrls []string
	for _, c := range []string{"cpu", "cpuacct", "freezer", "memory"} {
		if err := os.MkdirAll(filepath.Join(cgroupV1Base, c, leaf), 0o755); err != nil {
			t.Fatalf("making %s cgroup: %v", c, err)
		}
		ctrls = append(ctrls, c)
	}
	t.Cleanup(func() { sweepCgroups(root, 5*time.Second) })
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// Should the sweep have failed: thaw, kill, and do not hang.
		for _, d := range []string{leaf, filepath.Dir(leaf), root} {
			os.WriteFile(filepath.Join(cgroupV1Base, "freezer", d, "freezer.state"), []byte("THAWED"), 0o644)
		}
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("could not kill the shell %d", cmd.Process.Pid)
		}
	})
	pid := strconv.Itoa(cmd.Process.Pid)
	for _, c := range ctrls {
		if err := os.WriteFile(filepath.Join(cgroupV1Base, c, leaf, "cgroup.procs"), []byte(pid), 0o644); err != nil {
			t.Fatalf("moving the shell into %s: %v", c, err)
		}
	}
	state := filepath.Join(cgroupV1Base, "freezer", leaf, "freezer.state")
	if err := os.WriteFile(state, []byte("FROZEN"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(state)
		if string(b) == "FROZEN\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cgroup never froze: %q", b)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
	}

	if err := sweepCgroups(root, 10*time.Second); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the frozen shell survived the sweep")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the shell ended with %v, want killed by SIGKILL", cmd.ProcessState)
	}
	for _, c := range ctrls {
		if _, err := os.Stat(filepath.Join(cgroupV1Base, c, root)); !os.IsNotExist(err) {
			t.Errorf("%s cgroup %s left behind (%v)", c, root, err)
		}
	}
}

func TestSweepCgroupsRefusesDangerousRoots(t *testing.T) {
	for _, root := range []string{"", "/", "a/../..", "//"} {
		if err := sweepCgroups(root, time.Millisecond); err == nil {
			t.Errorf("sweepCgroups(%q) accepted", root)
		}
	}
}

// killWorkers kills a live worker named in a pid file and leaves a
// process that is not a worker alone (a pid can be reused).
func TestKillWorkers(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary stands in for a worker: ovs-worker in its argv.
	worker := exec.Command(self, "-test.run=^TestHelperSpin$", "ovs-worker")
	worker.Env = append(os.Environ(), "MEZZO_TEST_SPIN=1")
	other := exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{worker, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	workerDone, otherDone := make(chan struct{}), make(chan struct{})
	go func() { worker.Wait(); close(workerDone) }()
	go func() { other.Wait(); close(otherDone) }()
	t.Cleanup(func() { worker.Process.Kill(); other.Process.Kill(); <-workerDone; <-otherDone })
	os.WriteFile(filepath.Join(dir, "tenant-0.pid"), fmt.Appendf(nil, "%d /x\n", worker.Process.Pid), 0o644)
	os.WriteFile(filepath.Join(dir, "tenant-1.pid"), fmt.Appendf(nil, "%d /y\n", other.Process.Pid), 0o644)
	// killWorkers waits for the worker to be gone, which needs it reaped
	// (a zombie no longer counts as a worker).
	if alive := killWorkers(dir, 10*time.Second); len(alive) > 0 {
		t.Fatalf("workers still alive: %v", alive)
	}
	select {
	case <-workerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker survived")
	}
	select {
	case <-otherDone:
		t.Fatal("killWorkers killed a process that is not a worker")
	default:
	}
}

// TestHelperSpin is the stand-in worker of TestKillWorkers.
func TestHelperSpin(t *testing.T) {
	if os.Getenv("MEZZO_TEST_SPIN") != "1" {
		return
	}
	spinUntil(time.Now().Add(time.Minute), 100000)
}

func TestSummarizeRound(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs map[string]*ovsRun
		want ovsRound
	}{
		{"both", map[string]*ovsRun{
			"without": {CPUSeconds: 40, ServiceHighRPS: 400, ServiceLowP99Ms: 10},
			"with":    {CPUSeconds: 80, ServiceHighRPS: 360, ServiceLowP99Ms: 15, LastEvictionMs: 700, RegularKilled: 1},
		}, ovsRound{Gain: 2, SlowdownPct: 10, EvictionMs: 700, LatencyP99Ratio: 1.5, RegularKilled: 1}},
		{"faster with", map[string]*ovsRun{
			"without": {CPUSeconds: 40, ServiceHighRPS: 400},
			"with":    {CPUSeconds: 40, ServiceHighRPS: 440, LastEvictionMs: -1},
		}, ovsRound{Gain: 1, SlowdownPct: -10, EvictionMs: -1}},
		{"only without", map[string]*ovsRun{"without": {CPUSeconds: 40, RegularKilled: 2}},
			ovsRound{EvictionMs: -1, RegularKilled: 2}},
	} {
		if got := summarizeRound(tc.runs); got != tc.want {
			t.Errorf("%s: summarizeRound = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The agent runs in the benchmark's process and may leave one of its
// threads in a container's cgroups (it forks tasks from there): the sweep
// moves such a thread out instead of killing its own process, and still
// removes the cgroups.
func TestSweepCgroupsRescuesOwnThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	if _, err := os.Stat(filepath.Join(cgroupV1Base, "freezer", "cgroup.procs")); err != nil {
		t.Skip("needs the cgroups v1 freezer")
	}
	root := fmt.Sprintf("mezzo-test-rescue-%d", os.Getpid())
	leaf := filepath.Join(root, "container")
	for _, c := range []string{"cpuacct", "freezer"} {
		if err := os.MkdirAll(filepath.Join(cgroupV1Base, c, leaf), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { sweepCgroups(root, time.Second) })
	placed, release := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		tid := syscall.Gettid()
		for _, c := range []string{"cpuacct", "freezer"} {
			os.WriteFile(filepath.Join(cgroupV1Base, c, leaf, "tasks"), []byte(strconv.Itoa(tid)), 0o644)
		}
		placed <- tid
		<-release
	}()
	tid := <-placed
	defer close(release)
	if err := sweepCgroups(root, 5*time.Second); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	for _, c := range []string{"cpuacct", "freezer"} {
		if _, err := os.Stat(filepath.Join(cgroupV1Base, c, root)); !os.IsNotExist(err) {
			t.Errorf("%s cgroup left behind (%v)", c, err)
		}
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", tid))
	if strings.Contains(string(b), root) {
		t.Errorf("the thread is still in the swept cgroups:\n%s", b)
	}
}
