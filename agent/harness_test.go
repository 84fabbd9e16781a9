package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mezzo/agent/containerizer/docker/dockertest"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/recordio"
	"mezzo/internal/clock"

	"google.golang.org/protobuf/proto"
)

// testExecutor is the path of testdata/testexec, built by TestMain.
var testExecutor string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agent-test")
	if err != nil {
		panic(err)
	}
	// Reachable by every user: tasks run as their user (--switch_user).
	os.Chmod(dir, 0o755)
	testExecutor = filepath.Join(dir, "testexec")
	out, err := exec.Command("go", "build", "-o", testExecutor, "./testdata/testexec").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building testexec: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	dockertest.RemoveImage()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fakeMaster speaks the master side of the agent protocol over h2c: it
// records calls and lets the test push events on each subscription.
type fakeMaster struct {
	t    *testing.T
	srv  *httptest.Server
	subs chan *fakeSub

	mu    sync.Mutex
	calls []*protocol.AgentCall
	taken []bool
	// redirect, when set, answers SUBSCRIBE with 307 to this host:port.
	redirect string
}

type fakeSub struct {
	call   *protocol.AgentCall
	events chan *protocol.AgentEvent
	end    chan struct{}
	once   sync.Once
}

func (s *fakeSub) send(ev *protocol.AgentEvent) { s.events <- ev }

// close ends the stream from the master's side.
func (s *fakeSub) close() { s.once.Do(func() { close(s.end) }) }

func newFakeMaster(t *testing.T) *fakeMaster {
	m := &fakeMaster{t: t, subs: make(chan *fakeSub, 16)}
	m.srv = httptest.NewUnstartedServer(http.HandlerFunc(m.serve))
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	m.srv.Config.Protocols = p
	m.srv.Start()
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fakeMaster) addr() string { return strings.TrimPrefix(m.srv.URL, "http://") }

