// Package fakeagent is a stand-in for a Mesos agent's executor API, used by
// the executor packages' tests. It serves POST /api/v1/executor over real
// HTTP (httptest), records every call, streams events to the subscribed
// executor in RecordIO, and by default answers SUBSCRIBE with SUBSCRIBED and
// acknowledges every UPDATE, as the agent's status update manager does.
package fakeagent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/executorpb"
	mesos "mezzo/api/mesos"
	"mezzo/api/recordio"
)

// Agent is a fake agent. Its fields are set before the first request.
type Agent struct {
	// FrameworkInfo goes into SUBSCRIBED (capabilities matter for
	// TASK_KILLING).
	FrameworkInfo *mesos.FrameworkInfo
	// NoAutoAck stops the agent from acknowledging updates by itself.
	NoAutoAck bool
	// NoAutoSubscribed stops the agent from sending SUBSCRIBED on subscribe.
	NoAutoSubscribed bool

	Server *httptest.Server

	mu         sync.Mutex
	calls      []*executorpb.Call
	subscribes []*executorpb.Call
	stream     *stream
	rejectWith int  // answer SUBSCRIBE with this status while non-zero
	down       bool // abort every request, as a dead agent would
	changed    chan struct{}
}

type stream struct {
	events chan *executorpb.Event
	done   chan struct{}
	once   sync.Once
}

func (s *stream) close() { s.once.Do(func() { close(s.done) }) }

// New starts a fake agent; it is closed when the test ends.
func New(t testing.TB) *Agent {
	a := &Agent{changed: make(chan struct{})}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(func() {
		a.Down()
		a.Server.Close()
	})
	return a
}

// Endpoint is the agent's ip:port, for MESOS_AGENT_ENDPOINT.
func (a *Agent) Endpoint() string { return strings.TrimPrefix(a.Server.URL, "http://") }

// Env returns an executor environment pointing at this agent.
func (a *Agent) Env(executorID, sandbox string, extra ...string) []string {
	env := []string{
		"MESOS_FRAMEWORK_ID=fw-1",
		"MESOS_EXECUTOR_ID=" + executorID,
		"MESOS_AGENT_ENDPOINT=" + a.Endpoint(),
		"MESOS_SANDBOX=" + sandbox,
		"MESOS_DIRECTORY=" + sandbox,
		"MESOS_CHECKPOINT=0",
		"MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD=5secs",
		"PATH=/usr/local/bin:/usr/bin:/bin",
	}
	return append(env, extra...)
}

func (a *Agent) notifyLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}

func (a *Agent) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	down := a.down
	a.mu.Unlock()
	if down {
		panic(http.ErrAbortHandler) // drop the connection without a response
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/v1/executor" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	mt, code, err := codec.RequestType(r)
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := &executorpb.Call{}
	if err := codec.Unmarshal(mt, body, call); err != nil {
		http.Error(w, "Failed to parse body into Call: "+err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.calls = append(a.calls, call)
	a.notifyLocked()
	reject := a.rejectWith
	a.mu.Unlock()

	switch call.GetType() {
	case executorpb.Call_SUBSCRIBE:
		if reject != 0 {
			a.mu.Lock()
			a.subscribes = append(a.subscribes, call)
			a.mu.Unlock()
			http.Error(w, "Agent has not finished recovery", reject)
			return
		}
		a.subscribe(w, r, call)
	case executorpb.Call_UPDATE:
		w.WriteHeader(http.StatusAccepted)
		if !a.NoAutoAck {
			st := call.GetUpdate().GetStatus()
			a.Send(&executorpb.Event{
				Type: executorpb.Event_ACKNOWLEDGED.Enum(),
				Acknowledged: &executorpb.Event_Acknowledged{
					TaskId: st.GetTaskId(),
					Uuid:   st.GetUuid(),
				},
			})
		}
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

func (a *Agent) subscribe(w http.ResponseWriter, r *http.Request, call *executorpb.Call) {
	respType, err := codec.ResponseType(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotAcceptable)
		return
	}
	s := &stream{events: make(chan *executorpb.Event, 256), done: make(chan struct{})}
	a.mu.Lock()
	if a.down {
		a.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	if a.stream != nil {
		a.stream.close()
	}
	a.stream = s
	a.subscribes = append(a.subscribes, call)
	a.notifyLocked()
	a.mu.Unlock()

	w.Header().Set("Content-Type", string(respType))
	w.WriteHeader(http.StatusOK)
	rw := recordio.NewWriter(w)
	if !a.NoAutoSubscribed {
		fi := a.FrameworkInfo
		if fi == nil {
			fi = &mesos.FrameworkInfo{User: proto.String("root"), Name: proto.String("test")}
		}
		s.events <- &executorpb.Event{
			Type: executorpb.Event_SUBSCRIBED.Enum(),
			Subscribed: &executorpb.Event_Subscribed{
				ExecutorInfo: &mesos.ExecutorInfo{
					ExecutorId:  call.GetExecutorId(),
					FrameworkId: call.GetFrameworkId(),
				},
				FrameworkInfo: fi,
				AgentInfo:     &mesos.AgentInfo{Hostname: proto.String("localhost")},
				ContainerId:   &mesos.ContainerID{Value: proto.String("container-1")},
			},
		}
	}
	for {
		select {
		case ev := <-s.events:
			b, err := codec.Marshal(respType, ev)
			if err != nil {
				return
			}
			if err := rw.Write(b); err != nil {
				return
			}
		case <-s.done:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// Send queues an event on the current subscription stream; it reports false
// if no executor is subscribed.
func (a *Agent) Send(ev *executorpb.Event) bool {
	a.mu.Lock()
	s := a.stream
	a.mu.Unlock()
	if s == nil {
		return false
	}
	select {
	case s.events <- ev:
		return true
	case <-s.done:
		return false
	}
}

// Break ends the current subscription stream (as an agent restart would).
func (a *Agent) Break() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stream != nil {
		a.stream.close()
		a.stream = nil
	}
}

// Down takes the agent away for good: the stream ends, open connections are
// closed and every later request is dropped without an answer.
func (a *Agent) Down() {
	a.mu.Lock()
	a.down = true
	if a.stream != nil {
		a.stream.close()
		a.stream = nil
	}
	a.mu.Unlock()
	a.Server.CloseClientConnections()
}

// RejectSubscribe makes SUBSCRIBE answer code (0 restores normal service).
func (a *Agent) RejectSubscribe(code int) {
	a.mu.Lock()
	a.rejectWith = code
	a.mu.Unlock()
}

// Calls returns every call received so far.
func (a *Agent) Calls() []*executorpb.Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*executorpb.Call(nil), a.calls...)
}

// Subscribes returns the SUBSCRIBE calls received so far.
func (a *Agent) Subscribes() []*executorpb.Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*executorpb.Call(nil), a.subscribes...)
}

// Updates returns the statuses of all UPDATE calls, in arrival order.
func (a *Agent) Updates() []*mesos.TaskStatus {
	var out []*mesos.TaskStatus
	for _, c := range a.Calls() {
		if c.GetType() == executorpb.Call_UPDATE {
			out = append(out, c.GetUpdate().GetStatus())
		}
	}
	return out
}

// States returns the states of the updates for one task, in order.
func (a *Agent) States(taskID string) []mesos.TaskState {
	var out []mesos.TaskState
	for _, s := range a.Updates() {
		if s.GetTaskId().GetValue() == taskID {
			out = append(out, s.GetState())
		}
	}
	return out
}

// WaitFor polls until cond holds or timeout passes (then fails the test).
// It wakes on every received call rather than sleeping.
func (a *Agent) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		a.mu.Lock()
		ch := a.changed
		a.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
			// Also re-check periodically: conditions may depend on things
			// other than calls (files, processes).
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s; updates: %s", timeout, what, a.describe())
		}
	}
}

