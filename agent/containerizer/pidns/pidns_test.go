package pidns

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mezzo/agent/containerizer"
)

const modeEnv = "MEZZO_PIDNSTEST_MODE"

func TestMain(m *testing.M) {
	if os.Getenv(modeEnv) == "report" {
		os.Exit(report())
	}
	os.Exit(m.Run())
}

// report prints what the process sees of its pid namespace: its pid, the
// pids /proc lists, and whether it can signal the test process.
func report() int {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, e.Name())
		}
	}
	host, _ := strconv.Atoi(os.Getenv("MEZZO_PIDNSTEST_HOSTPID"))
	err := syscall.Kill(host, 0)
	var stepVars []string
	for _, kv := range os.Environ() {
		if isStepEnv(kv) {
			stepVars = append(stepVars, kv)
		}
	}
	exe, _ := os.Executable()
	comm, _ := os.ReadFile("/proc/self/comm")
	// The environment the kernel started this image with: it still names
	// the step's program when the step continued in process (no exec).
	initial, _ := os.ReadFile("/proc/self/environ")
	fmt.Printf("pid=%d\nproc=%s\nkill=%v\nexecenv=%q\nstepenv=%s\nexe=%s\ncomm=%s\nexeced=%v\n",
		os.Getpid(), strings.Join(pids, ","), err, os.Getenv(ExecEnv), strings.Join(stepVars, " "),
		exe, strings.TrimSpace(string(comm)), !strings.Contains(string(initial), ExecEnv+"="))
	return 0
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: pid namespaces need root (euid is not 0)")
	}
}

func parseReport(t *testing.T, out string) map[string]string {
	t.Helper()
	r := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok {
			r[k] = v
		}
	}
	return r
}

// launchReport runs program (this test binary or a copy) in report mode
// as a container with a private /proc and returns its report.
func launchReport(t *testing.T, program string) map[string]string {
	t.Helper()
	mesos, err := containerizer.NewMesos(containerizer.Options{Isolation: []string{"namespaces/pid", "filesystem/posix"}})
	if err != nil {
		t.Fatal(err)
	}
	sandbox := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := mesos.Launch(ctx, containerizer.ContainerConfig{
		ContainerID: "pidns",
		Path:        program,
		Args:        []string{program, "-test.run=^$"},
		Env:         []string{modeEnv + "=report", "MEZZO_PIDNSTEST_HOSTPID=" + strconv.Itoa(os.Getpid())},
		Dir:         sandbox,
	}); err != nil {
		t.Fatal(err)
	}
	term, err := mesos.Wait(ctx, "pidns")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(sandbox, "stdout"))
	errOut, _ := os.ReadFile(filepath.Join(sandbox, "stderr"))
	if term.ExitCode != 0 {
		t.Fatalf("termination %+v; stderr:\n%s", term, errOut)
	}
	return parseReport(t, string(out))
}

// commOf is the kernel's name for a process running path (its first 15
// bytes).
func commOf(path string) string {
	name := filepath.Base(path)
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}

// The program is this very binary (as the agent's built-in executors
// are): the step continues in process instead of exec'ing it again.
func TestTaskSeesOnlyItsNamespace(t *testing.T) {
	needRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := launchReport(t, self)
	checkIsolated(t, r)
	if r["execed"] != "false" {
		t.Errorf("the step exec'd this binary a second time (report %v)", r)
	}
	if r["comm"] != commOf(self) {
		t.Errorf("process name %q, want %q as after an exec", r["comm"], commOf(self))
	}
}

// Another program (here a copy of this binary: same content, another
// file) is exec'd by the step.
func TestOtherProgramIsExeced(t *testing.T) {
	needRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "pidns-copy.test")
	if err := os.WriteFile(copyPath, data, 0o755); err != nil {
		t.Fatal(err)
	}
	r := launchReport(t, copyPath)
	checkIsolated(t, r)
	if r["execed"] != "true" || r["exe"] != copyPath || r["comm"] != commOf(copyPath) {
		t.Errorf("report %v: want the step to exec %s", r, copyPath)
	}
}

func TestIsSelf(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{self: true, other: false, "/nonexistent/mezzo": false} {
		if got := isSelf(path); got != want {
			t.Errorf("isSelf(%q) = %v, want %v", path, got, want)
		}
	}
}

