package containerizer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
)

func newTestMesos(t *testing.T, c clock.Clock) *Mesos {
	t.Helper()
	m, err := NewMesos(Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func shell(id, dir, script string) ContainerConfig {
	return ContainerConfig{ContainerID: id, Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: dir, Env: []string{"FOO=bar", "PATH=/usr/bin:/bin"}}
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLaunchExitStatusAndOutput(t *testing.T) {
	tests := []struct {
		name   string
		script string
		code   int
		signal int
		msg    string
	}{
		{"success", `echo "out $FOO"; echo err >&2; pwd`, 0, 0, "Command exited with status 0"},
		{"failure", `echo "out $FOO"; echo err >&2; pwd; exit 3`, 3, 0, "Command exited with status 3"},
		{"signal", `echo "out $FOO"; echo err >&2; pwd; kill -9 $$`, -1, 9, "Command terminated with signal Killed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestMesos(t, nil)
			dir := t.TempDir()
			c, err := m.Launch(waitCtx(t), shell("c1", dir, tt.script))
			if err != nil {
				t.Fatal(err)
			}
			if c.Pid <= 0 {
				t.Fatalf("pid %d", c.Pid)
			}
			term, err := m.Wait(waitCtx(t), "c1")
			if err != nil {
				t.Fatal(err)
			}
			if term.ExitCode != tt.code || term.Signal != tt.signal || term.Message != tt.msg || term.Destroyed {
				t.Errorf("termination = %+v", term)
			}
			if tt.signal == 0 && term.Status != tt.code<<8 {
				t.Errorf("wait status %d, want %d", term.Status, tt.code<<8)
			}
			out, _ := os.ReadFile(filepath.Join(dir, "stdout"))
			if want := "out bar\n" + dir + "\n"; string(out) != want {
				t.Errorf("stdout %q, want %q", out, want)
			}
			errOut, _ := os.ReadFile(filepath.Join(dir, "stderr"))
			if string(errOut) != "err\n" {
				t.Errorf("stderr %q", errOut)
			}
			if got := m.Containers(); len(got) != 0 {
				t.Errorf("containers after exit: %v", got)
			}
			// Wait again after the end.
			if again, err := m.Wait(waitCtx(t), "c1"); err != nil || again != term {
				t.Errorf("second wait %+v %v", again, err)
			}
		})
	}
}

func TestLaunchErrors(t *testing.T) {
	m := newTestMesos(t, nil)
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  ContainerConfig
		want string
	}{
		{"no id", ContainerConfig{Path: "/bin/true", Dir: dir}, "'container_id' is empty"},
		{"no program", ContainerConfig{ContainerID: "x", Dir: dir}, "no program"},
		{"no sandbox", ContainerConfig{ContainerID: "x", Path: "/bin/true", Dir: filepath.Join(dir, "missing")}, "is not a directory"},
		{"bad program", ContainerConfig{ContainerID: "x", Path: filepath.Join(dir, "nope"), Dir: dir}, "no such file"},
	}
	for _, tt := range tests {
		_, err := m.Launch(context.Background(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
		}
	}
	if len(m.Containers()) != 0 {
		t.Errorf("leftover containers %v", m.Containers())
	}
	if _, err := m.Wait(context.Background(), "x"); !errors.Is(err, ErrUnknownContainer) {
		t.Errorf("wait unknown: %v", err)
	}
	if err := m.Destroy(context.Background(), "x", 0); !errors.Is(err, ErrUnknownContainer) {
		t.Errorf("destroy unknown: %v", err)
	}
}

func TestDuplicateContainer(t *testing.T) {
	m := newTestMesos(t, nil)
	dir := t.TempDir()
	if _, err := m.Launch(waitCtx(t), shell("d", dir, "sleep 30")); err != nil {
		t.Fatal(err)
	}
	defer m.Destroy(context.Background(), "d", 0)
	if _, err := m.Launch(waitCtx(t), shell("d", dir, "true")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("err %v", err)
	}
	if got := m.Containers(); len(got) != 1 || got[0] != "d" {
		t.Errorf("containers %v", got)
	}
}

// TestDestroyGrace: a process ignoring SIGTERM is SIGKILLed once the grace
// period has passed on the (fake) clock, with its whole process group.
func TestDestroyGrace(t *testing.T) {
	fake := clock.NewFake(time.Unix(1000, 0))
	m := newTestMesos(t, fake)
	dir := t.TempDir()
	script := `trap "" TERM; sleep 60 & echo $! > child; echo ready > ready; wait`
	if _, err := m.Launch(waitCtx(t), shell("g", dir, script)); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "ready"))
	child := readPid(t, filepath.Join(dir, "child"))

	errc := make(chan error, 1)
	go func() { errc <- m.Destroy(waitCtx(t), "g", 5*time.Second) }()
	deadline := time.Now().Add(10 * time.Second)
	for fake.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("grace timer never armed")
		}
		time.Sleep(time.Millisecond)
	}
	// The sleeping child got SIGTERM (it does not ignore it) but the shell
	// ignores it: the container is still alive until the grace period ends.
	select {
	case err := <-errc:
		t.Fatalf("destroy returned before the grace period: %v", err)
	default:
	}
	fake.Advance(5 * time.Second)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	term, _ := m.Wait(waitCtx(t), "g")
	if !term.Destroyed || term.Signal != int(syscall.SIGKILL) {
		t.Errorf("termination %+v", term)
	}
	waitGone(t, child)
	if err := m.Destroy(waitCtx(t), "g", 0); err != nil {
		t.Errorf("destroying a terminated container: %v", err)
	}
}

