package run_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/frameworks/run"
	"mezzo/internal/clock"
	"mezzo/resources"
	"mezzo/scheduler/schedulertest"
)

// wait bounds every wait on a condition: generous, since the whole suite
// shares two cores with Docker and browsers under CI (5 s was seen to pass
// by), and only a failing test waits it out.
const wait = 30 * time.Second

// uniqueID is a generated task ID: the name and 8 random hex digits.
var uniqueID = regexp.MustCompile(`^[a-z-]+-[0-9a-f]{8}$`)

// syncBuffer is an io.Writer safe to read while Run writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func offer(id, agent, res string) *mesos.Offer {
	return &mesos.Offer{
		Id:          &mesos.OfferID{Value: proto.String(id)},
		FrameworkId: &mesos.FrameworkID{Value: proto.String("ignored")},
		AgentId:     &mesos.AgentID{Value: proto.String(agent)},
		Hostname:    proto.String(agent + ".example"),
		Resources:   resources.MustParse(res).Proto(),
	}
}

func offersEvent(os ...*mesos.Offer) *schedulerpb.Event {
	return &schedulerpb.Event{Type: schedulerpb.Event_OFFERS.Enum(), Offers: &schedulerpb.Event_Offers{Offers: os}}
}

type update struct {
	state   mesos.TaskState
	source  *mesos.TaskStatus_Source
	reason  *mesos.TaskStatus_Reason
	message string
	noUUID  bool
}

func updateEvent(task, agent string, u update, n int) *schedulerpb.Event {
	st := &mesos.TaskStatus{
		TaskId:    &mesos.TaskID{Value: proto.String(task)},
		State:     u.state.Enum(),
		Source:    u.source,
		Reason:    u.reason,
		AgentId:   &mesos.AgentID{Value: proto.String(agent)},
		Timestamp: proto.Float64(1e9 + float64(n)),
	}
	if u.message != "" {
		st.Message = proto.String(u.message)
	}
	if !u.noUUID {
		st.Uuid = []byte{byte(n), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	}
	return &schedulerpb.Event{Type: schedulerpb.Event_UPDATE.Enum(), Update: &schedulerpb.Event_Update{Status: st}}
}

var (
	executor = mesos.TaskStatus_SOURCE_EXECUTOR.Enum()
	master   = mesos.TaskStatus_SOURCE_MASTER.Enum()
)

type result struct {
	code int
	err  error
}

// start runs Run against the fake master in the background.
func start(t *testing.T, m *schedulertest.Master, opts run.Options) (<-chan result, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	opts.Masters = []string{m.Addr()}
	opts.Out = out
	if opts.Clock == nil {
		opts.Clock = clock.NewFake(time.Unix(0, 0))
	}
	if opts.User == "" {
		opts.User = "alice"
	}
	return runAsync(t, opts), out
}

// runAsync runs Run in the background until the test ends.
func runAsync(t *testing.T, opts run.Options) <-chan result {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan result, 1)
	go func() {
		code, err := run.Run(ctx, opts)
		done <- result{code, err}
	}()
	return done
}

func finish(t *testing.T, done <-chan result) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(wait):
		t.Fatal("Run did not return")
	}
	return result{}
}

