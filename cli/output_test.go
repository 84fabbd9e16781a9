package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	runfw "mezzo/frameworks/run"
)

// TestTaskOutputFollows: what `mezzo run` streams. Output written while the
// task runs arrives before it ends, and what was written last arrives
// after the end is signalled (issue 16: the README's command printed
// nothing of the task's output).
func TestTaskOutputFollows(t *testing.T) {
	m, a := logsCluster(t)
	var stdout, stderr syncBuffer
	o := &TaskOutput{Masters: []string{m.addr()}, Stdout: &stdout, Stderr: &stderr, Interval: time.Millisecond}
	ended := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- o.Follow(context.Background(), runfw.LaunchedTask{FrameworkID: "m1-0000", AgentID: "m1-S0", TaskID: "t-run"}, ended)
	}()
	waitFor(t, "the first output", func() bool { return strings.Contains(stdout.String(), "line 4\n") })
	a.write(runDir+"/stdout", "more\n")
	waitFor(t, "output written while following", func() bool { return strings.HasSuffix(stdout.String(), "line 4\nmore\n") })
	a.write(runDir+"/stdout", "last words\n")
	a.write(runDir+"/stderr", "bye\n")
	close(ended)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not return after the task ended")
	}
	if want := "line 1\nline 2\nhéllo wörld ✓ 😀\nline 4\nmore\nlast words\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	if want := "warning: x\nbye\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// A task that ended before its sandbox could be found still gets its
// output printed; one whose sandbox never shows up ends with an error.
func TestTaskOutputAfterTheEnd(t *testing.T) {
	m, a := logsCluster(t)
	a.write(doneDir+"/stderr", "") // agents create both files
	var stdout, stderr syncBuffer
	o := &TaskOutput{Masters: []string{m.addr()}, Stdout: &stdout, Stderr: &stderr, Interval: time.Millisecond}
	ended := make(chan struct{})
	close(ended)
	if err := o.Follow(context.Background(), runfw.LaunchedTask{FrameworkID: "m1-0000", TaskID: "t-done"}, ended); err != nil || stdout.String() != "done\n" {
		t.Errorf("Follow = %v, stdout %q", err, stdout.String())
	}
	err := o.Follow(context.Background(), runfw.LaunchedTask{FrameworkID: "m1-0000", TaskID: "nope"}, ended)
	if err == nil || !strings.Contains(err.Error(), `knows no task "nope"`) {
		t.Errorf("Follow of an unknown task = %v", err)
	}
}