// TestExitKillsGroup: when the main process exits, what it left running in
// its process group is killed.
func TestExitKillsGroup(t *testing.T) {
	m := newTestMesos(t, nil)
	dir := t.TempDir()
	if _, err := m.Launch(waitCtx(t), shell("e", dir, `sleep 60 & echo $! > child`)); err != nil {
		t.Fatal(err)
	}
	term, err := m.Wait(waitCtx(t), "e")
	if err != nil || term.ExitCode != 0 {
		t.Fatalf("%+v %v", term, err)
	}
	waitGone(t, readPid(t, filepath.Join(dir, "child")))
}

func TestRegistry(t *testing.T) {
	if _, err := New("mesos", Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := New("", Options{}); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"nope":        `unknown or unsupported containerizer "nope"`,
		"mesos,mesos": "duplicate",
	} {
		if _, err := New(in, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%q) = %v, want %q", in, err, want)
		}
	}
	if _, err := New("mesos", Options{Isolation: []string{"cgroups/nope"}}); err == nil || !strings.Contains(err.Error(), `unknown isolator "cgroups/nope"`) {
		t.Errorf("unknown isolator: %v", err)
	}
	if _, err := NewIsolators([]string{"posix/cpu", "posix/cpu"}, Options{}); err == nil {
		t.Error("duplicate isolator accepted")
	}
}

type recordingIsolator struct {
	calls []string
	fail  string
}

func (r *recordingIsolator) Name() string { return "test/record" }
func (r *recordingIsolator) Prepare(_ context.Context, cfg *ContainerConfig, spec *LaunchSpec) error {
	r.calls = append(r.calls, "prepare")
	spec.Env = append(spec.Env, "ISOLATED=1")
	if r.fail == "prepare" {
		return errors.New("boom")
	}
	return nil
}
func (r *recordingIsolator) Isolate(_ context.Context, id string, pid int) error {
	r.calls = append(r.calls, "isolate")
	if r.fail == "isolate" {
		return errors.New("boom")
	}
	return nil
}
func (r *recordingIsolator) Cleanup(context.Context, string) error {
	r.calls = append(r.calls, "cleanup")
	return nil
}