func TestRunScenarios(t *testing.T) {
	tests := []struct {
		name      string
		opts      run.Options
		offers    [][]*mesos.Offer // batches; the task lands on agent "a1"
		updates   []update
		wantCode  int
		wantLines []string
		wantAcks  int
		check     func(t *testing.T, task *mesos.TaskInfo, m *schedulertest.Master)
	}{
		{
			name:   "finished",
			opts:   run.Options{Command: []string{"/bin/echo", "hello world"}, Codec: codec.JSON},
			offers: [][]*mesos.Offer{{offer("O1", "a1", "cpus:4;mem:1024"), offer("O2", "a2", "cpus:4;mem:1024")}},
			updates: []update{
				{state: mesos.TaskState_TASK_STARTING, source: executor},
				{state: mesos.TaskState_TASK_RUNNING, source: executor},
				{state: mesos.TaskState_TASK_FINISHED, source: executor, message: "Command exited with status 0"},
			},
			wantCode: 0,
			wantLines: []string{
				"mezzo-run TASK_STARTING source=SOURCE_EXECUTOR",
				"mezzo-run TASK_RUNNING source=SOURCE_EXECUTOR",
				`mezzo-run TASK_FINISHED source=SOURCE_EXECUTOR message="Command exited with status 0"`,
			},
			wantAcks: 3,
			check: func(t *testing.T, task *mesos.TaskInfo, m *schedulertest.Master) {
				cmd := task.GetCommand()
				if cmd.GetShell() || cmd.Shell == nil || cmd.GetValue() != "/bin/echo" ||
					strings.Join(cmd.GetArguments(), "|") != "/bin/echo|hello world" {
					t.Errorf("command = %v", cmd)
				}
				got, _ := resources.FromProto(task.GetResources())
				if !got.Equal(resources.MustParse("cpus:0.1;mem:32")) {
					t.Errorf("task resources = %v", got)
				}
				// The other offer of the batch is declined for an hour.
				d := m.WaitCall(t, schedulerpb.Call_DECLINE, 1, wait).GetDecline()
				if len(d.GetOfferIds()) != 1 || d.GetOfferIds()[0].GetValue() != "O2" || d.GetFilters().GetRefuseSeconds() != run.DeclineSeconds {
					t.Errorf("decline = %v", d)
				}
				m.WaitCall(t, schedulerpb.Call_SUPPRESS, 1, wait)
			},
		},
		{
			name:   "failed with reason",
			opts:   run.Options{Command: []string{"false"}, Name: "job", TaskID: "job-1"},
			offers: [][]*mesos.Offer{{offer("O1", "a1", "cpus:1;mem:64")}},
			updates: []update{
				{state: mesos.TaskState_TASK_RUNNING, source: executor},
				{state: mesos.TaskState_TASK_FAILED, source: executor, reason: mesos.TaskStatus_REASON_COMMAND_EXECUTOR_FAILED.Enum(), message: "Command exited with status 1"},
			},
			wantCode: 1,
			wantLines: []string{
				"job-1 TASK_RUNNING source=SOURCE_EXECUTOR",
				`job-1 TASK_FAILED source=SOURCE_EXECUTOR reason=REASON_COMMAND_EXECUTOR_FAILED message="Command exited with status 1"`,
			},
			wantAcks: 2,
			check: func(t *testing.T, task *mesos.TaskInfo, _ *schedulertest.Master) {
				if task.GetName() != "job" || task.GetTaskId().GetValue() != "job-1" {
					t.Errorf("task name/id = %q/%q", task.GetName(), task.GetTaskId().GetValue())
				}
			},
		},
		{
			name:   "master rejects the task without uuid",
			opts:   run.Options{Command: []string{"ls"}},
			offers: [][]*mesos.Offer{{offer("O1", "a1", "cpus:1;mem:64")}},
			updates: []update{{state: mesos.TaskState_TASK_ERROR, source: master,
				reason: mesos.TaskStatus_REASON_TASK_INVALID.Enum(), message: "Task uses more resources\nthan offered", noUUID: true}},
			wantCode:  run.ExitMezzo,
			wantLines: []string{`mezzo-run TASK_ERROR source=SOURCE_MASTER reason=REASON_TASK_INVALID message="Task uses more resources\nthan offered"`},
			wantAcks:  0,
		},
		{
			name: "shell command after a too-small offer",
			opts: run.Options{Command: []string{"echo hi && exit 3"}, Shell: true, Resources: "cpus:2;mem:128"},
			offers: [][]*mesos.Offer{
				{offer("O0", "a0", "cpus:1;mem:4096")},
				{offer("O1", "a1", "cpus:2;mem:128;disk:10")},
			},
			updates:   []update{{state: mesos.TaskState_TASK_KILLED, source: executor}},
			wantCode:  run.ExitKilled,
			wantLines: []string{"mezzo-run TASK_KILLED source=SOURCE_EXECUTOR"},
			wantAcks:  1,
			check: func(t *testing.T, task *mesos.TaskInfo, m *schedulertest.Master) {
				if cmd := task.GetCommand(); !cmd.GetShell() || cmd.GetValue() != "echo hi && exit 3" || len(cmd.GetArguments()) != 0 {
					t.Errorf("command = %v", cmd)
				}
				// The too-small offer was declined with the default
				// filter, so it comes back when resources free up.
				d := m.Calls(schedulerpb.Call_DECLINE)[0].GetDecline()
				if d.GetOfferIds()[0].GetValue() != "O0" || d.Filters != nil {
					t.Errorf("first decline = %v", d)
				}
			},
		},
		{
			name:   "role reservation",
			opts:   run.Options{Command: []string{"true"}, Role: "web", Checkpoint: true},
			offers: [][]*mesos.Offer{{offer("O1", "a1", "cpus(web):1;mem(web):64")}},
			updates: []update{
				{state: mesos.TaskState_TASK_LOST, source: mesos.TaskStatus_SOURCE_AGENT.Enum(), reason: mesos.TaskStatus_REASON_AGENT_REMOVED.Enum()},
			},
			wantCode:  run.ExitLost,
			wantLines: []string{"mezzo-run TASK_LOST source=SOURCE_AGENT reason=REASON_AGENT_REMOVED"},
			wantAcks:  1,
			check: func(t *testing.T, task *mesos.TaskInfo, m *schedulertest.Master) {
				got, _ := resources.FromProto(task.GetResources())
				if !got.Equal(resources.MustParse("cpus(web):0.1;mem(web):32")) {
					t.Errorf("task resources = %v", got)
				}
				fi := m.Calls(schedulerpb.Call_SUBSCRIBE)[0].GetSubscribe().GetFrameworkInfo()
				if fi.GetRole() != "web" || !fi.GetCheckpoint() || fi.GetUser() != "alice" ||
					len(fi.GetCapabilities()) != 1 || fi.GetCapabilities()[0].GetType() != mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT {
					t.Errorf("framework info = %v", fi)
				}
			},
		},
		{
			// The role's reservation is too small alone: the rest comes
			// from unreserved resources of the same offer (mesos-execute
			// finds resources the same way).
			name:      "reserved and unreserved mixed",
			opts:      run.Options{Command: []string{"true"}, Role: "web", Resources: "cpus:1.5;mem:32"},
			offers:    [][]*mesos.Offer{{offer("O1", "a1", "cpus(web):1;cpus:1;mem:2048")}},
			updates:   []update{{state: mesos.TaskState_TASK_FINISHED, source: executor}},
			wantCode:  0,
			wantLines: []string{"mezzo-run TASK_FINISHED source=SOURCE_EXECUTOR"},
			wantAcks:  1,
			check: func(t *testing.T, task *mesos.TaskInfo, _ *schedulertest.Master) {
				got, _ := resources.FromProto(task.GetResources())
				if !got.Equal(resources.MustParse("cpus(web):1;cpus:0.5;mem:32")) {
					t.Errorf("task resources = %v", got)
				}
			},
		},
		{
			// A task on a shared persistent volume: the framework declares
			// SHARED_RESOURCES, without which the master never offers one.
			name: "task file on a shared volume",
			opts: run.Options{Role: "db", Task: sharedTask},
			offers: [][]*mesos.Offer{{func() *mesos.Offer {
				o := offer("O1", "a1", "cpus(db):1;mem(db):64")
				o.Resources = append(o.Resources, proto.CloneOf(sharedTask.GetResources()[2]))
				return o
			}()}},
			updates:   []update{{state: mesos.TaskState_TASK_FINISHED, source: executor}},
			wantCode:  0,
			wantLines: []string{"t-shared TASK_FINISHED source=SOURCE_EXECUTOR"},
			wantAcks:  1,
			check: func(t *testing.T, task *mesos.TaskInfo, m *schedulertest.Master) {
				fi := m.Calls(schedulerpb.Call_SUBSCRIBE)[0].GetSubscribe().GetFrameworkInfo()
				var caps []string
				for _, c := range fi.GetCapabilities() {
					caps = append(caps, c.GetType().String())
				}
				if fmt.Sprint(caps) != "[RESERVATION_REFINEMENT SHARED_RESOURCES]" {
					t.Errorf("capabilities = %v", caps)
				}
				if len(task.GetResources()) != 3 || task.GetResources()[2].GetShared() == nil {
					t.Errorf("task resources = %v", task.GetResources())
				}
			},
		},
		{
			name: "task file, launched as written",
			opts: run.Options{Task: mustParseTask(`{"name":"from-file","task_id":{"value":"t-file"},
				"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":0.5}},{"name":"mem","type":"SCALAR","scalar":{"value":64}}],
				"command":{"value":"echo $GREETING","environment":{"variables":[{"name":"GREETING","value":"hi"}]}},
				"labels":{"labels":[{"key":"k","value":"v"}]}}`)},
			offers: [][]*mesos.Offer{
				{offer("O0", "a0", "cpus:0.25;mem:4096")},
				{offer("O1", "a1", "cpus:1;mem:128")},
			},
			updates:   []update{{state: mesos.TaskState_TASK_FINISHED, source: executor}},
			wantCode:  0,
			wantLines: []string{"t-file TASK_FINISHED source=SOURCE_EXECUTOR"},
			wantAcks:  1,
			check: func(t *testing.T, task *mesos.TaskInfo, m *schedulertest.Master) {
				if task.GetName() != "from-file" || task.GetTaskId().GetValue() != "t-file" ||
					task.GetCommand().GetValue() != "echo $GREETING" || task.GetCommand().GetEnvironment().GetVariables()[0].GetValue() != "hi" ||
					task.GetLabels().GetLabels()[0].GetKey() != "k" {
					t.Errorf("task = %v", task)
				}
				got, _ := resources.FromProto(task.GetResources())
				if !got.Equal(resources.MustParse("cpus:0.5;mem:64")) {
					t.Errorf("task resources = %v", got)
				}
			},
		},
		{
			name: "task file without name or task_id, reserved resources under --role",
			opts: run.Options{Name: "nameless", Role: "db", Task: mustParseTask(`{
				"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"role":"db"}],
				"command":{"value":"true"}}`)},
			offers: [][]*mesos.Offer{
				{offer("O0", "a0", "cpus:4")},
				{offer("O1", "a1", "cpus(db):2")},
			},
			updates:   []update{{state: mesos.TaskState_TASK_FINISHED, source: executor}},
			wantCode:  0,
			wantLines: []string{"mezzo-run TASK_FINISHED source=SOURCE_EXECUTOR"},
			wantAcks:  1,
			check: func(t *testing.T, task *mesos.TaskInfo, m *schedulertest.Master) {
				if task.GetName() != "nameless" || !uniqueID.MatchString(task.GetTaskId().GetValue()) ||
					!strings.HasPrefix(task.GetTaskId().GetValue(), "nameless-") {
					t.Errorf("name %q, task id %q: want the name, and the name with a random suffix", task.GetName(), task.GetTaskId().GetValue())
				}
				if fi := m.Calls(schedulerpb.Call_SUBSCRIBE)[0].GetSubscribe().GetFrameworkInfo(); fi.GetRole() != "db" {
					t.Errorf("framework role %q, want db", fi.GetRole())
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := schedulertest.NewMaster(t)
			done, out := start(t, m, tt.opts)
			m.WaitSubscriptions(t, 1, wait)
			for _, batch := range tt.offers {
				if !m.Send(offersEvent(batch...)) {
					t.Fatal("could not send offers")
				}
			}
			accept := m.WaitCall(t, schedulerpb.Call_ACCEPT, 1, wait).GetAccept()
			if len(accept.GetOfferIds()) != 1 || accept.GetOfferIds()[0].GetValue() != "O1" {
				t.Fatalf("accepted offers %v, want O1", accept.GetOfferIds())
			}
			ops := accept.GetOperations()
			if len(ops) != 1 || ops[0].GetType() != mesos.Offer_Operation_LAUNCH || len(ops[0].GetLaunch().GetTaskInfos()) != 1 {
				t.Fatalf("operations = %v", ops)
			}
			task := ops[0].GetLaunch().GetTaskInfos()[0]
			if task.GetAgentId().GetValue() != "a1" {
				t.Errorf("task on agent %q, want a1", task.GetAgentId().GetValue())
			}
			for i, u := range tt.updates {
				m.Send(updateEvent(task.GetTaskId().GetValue(), "a1", u, i))
			}
			res := finish(t, done)
			if res.code != tt.wantCode || res.err != nil {
				t.Errorf("Run = %d, %v; want %d, nil", res.code, res.err, tt.wantCode)
			}
			// "mezzo-run " in wantLines stands for a generated task ID.
			want := strings.Join(tt.wantLines, "\n")
			if id := task.GetTaskId().GetValue(); tt.opts.TaskID == "" && tt.opts.Task.GetTaskId() == nil {
				if !uniqueID.MatchString(id) {
					t.Errorf("generated task ID %q, want NAME-xxxxxxxx", id)
				}
				want = strings.ReplaceAll(want, "mezzo-run ", id+" ")
			}
			if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != want {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
			}
			acks := m.Calls(schedulerpb.Call_ACKNOWLEDGE)
			if len(acks) != tt.wantAcks {
				t.Errorf("%d acknowledgements, want %d", len(acks), tt.wantAcks)
			}
			for i, a := range acks {
				if a.GetAcknowledge().GetTaskId().GetValue() != task.GetTaskId().GetValue() || len(a.GetAcknowledge().GetUuid()) != 16 ||
					a.GetAcknowledge().GetUuid()[0] != byte(i) || a.GetAcknowledge().GetAgentId().GetValue() != "a1" {
					t.Errorf("ack %d = %v", i, a)
				}
			}
			if n := len(m.Calls(schedulerpb.Call_TEARDOWN)); n != 1 {
				t.Errorf("%d TEARDOWN calls, want 1", n)
			}
			if n := len(m.Calls(schedulerpb.Call_ACCEPT)); n != 1 {
				t.Errorf("%d ACCEPT calls, want exactly 1", n)
			}
			if tt.check != nil {
				tt.check(t, task, m)
			}
		})
	}
}

func TestRunUsageErrors(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	tests := []struct {
		name string
		opts run.Options
		want string
	}{
		{"no command", run.Options{Masters: []string{"127.0.0.1:1"}}, "no command"},
		{"no master", run.Options{Command: []string{"ls"}}, "no master"},
		{"bad resources", run.Options{Masters: []string{"127.0.0.1:1"}, Command: []string{"ls"}, Resources: "cpus:lots"}, "--resources"},
		{"unreachable", run.Options{Masters: []string{dead}, Command: []string{"ls"}, Clock: instantClock()}, "cannot subscribe"},
		{"task and command", run.Options{Masters: []string{"127.0.0.1:1"}, Command: []string{"ls"}, Task: mustParseTask(minimalTask)}, "not both"},
		{"task and resources", run.Options{Masters: []string{"127.0.0.1:1"}, Resources: "cpus:1", Task: mustParseTask(minimalTask)}, "resources option"},
		{"task and shell", run.Options{Masters: []string{"127.0.0.1:1"}, Shell: true, Task: mustParseTask(minimalTask)}, "shell"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Out = &bytes.Buffer{}
			code, err := run.Run(context.Background(), tt.opts)
			if code != run.ExitUsage || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %d, %v; want 2 and an error containing %q", code, err, tt.want)
			}
		})
	}
}

