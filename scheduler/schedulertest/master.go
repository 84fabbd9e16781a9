// Package schedulertest provides a fake Mesos master speaking the v1
// scheduler API over real HTTP (httptest), for testing frameworks built on
// package scheduler (and frameworks/run). It records every call it receives
// and lets the test script the events it streams back, instead of mocking.
//
// It implements the parts of the protocol a client can observe: SUBSCRIBE
// answered 200 with a Mesos-Stream-Id and a RecordIO stream (SUBSCRIBED,
// then HEARTBEAT, then what the test sends), stream-id checks on other calls
// (400 missing/mismatched, 403 not subscribed), 202 for accepted calls,
// TEARDOWN closing the stream, and knobs for 307 redirects and 503s.
package schedulertest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/recordio"
	"mezzo/api/schedulerpb"
)

// Received is one request the fake master got on the scheduler endpoint.
type Received struct {
	Call        *schedulerpb.Call
	StreamID    string // the Mesos-Stream-Id header
	ContentType string
	Status      int // what the master answered
}

// Master is a fake master. Methods are safe for concurrent use.
type Master struct {
	Server *httptest.Server
	// Mux routes the server's requests; tests may add endpoints to it
	// (e.g. /master/slaves) before the code under test calls them.
	Mux *http.ServeMux
	// HeartbeatInterval is put in SUBSCRIBED (default 15 s).
	HeartbeatInterval time.Duration

	mu          sync.Mutex
	received    []Received
	subscribes  int
	current     *subscriber
	nextFw      int
	redirect    string // if set, answer every request 307 to this host:port
	unavailable bool   // if set, answer 503
	respond     func(*schedulerpb.Call) (int, string)
}

type subscriber struct {
	streamID    string
	frameworkID string
	events      chan *schedulerpb.Event
	done        chan struct{} // closed to end the stream from the master side
	once        sync.Once
}

func (s *subscriber) end() { s.once.Do(func() { close(s.done) }) }

// NewMaster starts a fake master; it is closed when the test ends.
func NewMaster(tb testing.TB) *Master {
	tb.Helper()
	m := &Master{HeartbeatInterval: 15 * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/scheduler", m.serve)
	m.Mux = mux
	m.Server = httptest.NewServer(mux)
	tb.Cleanup(func() {
		m.mu.Lock()
		if m.current != nil {
			m.current.end()
		}
		m.mu.Unlock()
		m.Server.CloseClientConnections()
		m.Server.Close()
	})
	return m
}

// Addr is the master's "host:port".
func (m *Master) Addr() string { return strings.TrimPrefix(m.Server.URL, "http://") }

// RedirectTo makes the master answer every request 307 with
// `Location: //addr/api/v1/scheduler`, as a non-leading master does.
// An empty addr turns redirection off.
func (m *Master) RedirectTo(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.redirect = addr
}

// SetUnavailable makes the master answer 503 ("no leader elected").
func (m *Master) SetUnavailable(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unavailable = on
}

// Respond overrides the answer to non-SUBSCRIBE calls that pass the stream
// checks: f returns the status and body (status 0 = the default 202).
func (m *Master) Respond(f func(*schedulerpb.Call) (status int, body string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.respond = f
}

// Received returns a copy of everything received so far, in order.
func (m *Master) Received() []Received {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Received(nil), m.received...)
}

// Calls returns the received calls of the given types (all if none).
func (m *Master) Calls(types ...schedulerpb.Call_Type) []*schedulerpb.Call {
	var out []*schedulerpb.Call
	for _, r := range m.Received() {
		if len(types) == 0 || contains(types, r.Call.GetType()) {
			out = append(out, r.Call)
		}
	}
	return out
}

func contains(ts []schedulerpb.Call_Type, t schedulerpb.Call_Type) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// Subscriptions counts accepted SUBSCRIBE calls.
func (m *Master) Subscriptions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.subscribes
}

// FrameworkID is the id of the current (or last) subscriber.
func (m *Master) FrameworkID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current == nil {
		return ""
	}
	return m.current.frameworkID
}

// WaitCall polls until the n-th (1-based) call of type t has been received,
// failing the test after timeout. It returns that call.
func (m *Master) WaitCall(tb testing.TB, t schedulerpb.Call_Type, n int, timeout time.Duration) *schedulerpb.Call {
	tb.Helper()
	var got []*schedulerpb.Call
	if !Eventually(timeout, func() bool {
		got = m.Calls(t)
		return len(got) >= n
	}) {
		tb.Fatalf("fake master: waited %v for %s call #%d; got %d; all calls: %v", timeout, t, n, len(got), m.Calls())
	}
	return got[n-1]
}

// WaitSubscriptions polls until n subscriptions were accepted.
func (m *Master) WaitSubscriptions(tb testing.TB, n int, timeout time.Duration) {
	tb.Helper()
	if !Eventually(timeout, func() bool { return m.Subscriptions() >= n }) {
		tb.Fatalf("fake master: waited %v for %d subscriptions; got %d", timeout, n, m.Subscriptions())
	}
}

// Eventually polls cond every few milliseconds until it holds or timeout
// passes (real time: it waits for other goroutines, not for a clock).
func Eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Send streams ev to the current subscriber. It reports false if there is
// none or it went away.
func (m *Master) Send(ev *schedulerpb.Event) bool {
	m.mu.Lock()
	s := m.current
	m.mu.Unlock()
	if s == nil {
		return false
	}
	select {
	case s.events <- ev:
		return true
	case <-s.done:
		return false
	case <-time.After(5 * time.Second):
		return false
	}
}

