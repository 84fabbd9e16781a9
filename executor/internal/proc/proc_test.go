package proc

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/internal/clock"
)

func TestMergeEnv(t *testing.T) {
	env := &mesos.Environment{Variables: []*mesos.Environment_Variable{
		{Name: proto.String("A"), Value: proto.String("task")},
		{Name: proto.String("S"), Type: mesos.Environment_Variable_SECRET.Enum()},
		{Name: proto.String("N"), Value: proto.String("new")},
	}}
	got := MergeEnv([]string{"A=base", "B=base", "junk", "C=x=y"}, []string{"B=extra"}, env)
	want := []string{"A=task", "B=extra", "C=x=y", "N=new"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MergeEnv = %v, want %v", got, want)
	}
}

func TestCommandLine(t *testing.T) {
	env := []string{"PATH=/nonexistent:/bin:/usr/bin"}
	tests := []struct {
		name     string
		ci       *mesos.CommandInfo
		wantPath string
		wantArgv []string
		err      string
	}{
		{"shell default", &mesos.CommandInfo{Value: proto.String("echo hi")}, "/bin/sh", []string{"sh", "-c", "echo hi"}, ""},
		{"exec with argv0", &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("/bin/echo"), Arguments: []string{"echo", "a"}},
			"/bin/echo", []string{"echo", "a"}, ""},
		{"exec without arguments", &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("/bin/true")},
			"/bin/true", []string{"/bin/true"}, ""},
		{"exec PATH lookup", &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("sh"), Arguments: []string{"sh"}},
			"/bin/sh", []string{"sh"}, ""},
		{"empty shell command", &mesos.CommandInfo{}, "", nil, "shell command is not specified"},
		{"empty executable", &mesos.CommandInfo{Shell: proto.Bool(false)}, "", nil, "executable is not specified"},
		{"unknown executable", &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("no-such-thing-xyz")}, "", nil, "not found"},
	}
	for _, tt := range tests {
		path, argv, err := commandLine(tt.ci, env)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || path != tt.wantPath || !reflect.DeepEqual(argv, tt.wantArgv) {
			t.Errorf("%s: %q %v %v; want %q %v", tt.name, path, argv, err, tt.wantPath, tt.wantArgv)
		}
	}
}

func TestSignalName(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{
		syscall.SIGTERM: "Terminated",
		syscall.SIGKILL: "Killed",
		syscall.SIGSEGV: "Segmentation fault",
		syscall.SIGINT:  "Interrupt",
	} {
		if got := SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
}

// loop runs posted functions on one goroutine, like the client loop.
type loop struct{ fns chan func() }

func newLoop(t *testing.T) (Loop, *loop) {
	l := &loop{fns: make(chan func(), 16)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case fn := <-l.fns:
				fn()
			case <-done:
				return
			}
		}
	}()
	post := func(fn func()) bool {
		select {
		case l.fns <- fn:
			return true
		case <-done:
			return false
		}
	}
	return Loop{Clock: clock.Real, Post: post, Logf: t.Logf}, l
}

// A second kill can bring SIGKILL forward but never push it back.
func TestTaskKillShortensGrace(t *testing.T) {
	dir := t.TempDir()
	lp, _ := newLoop(t)
	p, err := Start(Spec{
		Command: &mesos.CommandInfo{Value: proto.String(`trap "" TERM; touch ready; sleep 30`)},
		Env:     []string{"PATH=/usr/bin:/bin"},
		Dir:     dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL) })
	exited := make(chan *Task, 1)
	info := &mesos.TaskInfo{TaskId: &mesos.TaskID{Value: proto.String("t")}}
	var task *Task
	ready := make(chan struct{})
	lp.Post(func() {
		task = Watch(lp, info, p, func(t *Task) { exited <- t })
		close(ready)
	})
	<-ready
	// Poll, with a deadline, for the file the child writes once its trap is set.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("task never became ready")
		}
	}
	firsts := make(chan [2]bool, 1)
	lp.Post(func() {
		a := task.Kill(time.Hour)
		b := task.Kill(2 * time.Hour) // longer: no-op
		firsts <- [2]bool{a, b}
		task.Kill(50 * time.Millisecond) // shorter: SIGKILL soon
	})
	if f := <-firsts; !f[0] || f[1] {
		t.Errorf("first flags %v, want [true false]", f)
	}
	select {
	case tk := <-exited:
		state, _, msg := tk.Outcome()
		if state != mesos.TaskState_TASK_KILLED || msg != "Command terminated with signal Killed" {
			t.Errorf("outcome %v %q", state, msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("task was not SIGKILLed after the shortened grace period")
	}
}
