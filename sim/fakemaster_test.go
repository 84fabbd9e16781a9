package sim

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
)

// fakeMaster is an in-test master speaking the agent protocol over h2c,
// scripted by the test: it admits every SUBSCRIBE, records calls, and
// sends whatever events the test pushes. Unit tests use it to drive one
// behaviour at a time; the integration tests use real `mezzo master`
// processes instead.
type fakeMaster struct {
	t    *testing.T
	srv  *httptest.Server
	addr string

	mu       sync.Mutex
	epoch    uint64
	redirect string // if set, SUBSCRIBE answers 307 to this host:port
	refuse   bool   // if set, non-SUBSCRIBE calls answer 403
	nextID   int
	streams  map[string]chan *protocol.AgentEvent // agent ID → its stream
	subs     []*protocol.AgentCall_Subscribe
	calls    []*protocol.AgentCall
	changed  chan struct{}
}

func newFakeMaster(t *testing.T, maxStreams int) *fakeMaster {
	fm := &fakeMaster{t: t, epoch: 1, streams: map[string]chan *protocol.AgentEvent{}, changed: make(chan struct{})}
	fm.srv = httptest.NewUnstartedServer(http.HandlerFunc(fm.serve))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	fm.srv.Config.Protocols = &p
	if maxStreams > 0 {
		fm.srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: maxStreams}
	}
	fm.srv.Start()
	fm.addr = fm.srv.Listener.Addr().String()
	t.Cleanup(fm.close)
	return fm
}

// close ends every stream and the server.
func (fm *fakeMaster) close() {
	fm.dropStreams()
	fm.srv.CloseClientConnections()
	fm.srv.Close()
}

func (fm *fakeMaster) notifyLocked() {
	close(fm.changed)
	fm.changed = make(chan struct{})
}

func (fm *fakeMaster) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := &protocol.AgentCall{}
	if err := proto.Unmarshal(body, call); err != nil || r.URL.Path != AgentPath {
		http.Error(w, fmt.Sprintf("bad call to %s: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	fm.mu.Lock()
	if call.GetType() != protocol.AgentCall_SUBSCRIBE {
		fm.calls = append(fm.calls, call)
		refuse := fm.refuse
		fm.notifyLocked()
		fm.mu.Unlock()
		if refuse {
			http.Error(w, "Agent is not registered", http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if fm.redirect != "" {
		to := fm.redirect
		fm.mu.Unlock()
		w.Header().Set("Location", "//"+to+AgentPath)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	sub := call.GetSubscribe()
	fm.subs = append(fm.subs, sub)
	id := sub.GetAgentInfo().GetId().GetValue()
	if id == "" {
		fm.nextID++
		id = "S" + strconv.Itoa(fm.nextID)
	}
	ch := make(chan *protocol.AgentEvent, 64)
	if old := fm.streams[id]; old != nil {
		close(old)
	}
	fm.streams[id] = ch
	ch <- &protocol.AgentEvent{Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(fm.epoch),
		Subscribed: &protocol.AgentEvent_Subscribed{AgentId: &mesos.AgentID{Value: proto.String(id)},
			PingIntervalSeconds: proto.Float64(15), MaxMissed: proto.Uint32(5)}}
	fm.notifyLocked()
	fm.mu.Unlock()

	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			b, err := proto.Marshal(ev)
			if err != nil {
				fm.t.Errorf("fake master: encoding %v: %v", ev.GetType(), err)
				return
			}
			fmt.Fprintf(w, "%d\n", len(b))
			w.Write(b)
			fl.Flush()
		}
	}
}

// send pushes an event (epoch filled in if unset) to an agent's stream.
func (fm *fakeMaster) send(agentID string, ev *protocol.AgentEvent) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	if ev.Epoch == nil {
		ev.Epoch = proto.Uint64(fm.epoch)
	}
	ch := fm.streams[agentID]
	if ch == nil {
		fm.t.Fatalf("no stream for agent %s", agentID)
	}
	ch <- ev
}

// dropStreams ends every agent's stream (a master crash as agents see it).
func (fm *fakeMaster) dropStreams() {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	for id, ch := range fm.streams {
		close(ch)
		delete(fm.streams, id)
	}
}

func (fm *fakeMaster) set(f func(fm *fakeMaster)) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	f(fm)
}

// waitCall waits for the first recorded call (from index from) matching
// pred and returns it with its index.
func (fm *fakeMaster) waitCall(what string, from int, pred func(*protocol.AgentCall) bool) (*protocol.AgentCall, int) {
	fm.t.Helper()
	var found *protocol.AgentCall
	idx := -1
	fm.waitFor(what, func() bool {
		for i := from; i < len(fm.calls); i++ {
			if pred(fm.calls[i]) {
				found, idx = fm.calls[i], i
				return true
			}
		}
		return false
	})
	return found, idx
}

// waitFor waits (with a deadline) until cond holds under the lock.
func (fm *fakeMaster) waitFor(what string, cond func() bool) {
	fm.t.Helper()
	timeout := newDeadline(10)
	for {
		fm.mu.Lock()
		ok := cond()
		ch := fm.changed
		fm.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			fm.t.Fatalf("fake master: timed out waiting for %s", what)
		}
	}
}

func (fm *fakeMaster) subscriptions() []*protocol.AgentCall_Subscribe {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	return append([]*protocol.AgentCall_Subscribe(nil), fm.subs...)
}

// statusCall matches a STATUS_UPDATE for task with state.
func statusCall(task string, state mesos.TaskState) func(*protocol.AgentCall) bool {
	return func(c *protocol.AgentCall) bool {
		s := c.GetStatusUpdate().GetStatus()
		return c.GetType() == protocol.AgentCall_STATUS_UPDATE && s.GetTaskId().GetValue() == task && s.GetState() == state
	}
}