func TestIsolatorSeam(t *testing.T) {
	for _, fail := range []string{"", "prepare", "isolate"} {
		iso := &recordingIsolator{fail: fail}
		m := newTestMesos(t, nil)
		m.isolators = []Isolator{iso}
		dir := t.TempDir()
		_, err := m.Launch(waitCtx(t), shell("i", dir, `echo $ISOLATED`))
		if fail != "" {
			if err == nil || !strings.Contains(err.Error(), "isolator test/record: boom") {
				t.Errorf("fail %s: err %v", fail, err)
			}
			if len(m.Containers()) != 0 {
				t.Errorf("fail %s: leftover containers", fail)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		m.Wait(waitCtx(t), "i")
		out, _ := os.ReadFile(filepath.Join(dir, "stdout"))
		if string(out) != "1\n" {
			t.Errorf("stdout %q", out)
		}
		if got := strings.Join(iso.calls, ","); got != "prepare,isolate,cleanup" {
			t.Errorf("calls %s", got)
		}
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	waitFile(t, path)
	b, _ := os.ReadFile(path)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %q", path, b)
	}
	return pid
}

// waitGone polls until pid no longer runs (gone, or a zombie awaiting its
// reaper).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// forkThreadIsolator runs its OnForkThread hook on the launching thread
// and records that the undo ran before Launch returned.
type forkThreadIsolator struct{ tids, undone chan int }

func (forkThreadIsolator) Name() string { return "test/forkthread" }
func (f forkThreadIsolator) Prepare(_ context.Context, _ *ContainerConfig, spec *LaunchSpec) error {
	spec.OnForkThread = append(spec.OnForkThread, func(tid int) (func(), error) {
		f.tids <- tid
		return func() { f.undone <- tid }, nil
	})
	return nil
}
func (forkThreadIsolator) Isolate(context.Context, string, int) error { return nil }
func (forkThreadIsolator) Cleanup(context.Context, string) error      { return nil }

// OnForkThread hooks run on one thread, and their undo has run on it by
// the time Launch returns.
func TestOnForkThread(t *testing.T) {
	m := newTestMesos(t, nil)
	iso := forkThreadIsolator{tids: make(chan int, 1), undone: make(chan int, 1)}
	m.isolators = []Isolator{iso}
	if _, err := m.Launch(waitCtx(t), shell("fork", t.TempDir(), "true")); err != nil {
		t.Fatal(err)
	}
	select {
	case tid := <-iso.tids:
		select {
		case u := <-iso.undone:
			if u != tid {
				t.Errorf("undone on thread %d, set up on %d", u, tid)
			}
		default:
			t.Error("Launch returned before the undo ran")
		}
	default:
		t.Fatal("the hook did not run")
	}
	if term, err := m.Wait(waitCtx(t), "fork"); err != nil || term.ExitCode != 0 {
		t.Fatalf("Wait = %+v, %v", term, err)
	}
}

// killerIsolator records, at BeforeKill, whether the container's process
// was still alive (the hook must run before SIGKILL, not after the death).
type killerIsolator struct {
	recordingIsolator
	pid   func() int
	alive chan bool
}

func (k *killerIsolator) BeforeKill(id string) error {
	k.alive <- syscall.Kill(k.pid(), 0) == nil
	return errors.New("cannot lift limits") // logged; the kill goes on
}

// TestDestroyCallsBeforeKill: Destroy lets Killer isolators act on the
// live container before SIGKILL, once, and kills it even when they fail.
func TestDestroyCallsBeforeKill(t *testing.T) {
	m := newTestMesos(t, nil)
	var pid int
	iso := &killerIsolator{pid: func() int { return pid }, alive: make(chan bool, 2)}
	m.isolators = []Isolator{iso}
	c, err := m.Launch(waitCtx(t), shell("k", t.TempDir(), `sleep 60`))
	if err != nil {
		t.Fatal(err)
	}
	pid = c.Pid
	if err := m.Destroy(waitCtx(t), "k", 0); err != nil {
		t.Fatal(err)
	}
	if alive := <-iso.alive; !alive {
		t.Error("BeforeKill ran after the process died")
	}
	if term, _ := m.Wait(waitCtx(t), "k"); term.Signal != int(syscall.SIGKILL) {
		t.Errorf("termination %+v, want SIGKILL", term)
	}
	if len(iso.alive) != 0 {
		t.Error("BeforeKill ran more than once")
	}
}

// updatingIsolator records Update calls; it fails when told to.
type updatingIsolator struct {
	recordingIsolator
	name    string
	fail    bool
	updated []string
}

func (u *updatingIsolator) Name() string { return u.name }
func (u *updatingIsolator) Update(_ context.Context, id string, rs []*mesos.Resource) error {
	u.updated = append(u.updated, fmt.Sprintf("%s:%d", id, len(rs)))
	if u.fail {
		return errors.New("no such cgroup")
	}
	return nil
}

// TestUpdate: Update hands a live container's new resources to every
// UpdatingIsolator in turn, stops at the first failure (naming the
// isolator), and refuses a container it does not run.
func TestUpdate(t *testing.T) {
	m := newTestMesos(t, nil)
	a, b := &updatingIsolator{name: "a"}, &updatingIsolator{name: "b"}
	m.isolators = []Isolator{a, &recordingIsolator{}, b}
	if _, err := m.Launch(waitCtx(t), shell("u", t.TempDir(), `sleep 60`)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Destroy(context.Background(), "u", 0) })
	rs := []*mesos.Resource{{Name: proto.String("cpus")}, {Name: proto.String("mem")}}
	if err := m.Update(waitCtx(t), "u", rs); err != nil {
		t.Fatal(err)
	}
	if len(a.updated) != 1 || a.updated[0] != "u:2" || len(b.updated) != 1 {
		t.Errorf("updates: a %v, b %v", a.updated, b.updated)
	}
	a.fail = true
	err := m.Update(waitCtx(t), "u", rs)
	if err == nil || !strings.Contains(err.Error(), "isolator a") {
		t.Errorf("failing isolator: err %v", err)
	}
	if len(b.updated) != 1 {
		t.Error("the isolator after a failed one was updated")
	}
	if err := m.Update(waitCtx(t), "nope", rs); !errors.Is(err, ErrUnknownContainer) {
		t.Errorf("unknown container: err %v", err)
	}
}