// instantClock is a fake clock whose timers fire at once, so that
// subscription retries need no waiting.
func instantClock() clock.Clock { return instant{clock.NewFake(time.Unix(0, 0))} }

type instant struct{ *clock.Fake }

func (c instant) NewTimer(time.Duration) clock.Timer {
	f := fired{make(chan time.Time, 1)}
	f.c <- c.Now()
	return f
}

type fired struct{ c chan time.Time }

func (f fired) C() <-chan time.Time   { return f.c }
func (f fired) Stop() bool            { return false }
func (f fired) Reset(d time.Duration) {}

func TestRunMasterError(t *testing.T) {
	m := schedulertest.NewMaster(t)
	done, _ := start(t, m, run.Options{Command: []string{"ls"}})
	m.WaitSubscriptions(t, 1, wait)
	m.Send(&schedulerpb.Event{Type: schedulerpb.Event_ERROR.Enum(), Error: &schedulerpb.Event_Error{Message: proto.String("Framework has been removed")}})
	res := finish(t, done)
	if res.code != run.ExitUsage || res.err == nil || !strings.Contains(res.err.Error(), "Framework has been removed") {
		t.Errorf("Run = %d, %v", res.code, res.err)
	}
}

func TestRunTimeoutTearsDown(t *testing.T) {
	m := schedulertest.NewMaster(t)
	clk := clock.NewFake(time.Unix(0, 0))
	done, _ := start(t, m, run.Options{Command: []string{"sleep", "1000"}, Timeout: time.Minute, Clock: clk})
	m.WaitSubscriptions(t, 1, wait)
	m.Send(offersEvent(offer("O1", "a1", "cpus:1;mem:64")))
	m.WaitCall(t, schedulerpb.Call_ACCEPT, 1, wait)
	clk.Advance(time.Minute)
	res := finish(t, done)
	if res.code != run.ExitTimeout || res.err == nil || !strings.Contains(res.err.Error(), "timed out") {
		t.Errorf("Run = %d, %v", res.code, res.err)
	}
	m.WaitCall(t, schedulerpb.Call_TEARDOWN, 1, wait)
}