func (m *fakeMaster) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != agentPath || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if r.ProtoMajor != 2 {
		m.t.Errorf("agent spoke %s to the master, want HTTP/2", r.Proto)
	}
	body, _ := io.ReadAll(r.Body)
	call := &protocol.AgentCall{}
	if err := proto.Unmarshal(body, call); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if call.GetType() != protocol.AgentCall_SUBSCRIBE {
		m.mu.Lock()
		m.calls = append(m.calls, call)
		m.taken = append(m.taken, false)
		m.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	m.mu.Lock()
	redirect := m.redirect
	m.mu.Unlock()
	if redirect != "" {
		w.Header().Set("Location", "//"+redirect+agentPath)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	sub := &fakeSub{call: call, events: make(chan *protocol.AgentEvent, 64), end: make(chan struct{})}
	m.subs <- sub
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	rw := recordio.NewWriter(w)
	for {
		select {
		case ev := <-sub.events:
			b, _ := proto.Marshal(ev)
			if rw.Write(b) != nil {
				return
			}
		case <-sub.end:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// nextSub waits for the agent's next SUBSCRIBE.
func (m *fakeMaster) nextSub(t *testing.T) *fakeSub {
	t.Helper()
	select {
	case s := <-m.subs:
		return s
	case <-time.After(waitLimit):
		t.Fatal("the agent did not subscribe")
		return nil
	}
}

// waitCall waits for a call matching pred that no earlier waitCall took.
func (m *fakeMaster) waitCall(t *testing.T, what string, pred func(*protocol.AgentCall) bool) *protocol.AgentCall {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		m.mu.Lock()
		for i, c := range m.calls {
			if !m.taken[i] && pred(c) {
				m.taken[i] = true
				m.mu.Unlock()
				return c
			}
		}
		m.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %s call from the agent; calls: %v", what, m.describe())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// takeAll takes every untaken call matching pred, in order.
func (m *fakeMaster) takeAll(pred func(*protocol.AgentCall) bool) []*protocol.AgentCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*protocol.AgentCall
	for i, c := range m.calls {
		if !m.taken[i] && pred(c) {
			m.taken[i] = true
			out = append(out, c)
		}
	}
	return out
}

// noCall checks that no untaken call matches pred right now.
func (m *fakeMaster) noCall(t *testing.T, what string, pred func(*protocol.AgentCall) bool) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range m.calls {
		if !m.taken[i] && pred(c) {
			t.Fatalf("unexpected %s call: %v", what, c)
		}
	}
}

func (m *fakeMaster) describe() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, c := range m.calls {
		s := c.GetType().String()
		if u := c.GetStatusUpdate(); u != nil {
			s += fmt.Sprintf("(%s %s)", u.GetStatus().GetTaskId().GetValue(), u.GetStatus().GetState())
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// updateFor matches a STATUS_UPDATE of task in state.
func updateFor(task string, state mesos.TaskState) func(*protocol.AgentCall) bool {
	return func(c *protocol.AgentCall) bool {
		st := c.GetStatusUpdate().GetStatus()
		return c.GetType() == protocol.AgentCall_STATUS_UPDATE && st.GetTaskId().GetValue() == task && st.GetState() == state
	}
}

func ofType(t protocol.AgentCall_Type) func(*protocol.AgentCall) bool {
	return func(c *protocol.AgentCall) bool { return c.GetType() == t }
}

// testAgent is an agent served over real HTTP on loopback.
type testAgent struct {
	*Agent
	srv   *httptest.Server
	clock *clock.Fake
	dir   string
}

func startTestAgent(t *testing.T, m *fakeMaster, mutate func(*Config)) *testAgent {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	addr := srv.Listener.Addr().String()
	host, port, _ := strings.Cut(addr, ":")
	var p int
	fmt.Sscan(port, &p)
	fake := clock.NewFake(time.Unix(1_000_000_000, 0))
	dir := t.TempDir()
	cfg := Config{
		Masters:      []string{m.addr()},
		IP:           host,
		Port:         p,
		Hostname:     "agent.test",
		WorkDir:      dir,
		Resources:    "cpus:2;mem:1024;disk:1000;ports:[31000-32000]",
		Attributes:   "rack:r1;level:3",
		LauncherPath: testExecutor,
		Clock:        fake,
		Version:      "test-1",
	}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = a.Handler()
	srv.Start()
	a.Start()
	t.Cleanup(func() {
		a.Stop()
		srv.Close()
	})
	return &testAgent{Agent: a, srv: srv, clock: fake, dir: dir}
}

// register answers the agent's subscription with SUBSCRIBED.
func register(t *testing.T, m *fakeMaster, epoch uint64) *fakeSub {
	t.Helper()
	sub := m.nextSub(t)
	sub.send(&protocol.AgentEvent{
		Type:  protocol.AgentEvent_SUBSCRIBED.Enum(),
		Epoch: proto.Uint64(epoch),
		Subscribed: &protocol.AgentEvent_Subscribed{
			AgentId:             agentIDProto("S1"),
			MasterInfo:          &mesos.MasterInfo{Id: proto.String("m1"), Ip: proto.Uint32(0), Port: proto.Uint32(5050), Hostname: proto.String("master.test")},
			PingIntervalSeconds: proto.Float64(15),
			MaxMissed:           proto.Uint32(5),
		},
	})
	return sub
}

// sync sends a PING and waits for its PONG: every event sent before it has
// been handled by then.
func (ta *testAgent) sync(t *testing.T, m *fakeMaster, sub *fakeSub, epoch uint64) {
	t.Helper()
	seq := uint64(time.Now().UnixNano())
	sub.send(&protocol.AgentEvent{Type: protocol.AgentEvent_PING.Enum(), Epoch: proto.Uint64(epoch), Ping: &protocol.AgentEvent_Ping{Sequence: proto.Uint64(seq)}})
	m.waitCall(t, "PONG", func(c *protocol.AgentCall) bool {
		return c.GetType() == protocol.AgentCall_PONG && c.GetPong().GetSequence() == seq
	})
}

// advance moves the agent's clock by d after a PING (sync). The PING
// resets the agent's watch on the master, which a clock moved on alone,
// poll after poll, soon takes for a dead master: the agent re-subscribes
// and holds its status updates for a SUBSCRIBED the test never sends
// (seen under load, when the polls wait longer for what they watch).
func (ta *testAgent) advance(t *testing.T, m *fakeMaster, sub *fakeSub, d time.Duration) {
	t.Helper()
	ta.sync(t, m, sub, 1)
	ta.clock.Advance(d)
}

func (ta *testAgent) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(ta.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (ta *testAgent) state(t *testing.T) map[string]any {
	t.Helper()
	code, b := ta.get(t, "/slave(1)/state")
	if code != http.StatusOK {
		t.Fatalf("/state: %d %s", code, b)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("/state: %v: %s", err, b)
	}
	return v
}

func (ta *testAgent) metric(t *testing.T, key string) float64 {
	t.Helper()
	_, b := ta.get(t, "/metrics/snapshot")
	var v map[string]float64
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("/metrics/snapshot: %v: %s", err, b)
	}
	got, ok := v[key]
	if !ok {
		t.Fatalf("metric %s missing", key)
	}
	return got
}

// waitLimit bounds the harness's waits on a condition. Only a failing
// test waits it out; under the full suite's load a Docker kill was seen to
// take more than 20 s.
const waitLimit = time.Minute

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func frameworkInfo(id string) *mesos.FrameworkInfo {
	return &mesos.FrameworkInfo{
		Id:   &mesos.FrameworkID{Value: proto.String(id)},
		User: proto.String("root"),
		Name: proto.String("test-framework"),
	}
}

func commandTask(id, cmd string) *mesos.TaskInfo {
	return &mesos.TaskInfo{
		Name:    proto.String("task " + id),
		TaskId:  &mesos.TaskID{Value: proto.String(id)},
		AgentId: agentIDProto("S1"),
		Command: &mesos.CommandInfo{Value: proto.String(cmd)},
		Resources: []*mesos.Resource{{
			Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(0.5)},
		}},
	}
}

func runTask(fw *mesos.FrameworkInfo, task *mesos.TaskInfo, epoch uint64) *protocol.AgentEvent {
	return &protocol.AgentEvent{
		Type:    protocol.AgentEvent_RUN_TASK.Enum(),
		Epoch:   proto.Uint64(epoch),
		RunTask: &protocol.AgentEvent_RunTask{FrameworkInfo: fw, Task: task},
	}
}

func ack(fw string, c *protocol.AgentCall, epoch uint64) *protocol.AgentEvent {
	st := c.GetStatusUpdate().GetStatus()
	return &protocol.AgentEvent{
		Type:  protocol.AgentEvent_ACKNOWLEDGE.Enum(),
		Epoch: proto.Uint64(epoch),
		Acknowledge: &protocol.AgentEvent_Acknowledge{
			FrameworkId: &mesos.FrameworkID{Value: proto.String(fw)},
			TaskId:      st.GetTaskId(),
			Uuid:        st.GetUuid(),
		},
	}
}

func killTask(fw, task string, epoch uint64) *protocol.AgentEvent {
	return &protocol.AgentEvent{
		Type:  protocol.AgentEvent_KILL_TASK.Enum(),
		Epoch: proto.Uint64(epoch),
		KillTask: &protocol.AgentEvent_KillTask{
			FrameworkId: &mesos.FrameworkID{Value: proto.String(fw)},
			TaskId:      &mesos.TaskID{Value: proto.String(task)},
		},
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var _ = bytes.NewReader