// Heartbeat sends a HEARTBEAT event.
func (m *Master) Heartbeat() bool {
	return m.Send(&schedulerpb.Event{Type: schedulerpb.Event_HEARTBEAT.Enum()})
}

// Disconnect ends the current subscriber's stream from the master side, as
// a master failover or network cut would.
func (m *Master) Disconnect() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current != nil {
		m.current.end()
	}
}

func (m *Master) record(r Received) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.received = append(m.received, r)
}

func (m *Master) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Expecting a 'POST' request", http.StatusMethodNotAllowed)
		return
	}
	m.mu.Lock()
	redirect, unavailable := m.redirect, m.unavailable
	m.mu.Unlock()
	if redirect != "" {
		w.Header().Set("Location", "//"+redirect+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	if unavailable {
		http.Error(w, "No leader elected", http.StatusServiceUnavailable)
		return
	}
	mt, status, err := codec.RequestType(r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	call := &schedulerpb.Call{}
	if err := codec.Unmarshal(mt, body, call); err != nil {
		m.record(Received{Call: call, StreamID: r.Header.Get("Mesos-Stream-Id"), ContentType: string(mt), Status: 400})
		http.Error(w, "Failed to parse body into Call protobuf: "+err.Error(), http.StatusBadRequest)
		return
	}
	rec := Received{Call: call, StreamID: r.Header.Get("Mesos-Stream-Id"), ContentType: string(mt)}
	if call.GetType() == schedulerpb.Call_SUBSCRIBE {
		m.subscribe(w, r, rec)
		return
	}
	status, text := m.check(call, rec.StreamID)
	rec.Status = status
	m.record(rec)
	if status != http.StatusAccepted && status != http.StatusOK {
		http.Error(w, text, status)
		return
	}
	w.WriteHeader(status)
	if call.GetType() == schedulerpb.Call_TEARDOWN {
		m.Disconnect()
	}
}

// check applies the master's stream checks and the scripted responder.
func (m *Master) check(call *schedulerpb.Call, streamID string) (int, string) {
	m.mu.Lock()
	cur, respond := m.current, m.respond
	m.mu.Unlock()
	switch {
	case call.GetFrameworkId().GetValue() == "":
		return http.StatusBadRequest, "Failed to validate scheduler::Call: Expecting 'framework_id' to be present"
	case cur == nil || cur.frameworkID != call.GetFrameworkId().GetValue():
		return http.StatusBadRequest, "Framework cannot be found"
	case streamID == "":
		return http.StatusBadRequest, "All non-subscribe calls should include the 'Mesos-Stream-Id' header"
	case streamID != cur.streamID:
		return http.StatusBadRequest, "The stream ID '" + streamID + "' included in this request didn't match the stream ID currently associated with framework ID " + cur.frameworkID
	}
	select {
	case <-cur.done:
		return http.StatusForbidden, "Framework is not subscribed"
	default:
	}
	if respond != nil {
		if st, body := respond(call); st != 0 {
			return st, body
		}
	}
	return http.StatusAccepted, ""
}

func (m *Master) subscribe(w http.ResponseWriter, r *http.Request, rec Received) {
	call := rec.Call
	fi := call.GetSubscribe().GetFrameworkInfo()
	fail := func(status int, text string) {
		rec.Status = status
		m.record(rec)
		http.Error(w, text, status)
	}
	switch {
	case rec.StreamID != "":
		fail(http.StatusBadRequest, "Subscribe calls should not include the 'Mesos-Stream-Id' header")
		return
	case fi == nil:
		fail(http.StatusBadRequest, "Expecting 'subscribe' to be present")
		return
	case fi.GetId().GetValue() != call.GetFrameworkId().GetValue():
		fail(http.StatusBadRequest, "'framework_id' differs from 'subscribe.framework_info.id'")
		return
	}
	out, err := codec.ResponseType(r)
	if err != nil {
		fail(http.StatusNotAcceptable, err.Error())
		return
	}
	m.mu.Lock()
	fwID := fi.GetId().GetValue()
	if fwID == "" {
		fwID = fmt.Sprintf("fake-master-%04d", m.nextFw)
		m.nextFw++
	}
	s := &subscriber{
		streamID:    uuid.NewString(),
		frameworkID: fwID,
		events:      make(chan *schedulerpb.Event),
		done:        make(chan struct{}),
	}
	if old := m.current; old != nil {
		old.end()
	}
	m.current = s
	m.subscribes++
	rec.Status = http.StatusOK
	m.received = append(m.received, rec)
	hb := m.HeartbeatInterval
	m.mu.Unlock()

	w.Header().Set("Content-Type", string(out))
	w.Header().Set("Mesos-Stream-Id", s.streamID)
	w.WriteHeader(http.StatusOK)
	rw := recordio.NewWriter(w)
	write := func(ev *schedulerpb.Event) bool {
		b, err := codec.Marshal(out, ev)
		return err == nil && rw.Write(b) == nil
	}
	if !write(&schedulerpb.Event{
		Type: schedulerpb.Event_SUBSCRIBED.Enum(),
		Subscribed: &schedulerpb.Event_Subscribed{
			FrameworkId:              &mesos.FrameworkID{Value: proto.String(fwID)},
			HeartbeatIntervalSeconds: proto.Float64(hb.Seconds()),
		},
	}) || !write(&schedulerpb.Event{Type: schedulerpb.Event_HEARTBEAT.Enum()}) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			s.end()
			return
		case <-s.done:
			return
		case ev := <-s.events:
			if !write(ev) {
				s.end()
				return
			}
		}
	}
}