func TestRunReconcilesAfterResubscribe(t *testing.T) {
	m := schedulertest.NewMaster(t)
	clk := clock.NewFake(time.Unix(0, 0))
	done, out := start(t, m, run.Options{Command: []string{"ls"}, TaskID: "mezzo-run", Clock: clk})
	m.WaitSubscriptions(t, 1, wait)
	m.Send(offersEvent(offer("O1", "a1", "cpus:1;mem:64")))
	m.WaitCall(t, schedulerpb.Call_SUPPRESS, 1, wait)

	m.Disconnect()
	if !schedulertest.Eventually(wait, func() bool {
		if m.Subscriptions() >= 2 {
			return true
		}
		if clk.Pending() > 0 {
			clk.Advance(time.Second)
		}
		return false
	}) {
		t.Fatal("no re-subscription")
	}
	rc := m.WaitCall(t, schedulerpb.Call_RECONCILE, 1, wait).GetReconcile()
	if len(rc.GetTasks()) != 1 || rc.GetTasks()[0].GetTaskId().GetValue() != "mezzo-run" {
		t.Errorf("reconcile = %v", rc)
	}
	re := m.Calls(schedulerpb.Call_SUBSCRIBE)[1]
	if re.GetFrameworkId().GetValue() != m.FrameworkID() {
		t.Errorf("re-subscribed as %v, want %s", re.GetFrameworkId(), m.FrameworkID())
	}
	m.Send(updateEvent("mezzo-run", "a1", update{state: mesos.TaskState_TASK_FINISHED, source: master,
		reason: mesos.TaskStatus_REASON_RECONCILIATION.Enum(), message: "Reconciliation: Latest task state", noUUID: true}, 0))
	if res := finish(t, done); res.code != 0 || res.err != nil {
		t.Errorf("Run = %d, %v", res.code, res.err)
	}
	if !strings.Contains(out.String(), "mezzo-run TASK_FINISHED source=SOURCE_MASTER reason=REASON_RECONCILIATION") {
		t.Errorf("output %q", out.String())
	}
}

