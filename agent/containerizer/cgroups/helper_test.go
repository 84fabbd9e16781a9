package cgroups

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

	"golang.org/x/sys/unix"
)

// The test binary doubles as the containers' program: with
// MEZZO_CGTEST_MODE set, TestMain runs a helper instead of the tests.
const modeEnv = "MEZZO_CGTEST_MODE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func helperMain(mode string) int {
	waitPlaced()
	switch mode {
	case "sleep":
		time.Sleep(time.Hour) // idles until killed
	case "busy":
		// Some resident memory charged to the container, then cpu time.
		mem := make([]byte, 8<<20)
		for j := 0; j < len(mem); j += 4096 {
			mem[j] = 1
		}
		// Spin for 300 ms of this process's own CPU time, not of wall
		// time: on a loaded machine a wall-clock spin may get only a
		// sliver of a CPU, and the test waits for CPU time to show.
		x := 0
		for cpuTime() < 300*time.Millisecond {
			for i := 0; i < 1_000_000; i++ {
				x++
			}
		}
		time.Sleep(time.Hour)
		mem[0] = byte(x)
	case "alloc":
		mb, _ := strconv.Atoi(os.Getenv("MEZZO_CGTEST_MB"))
		var keep [][]byte
		for i := 0; i < mb; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1 // touch every page so it is charged
			}
			keep = append(keep, b)
		}
		fmt.Println("allocated", len(keep), "MB")
		time.Sleep(time.Hour)
	case "spin":
		// Burn CPU on one pinned CPU until a wall-clock deadline, then
		// idle: two of these compete for that CPU by their cgroups' shares.
		runtime.LockOSThread()
		var set unix.CPUSet
		cpu, _ := strconv.Atoi(os.Getenv("MEZZO_CGTEST_CPU"))
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		until, _ := strconv.ParseInt(os.Getenv("MEZZO_CGTEST_UNTIL"), 10, 64)
		x := 0
		for time.Now().UnixNano() < until {
			for i := 0; i < 100_000; i++ {
				x++
			}
		}
		runtime.UnlockOSThread()
		os.WriteFile(os.Getenv("MEZZO_CGTEST_DONE"), []byte(strconv.Itoa(x)), 0o644)
		time.Sleep(time.Hour)
	case "daemon":
		// Start a grandchild in its own session (outside our process group,
		// like a daemon), record its pid, then idle (or exit).
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = []string{modeEnv + "=sleep"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		pidfile := os.Getenv("MEZZO_CGTEST_PIDFILE")
		tmp := pidfile + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return 4
		}
		if err := os.Rename(tmp, pidfile); err != nil {
			return 5
		}
		if os.Getenv("MEZZO_CGTEST_EXIT") != "" {
			return 0
		}
		time.Sleep(time.Hour)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	return 0
}

// waitPlaced blocks until /proc/self/cgroup shows the cgroup named by
// MEZZO_CGTEST_CGROUP, so a helper forks only once the v1 isolate step has
// moved it (the window the package documents).
func waitPlaced() {
	want := os.Getenv("MEZZO_CGTEST_CGROUP")
	if want == "" {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile("/proc/self/cgroup")
		if strings.Contains(string(data), want) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// helper returns a command running the test binary in mode.
func helper(mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{modeEnv + "=" + mode}, env...)
	return cmd
}

// pollUntil polls cond every few milliseconds until it holds or the
// deadline passes.
func pollUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive tells whether pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// needRoot skips a test that creates real cgroups when not root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: creating cgroups needs root (euid is not 0)")
	}
}

// testV1 returns a Manager on the host's v1 hierarchy under a root unique
// to this test process, removed at the end; it skips when v1 cpu, cpuacct,
// memory and freezer are not mounted.
func testV1(t *testing.T, cfg Config) *Manager {
	t.Helper()
	needRoot(t)
	if v, err := detectVersion("/sys/fs/cgroup"); err != nil || v != V1 {
		t.Skipf("skipping: cgroups v1 is not mounted at /sys/fs/cgroup (version %v, err %v)", v, err)
	}
	cfg.Root = fmt.Sprintf("mezzo-test-%d/%s", os.Getpid(), sanitize(t.Name()))
	cfg.Version = V1
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(CPU, Memory); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if m.v1["freezer"] == "" {
		t.Skip("skipping: the v1 freezer controller is not mounted")
	}
	t.Cleanup(func() { removeTestRoot(m) })
	return m
}

// testV2 returns a Manager on a cgroup2 mount (the unified one, or the
// hybrid /sys/fs/cgroup/unified) or skips.
func testV2(t *testing.T) *Manager {
	t.Helper()
	needRoot(t)
	var hier string
	for _, h := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if v, err := detectVersion(h); err == nil && v == V2 {
			hier = h
			break
		}
	}
	if hier == "" {
		t.Skip("skipping: no cgroup2 hierarchy mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified")
	}
	m, err := NewManager(Config{Hierarchy: hier, Root: fmt.Sprintf("mezzo-test-%d/%s", os.Getpid(), sanitize(t.Name())), Version: V2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTestRoot(m) })
	return m
}

func sanitize(s string) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(s)
}

// removeTestRoot removes the test's root cgroups (leaf first) in every
// hierarchy.
func removeTestRoot(m *Manager) {
	rel := strings.Trim(m.cfg.Root, "/")
	var bases []string
	if m.version == V2 {
		bases = []string{m.cfg.Hierarchy}
	} else {
		for _, mp := range m.v1 {
			bases = append(bases, mp)
		}
	}
	for _, b := range bases {
		for p := rel; p != "." && p != ""; p = filepath.Dir(p) {
			_ = syscall.Rmdir(filepath.Join(b, p))
		}
	}
}