// WaitState waits for an update of taskID in state.
func (a *Agent) WaitState(t testing.TB, taskID string, state mesos.TaskState, timeout time.Duration) *mesos.TaskStatus {
	t.Helper()
	var got *mesos.TaskStatus
	a.WaitFor(t, timeout, fmt.Sprintf("%s of task %s", state, taskID), func() bool {
		for _, s := range a.Updates() {
			if s.GetTaskId().GetValue() == taskID && s.GetState() == state {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// WaitSubscribed waits until an executor subscribed at least n times.
func (a *Agent) WaitSubscribed(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	a.WaitFor(t, timeout, fmt.Sprintf("%d subscriptions", n), func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.subscribes) >= n && a.stream != nil
	})
}

func (a *Agent) describe() string {
	var parts []string
	for _, s := range a.Updates() {
		p := s.GetTaskId().GetValue() + ":" + s.GetState().String()
		if s.GetMessage() != "" {
			p += "(" + s.GetMessage() + ")"
		}
		parts = append(parts, p)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Launch sends a LAUNCH event.
func (a *Agent) Launch(task *mesos.TaskInfo) bool {
	return a.Send(&executorpb.Event{Type: executorpb.Event_LAUNCH.Enum(), Launch: &executorpb.Event_Launch{Task: task}})
}

// LaunchGroup sends a LAUNCH_GROUP event.
func (a *Agent) LaunchGroup(tasks ...*mesos.TaskInfo) bool {
	return a.Send(&executorpb.Event{
		Type:        executorpb.Event_LAUNCH_GROUP.Enum(),
		LaunchGroup: &executorpb.Event_LaunchGroup{TaskGroup: &mesos.TaskGroupInfo{Tasks: tasks}},
	})
}

// Kill sends a KILL event; grace < 0 sends no kill policy.
func (a *Agent) Kill(taskID string, grace time.Duration) bool {
	k := &executorpb.Event_Kill{TaskId: &mesos.TaskID{Value: proto.String(taskID)}}
	if grace >= 0 {
		k.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(grace))}}
	}
	return a.Send(&executorpb.Event{Type: executorpb.Event_KILL.Enum(), Kill: k})
}

// Shutdown sends a SHUTDOWN event.
func (a *Agent) Shutdown() bool {
	return a.Send(&executorpb.Event{Type: executorpb.Event_SHUTDOWN.Enum()})
}

// Task builds a command task: a shell command, or with args an executable.
func Task(id, cmd string, args ...string) *mesos.TaskInfo {
	ci := &mesos.CommandInfo{Value: proto.String(cmd)}
	if len(args) > 0 {
		ci.Shell = proto.Bool(false)
		ci.Arguments = args
	}
	return &mesos.TaskInfo{
		Name:    proto.String(id),
		TaskId:  &mesos.TaskID{Value: proto.String(id)},
		AgentId: &mesos.AgentID{Value: proto.String("agent-1")},
		Command: ci,
	}
}