func TestStatusLine(t *testing.T) {
	tests := []struct {
		in   *mesos.TaskStatus
		want string
	}{
		{&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t")}, State: mesos.TaskState_TASK_STAGING.Enum()}, "t TASK_STAGING"},
		{&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t")}, State: mesos.TaskState_TASK_RUNNING.Enum(),
			Source: mesos.TaskStatus_SOURCE_MASTER.Enum()}, "t TASK_RUNNING source=SOURCE_MASTER"},
		{&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t")}, State: mesos.TaskState_TASK_FAILED.Enum(),
			Reason: mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY.Enum(), Message: proto.String(`oom "x"`)},
			`t TASK_FAILED reason=REASON_CONTAINER_LIMITATION_MEMORY message="oom \"x\""`},
	}
	for _, tt := range tests {
		if got := run.StatusLine(tt.in); got != tt.want {
			t.Errorf("StatusLine = %q, want %q", got, tt.want)
		}
	}
	for st, want := range map[mesos.TaskState]bool{
		mesos.TaskState_TASK_FINISHED: true, mesos.TaskState_TASK_GONE_BY_OPERATOR: true, mesos.TaskState_TASK_DROPPED: true,
		mesos.TaskState_TASK_RUNNING: false, mesos.TaskState_TASK_UNREACHABLE: false, mesos.TaskState_TASK_KILLING: false,
	} {
		if mesos.IsTerminal(st) != want {
			t.Errorf("mesos.IsTerminal(%v) = %v", st, !want)
		}
	}
}