// checkIsolated checks a report of a program started behind the step
// with a private /proc.
func checkIsolated(t *testing.T, r map[string]string) {
	t.Helper()
	if r["pid"] != "1" {
		t.Errorf("task pid = %q, want 1", r["pid"])
	}
	if r["proc"] != "1" {
		t.Errorf("/proc lists pids %q, want only 1 (a private /proc)", r["proc"])
	}
	if r["kill"] != syscall.ESRCH.Error() {
		t.Errorf("signalling a host process: %q, want %q", r["kill"], syscall.ESRCH.Error())
	}
	if r["execenv"] != `""` || r["stepenv"] != "" {
		t.Errorf("the step's settings leaked into the task's environment: %s %s", r["execenv"], r["stepenv"])
	}
	// The host's /proc is untouched by the container's mount.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", os.Getpid())); err != nil {
		t.Errorf("host /proc changed: %v", err)
	}
}

func TestCloneNewPidOnly(t *testing.T) {
	needRoot(t)
	iso := &Isolator{}
	cfg := &containerizer.ContainerConfig{Path: os.Args[0], Args: []string{os.Args[0], "-test.run=^$"}}
	spec := &containerizer.LaunchSpec{SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		Env: []string{modeEnv + "=report", "MEZZO_PIDNSTEST_HOSTPID=" + strconv.Itoa(os.Getpid())}}
	if err := iso.Prepare(context.Background(), cfg, spec); err != nil {
		t.Fatal(err)
	}
	if cfg.Path != os.Args[0] || spec.SysProcAttr.Cloneflags != syscall.CLONE_NEWPID {
		t.Fatalf("Prepare without RemountProc changed the program or flags: %q %#x", cfg.Path, spec.SysProcAttr.Cloneflags)
	}
	cmd := &exec.Cmd{Path: cfg.Path, Args: cfg.Args, Env: spec.Env, SysProcAttr: spec.SysProcAttr}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r := parseReport(t, string(out))
	if r["pid"] != "1" || r["kill"] != syscall.ESRCH.Error() {
		t.Errorf("report %v: want pid 1 and ESRCH signalling the host", r)
	}
}

func TestPrepareRewritesProgram(t *testing.T) {
	iso := &Isolator{RemountProc: true}
	cfg := &containerizer.ContainerConfig{Path: "/bin/sh", Args: []string{"sh", "-c", "ps"}}
	spec := &containerizer.LaunchSpec{SysProcAttr: &syscall.SysProcAttr{Setsid: true}, Env: []string{"A=1"}}
	if err := iso.Prepare(context.Background(), cfg, spec); err != nil {
		t.Fatal(err)
	}
	if cfg.Path != "/proc/self/exe" || strings.Join(cfg.Args, " ") != "sh -c ps" {
		t.Errorf("program %q %q", cfg.Path, cfg.Args)
	}
	if got := strings.Join(spec.Env, " "); got != "A=1 "+ExecEnv+"=/bin/sh "+MountProcEnv+"=1" {
		t.Errorf("env %v", spec.Env)
	}
	// Wrapping again (another isolator) keeps one step and adds settings once.
	Wrap(cfg, spec, MountProcEnv+"=1", "X=1")
	if got := strings.Join(spec.Env, " "); cfg.Path != "/proc/self/exe" || got != "A=1 "+ExecEnv+"=/bin/sh "+MountProcEnv+"=1 X=1" {
		t.Errorf("after a second Wrap: %q %v", cfg.Path, spec.Env)
	}
	if spec.SysProcAttr.Cloneflags != syscall.CLONE_NEWPID|syscall.CLONE_NEWNS || !spec.SysProcAttr.Setsid {
		t.Errorf("SysProcAttr %+v", spec.SysProcAttr)
	}
	if err := iso.Prepare(context.Background(), &containerizer.ContainerConfig{}, spec); err == nil {
		t.Error("Prepare accepted an empty program")
	}
}

// releasePipe returns a duplicate of a new pipe's read end for
// awaitRelease (which closes it) and the write end.
func releasePipe(t *testing.T) (string, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(r.Fd()))
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return strconv.Itoa(fd), w
}
