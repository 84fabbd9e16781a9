package run_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/frameworks/run"
	"mezzo/internal/clock"
	"mezzo/resources"
	"mezzo/scheduler/schedulertest"
)

func TestExitCode(t *testing.T) {
	failed := func(msg string) *mesos.TaskStatus {
		return &mesos.TaskStatus{State: mesos.TaskState_TASK_FAILED.Enum(), Message: &msg}
	}
	state := func(s mesos.TaskState) *mesos.TaskStatus { return &mesos.TaskStatus{State: s.Enum()} }
	tests := []struct {
		name string
		in   *mesos.TaskStatus
		want int
	}{
		{"finished", state(mesos.TaskState_TASK_FINISHED), 0},
		{"exit 3", failed("Command exited with status 3"), 3},
		{"exit 1", failed("Command exited with status 1"), 1},
		{"exit 127 (not found)", failed("Command exited with status 127"), 127},
		{"exit 124 collides with timeout", failed("Command exited with status 124"), run.ExitFailed},
		{"exit 125 collides with mezzo's", failed("Command exited with status 125"), run.ExitFailed},
		{"signal by strsignal text", failed("Command terminated with signal Killed"), 128 + 9},
		{"signal by text", failed("Command terminated with signal Terminated"), 128 + 15},
		{"signal by name", failed("Command terminated with signal SIGSEGV"), 128 + 11},
		{"failed without status", failed("Container destroyed"), run.ExitFailed},
		{"failed, no message", state(mesos.TaskState_TASK_FAILED), run.ExitFailed},
		{"killed", state(mesos.TaskState_TASK_KILLED), run.ExitKilled},
		{"error", state(mesos.TaskState_TASK_ERROR), run.ExitMezzo},
		{"lost", state(mesos.TaskState_TASK_LOST), run.ExitLost},
		{"dropped", state(mesos.TaskState_TASK_DROPPED), run.ExitLost},
		{"gone", state(mesos.TaskState_TASK_GONE), run.ExitLost},
		{"gone by operator", state(mesos.TaskState_TASK_GONE_BY_OPERATOR), run.ExitLost},
	}
	for _, tt := range tests {
		if got := run.ExitCode(tt.in); got != tt.want {
			t.Errorf("%s: ExitCode = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestWhyWaiting(t *testing.T) {
	two := []run.AgentTotal{
		{ID: "S0", Hostname: "a", Total: map[string]float64{"cpus": 2, "mem": 4096}},
		{ID: "S1", Hostname: "b", Total: map[string]float64{"cpus": 1, "mem": 8192}},
	}
	tests := []struct {
		need   string
		agents []run.AgentTotal
		want   string
	}{
		{"cpus:5;mem:32", two, "no agent has cpus:5; largest is cpus:2"},
		{"cpus:5;mem:10000", two, "no agent has cpus:5; largest is cpus:2; no agent has mem:10000; largest is mem:8192"},
		{"cpus:2;mem:8192", two, "no single agent has cpus:2;mem:8192 at once"},
		{"gpus:1", two, "no agent has gpus:1; largest is gpus:0"},
		{"cpus:1.5;mem:32", two, "agent a has cpus:1.5;mem:32 in total; waiting for that much to be free"},
		{"cpus:1", nil, "no agents are registered with the master"},
	}
	for _, tt := range tests {
		got := run.WhyWaiting(resources.MustParse(tt.need), tt.agents)
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("WhyWaiting(%s) = %q, want it to start with %q", tt.need, got, tt.want)
		}
	}
}

// recordingOutput is a run.Output that records what Run asked of it and
// when: the test checks the rest of the output is read before the
// framework is torn down (its sandbox may go after that).
type recordingOutput struct {
	m        *schedulertest.Master
	mu       sync.Mutex
	task     run.LaunchedTask
	drained  bool
	teardown int // TEARDOWN calls seen when the output was drained
}

func (o *recordingOutput) Follow(ctx context.Context, t run.LaunchedTask, ended <-chan struct{}) error {
	o.mu.Lock()
	o.task = t
	o.mu.Unlock()
	select {
	case <-ended:
	case <-ctx.Done():
		return ctx.Err()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.drained = true
	o.teardown = len(o.m.Calls(schedulerpb.Call_TEARDOWN))
	return nil
}

func TestRunFollowsOutputUntilTheTaskEnds(t *testing.T) {
	m := schedulertest.NewMaster(t)
	o := &recordingOutput{m: m}
	done, out := start(t, m, run.Options{Command: []string{"sh", "-c", "exit 3"}, Output: o,
		Env: []string{"GREETING=hi", "EMPTY="}, DockerImage: "alpine:3"})
	m.WaitSubscriptions(t, 1, wait)
	m.Send(offersEvent(offer("O1", "a1", "cpus:1;mem:64")))
	task := m.WaitCall(t, schedulerpb.Call_ACCEPT, 1, wait).GetAccept().GetOperations()[0].GetLaunch().GetTaskInfos()[0]
	if vs := task.GetCommand().GetEnvironment().GetVariables(); len(vs) != 2 || vs[0].GetName() != "GREETING" || vs[0].GetValue() != "hi" || vs[1].GetValue() != "" {
		t.Errorf("environment = %v", vs)
	}
	if c := task.GetContainer(); c.GetType() != mesos.ContainerInfo_DOCKER || c.GetDocker().GetImage() != "alpine:3" {
		t.Errorf("container = %v", c)
	}
	id := task.GetTaskId().GetValue()
	m.Send(updateEvent(id, "a1", update{state: mesos.TaskState_TASK_RUNNING, source: executor}, 0))
	m.Send(updateEvent(id, "a1", update{state: mesos.TaskState_TASK_FAILED, source: executor, message: "Command exited with status 3"}, 1))
	res := finish(t, done)
	if res.code != 3 || res.err != nil {
		t.Errorf("Run = %d, %v; want the task's exit status 3", res.code, res.err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if want := (run.LaunchedTask{FrameworkID: m.FrameworkID(), AgentID: "a1", TaskID: id}); o.task != want {
		t.Errorf("followed %+v, want %+v", o.task, want)
	}
	if !o.drained || o.teardown != 0 {
		t.Errorf("output drained %v with %d TEARDOWN calls already made; want drained before teardown", o.drained, o.teardown)
	}
	if !strings.Contains(out.String(), "TASK_FAILED") {
		t.Errorf("status lines %q", out.String())
	}
}

// TestRunSaysWhyItWaits: issue 16's trap — a task that fits no agent
// (cpus:5 on 2-CPU agents) waited silently forever.
func TestRunSaysWhyItWaits(t *testing.T) {
	m := schedulertest.NewMaster(t)
	m.Mux.HandleFunc("/master/slaves", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"slaves":[{"id":"S0","hostname":"h0","resources":{"cpus":2,"mem":1024,"ports":"[31000-32000]"}},
			{"id":"S1","hostname":"h1","resources":{"cpus":2,"mem":1024}}]}`)
	})
	clk := clock.NewFake(time.Unix(0, 0))
	log := &syncBuffer{}
	done, _ := start(t, m, run.Options{Command: []string{"true"}, Resources: "cpus:5;mem:32", Clock: clk, Log: log})
	m.WaitSubscriptions(t, 1, wait)
	m.Send(offersEvent(offer("O1", "a1", "cpus:2;mem:1024")))
	m.WaitCall(t, schedulerpb.Call_DECLINE, 1, wait)
	const want = "Waiting for an offer of cpus:5; mem:32: no agent has cpus:5; largest is cpus:2"
	if !schedulertest.Eventually(wait, func() bool {
		if clk.Pending() > 0 {
			clk.Advance(time.Second)
		}
		return strings.Contains(log.String(), want)
	}) {
		t.Fatalf("log %q lacks %q", log.String(), want)
	}
	// Said once, not at every interval while nothing changes.
	for range 40 {
		clk.Advance(time.Second)
	}
	if n := strings.Count(log.String(), "Waiting for an offer"); n != 1 {
		t.Errorf("said why %d times: %q", n, log.String())
	}
	select {
	case r := <-done:
		t.Fatalf("Run returned %v while waiting", r)
	default:
	}
}

// When an agent could hold the task in total, run says what the
// allocator says keeps it from being offered.
func TestRunWaitingQuotesTheAllocator(t *testing.T) {
	m := schedulertest.NewMaster(t)
	m.Mux.HandleFunc("/master/slaves", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"slaves":[{"id":"S0","hostname":"h0","resources":{"cpus":8,"mem":8192}}]}`)
	})
	m.Mux.HandleFunc("/master/allocator/explain", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("framework_id") != m.FrameworkID() {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"roles":[{"role":"*","reason":"OVER_QUOTA_LIMIT","message":"the role has reached its quota limit (1 of 1 active agents)"}]}`)
	})
	clk := clock.NewFake(time.Unix(0, 0))
	log := &syncBuffer{}
	start(t, m, run.Options{Command: []string{"true"}, Resources: "cpus:5;mem:32", Clock: clk, Log: log})
	m.WaitSubscriptions(t, 1, wait)
	const want = "agent h0 has cpus:5;mem:32 in total; waiting for that much to be free"
	const says = "the allocator says OVER_QUOTA_LIMIT: the role has reached its quota limit"
	if !schedulertest.Eventually(wait, func() bool {
		if clk.Pending() > 0 {
			clk.Advance(time.Second)
		}
		return strings.Contains(log.String(), want) && strings.Contains(log.String(), says)
	}) {
		t.Fatalf("log %q lacks %q and %q", log.String(), want, says)
	}
}

// blockingOutput follows until its context ends, and says so.
type blockingOutput struct{ stopped chan error }

func (o *blockingOutput) Follow(ctx context.Context, _ run.LaunchedTask, _ <-chan struct{}) error {
	<-ctx.Done()
	o.stopped <- ctx.Err()
	return ctx.Err()
}

// A run that ends for another reason than its task's end (here the
// master removes the framework) stops following the output.
func TestRunStopsOutputOnOtherEnds(t *testing.T) {
	m := schedulertest.NewMaster(t)
	o := &blockingOutput{stopped: make(chan error, 1)}
	done, _ := start(t, m, run.Options{Command: []string{"sleep", "60"}, Output: o})
	m.WaitSubscriptions(t, 1, wait)
	m.Send(offersEvent(offer("O1", "a1", "cpus:1;mem:64")))
	task := m.WaitCall(t, schedulerpb.Call_ACCEPT, 1, wait).GetAccept().GetOperations()[0].GetLaunch().GetTaskInfos()[0]
	m.Send(updateEvent(task.GetTaskId().GetValue(), "a1", update{state: mesos.TaskState_TASK_RUNNING, source: executor}, 0))
	m.WaitCall(t, schedulerpb.Call_ACKNOWLEDGE, 1, wait)
	m.Send(&schedulerpb.Event{Type: schedulerpb.Event_ERROR.Enum(), Error: &schedulerpb.Event_Error{Message: proto.String("Framework has been removed")}})
	if res := finish(t, done); res.code != run.ExitMezzo {
		t.Errorf("Run = %d, %v; want %d", res.code, res.err, run.ExitMezzo)
	}
	select {
	case <-o.stopped:
	case <-time.After(wait):
		t.Fatal("the output's follower still runs after Run returned")
	}
}