const minimalTask = `{"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":1}}],"command":{"value":"true"}}`

// sharedTask uses a shared persistent volume on disk reserved to db.
var sharedTask = mustParseTask(`{"name":"shared","task_id":{"value":"t-shared"},"command":{"value":"true"},
	"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":0.5},"reservations":[{"type":"STATIC","role":"db"}]},
	{"name":"mem","type":"SCALAR","scalar":{"value":32},"reservations":[{"type":"STATIC","role":"db"}]},
	{"name":"disk","type":"SCALAR","scalar":{"value":64},"reservations":[{"type":"STATIC","role":"db"}],
	 "disk":{"persistence":{"id":"v"},"volume":{"container_path":"v","mode":"RW"}},"shared":{}}]}`)

func mustParseTask(js string) *mesos.TaskInfo {
	t, err := run.ParseTask([]byte(js))
	if err != nil {
		panic(err)
	}
	return t
}

// A task file's mistakes are reported naming the field, before anything
// reaches a master.
func TestParseTaskErrors(t *testing.T) {
	cpus := `"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":1}}]`
	tests := []struct {
		name, json, want string
	}{
		{"not JSON", `{`, "not a JSON object"},
		{"an array", `[]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"unknown field", `{` + cpus + `,"command":{"value":"x"},"comand":{}}`, "unknown field 'comand'"},
		{"unknown nested field", `{` + cpus + `,"command":{"value":"x","enviroment":{}}}`, "unknown field 'command.enviroment'"},
		{"unknown field in a list", `{"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"rol":"db"}],"command":{"value":"x"}}`, "unknown field 'resources[0].rol'"},
		{"wrong type", `{` + cpus + `,"command":{"value":7}}`, "command.value"},
		{"no resources", `{"command":{"value":"x"}}`, "'resources' is missing"},
		{"negative cpus", `{"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":-1}}],"command":{"value":"x"}}`, "invalid 'resources'"},
		{"scalar without value", `{"resources":[{"name":"cpus","type":"SCALAR"}],"command":{"value":"x"}}`, "resources"},
		{"neither command nor executor", `{` + cpus + `}`, "one of 'command' or 'executor'"},
		{"both", `{` + cpus + `,"command":{"value":"x"},"executor":{"executor_id":{"value":"e"},"command":{"value":"x"}}}`, "not both"},
		{"empty command", `{` + cpus + `,"command":{}}`, "'command.value'"},
		{"empty task id", `{` + cpus + `,"command":{"value":"x"},"task_id":{"value":""}}`, "'task_id.value'"},
		{"executor without id", `{` + cpus + `,"executor":{"command":{"value":"x"}}}`, "executor.executor_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run.ParseTask([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseTask(%s) = %v, want an error naming %q", tt.json, err, tt.want)
			}
		})
	}
	// What may be left out is left unset, for Run to fill.
	task, err := run.ParseTask([]byte(minimalTask))
	if err != nil || task.Name != nil || task.TaskId != nil || task.AgentId != nil {
		t.Errorf("minimal task = %v, %v", task, err)
	}
}

// LoadTask takes what mesos-execute --task takes: a path, a file:// URL or
// the JSON itself.
func TestLoadTask(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "task.json")
	if err := os.WriteFile(path, []byte(minimalTask), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{path, "file://" + path, minimalTask, "  " + minimalTask} {
		task, err := run.LoadTask(v)
		if err != nil || task.GetCommand().GetValue() != "true" {
			t.Errorf("LoadTask(%q) = %v, %v", v, task, err)
		}
	}
	if _, err := run.LoadTask(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"command":{"value":"x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run.LoadTask(bad); err == nil || !strings.Contains(err.Error(), bad+": 'resources' is missing") {
		t.Errorf("bad file: %v", err)
	}
}
