package endpoints

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/recordio"
	"mezzo/internal/clock"
)

// waitPending polls, with a deadline, until the fake clock has a timer
// armed (the stream's heartbeat ticker). The handler arms it before writing
// SUBSCRIBED, so after reading that record this returns at once.
func waitPending(t *testing.T, fc *clock.Fake) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for fc.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("heartbeat timer never armed")
		}
		runtime.Gosched()
	}
}

func TestSubscribeStream(t *testing.T) {
	for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
		t.Run(string(mt), func(t *testing.T) {
			src := newFakeSource(testSnapshot())
			mux, fc := newTestServer(t, src)
			srv := httptest.NewServer(mux)
			defer srv.Close()

			body, _ := codec.Marshal(mt, callOf(masterpb.Call_SUBSCRIBE))
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1", bytes.NewReader(body))
			req.Header.Set("Content-Type", string(mt))
			req.Header.Set("Accept", string(mt))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if ct := resp.Header.Get("Content-Type"); ct != string(mt) {
				t.Errorf("Content-Type %q", ct)
			}
			if resp.ContentLength != -1 || len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
				t.Errorf("not chunked: ContentLength %d TransferEncoding %v", resp.ContentLength, resp.TransferEncoding)
			}
			rd := recordio.NewReader(resp.Body, 0)
			next := func() *masterpb.Event {
				t.Helper()
				rec, err := rd.Next()
				if err != nil {
					t.Fatalf("reading record: %v", err)
				}
				if mt == codec.JSON && bytes.ContainsRune(rec, '\n') {
					t.Errorf("JSON record contains a newline")
				}
				var ev masterpb.Event
				if err := codec.Unmarshal(mt, rec, &ev); err != nil {
					t.Fatalf("decode event: %v", err)
				}
				return &ev
			}

			ev := next()
			if ev.GetType() != masterpb.Event_SUBSCRIBED {
				t.Fatalf("first event %v", ev.GetType())
			}
			sub := ev.GetSubscribed()
			if sub.GetHeartbeatIntervalSeconds() != 15 {
				t.Errorf("heartbeat_interval_seconds %v", sub.GetHeartbeatIntervalSeconds())
			}
			if n := len(sub.GetGetState().GetGetAgents().GetAgents()); n != 2 {
				t.Errorf("SUBSCRIBED get_state has %d agents", n)
			}

			added := &masterpb.Event{
				Type: masterpb.Event_AGENT_REMOVED.Enum(),
				AgentRemoved: &masterpb.Event_AgentRemoved{
					AgentId: &mesos.AgentID{Value: proto.String("m1-S1")},
				},
			}
			src.events <- added
			if ev := next(); ev.GetType() != masterpb.Event_AGENT_REMOVED || ev.GetAgentRemoved().GetAgentId().GetValue() != "m1-S1" {
				t.Errorf("event %v", ev)
			}

			waitPending(t, fc)
			fc.Advance(14 * time.Second)
			src.events <- &masterpb.Event{Type: masterpb.Event_FRAMEWORK_REMOVED.Enum(),
				FrameworkRemoved: &masterpb.Event_FrameworkRemoved{FrameworkInfo: testSnapshot().Frameworks[0].Info}}
			if ev := next(); ev.GetType() != masterpb.Event_FRAMEWORK_REMOVED {
				t.Errorf("no heartbeat before 15s expected, got %v", ev.GetType())
			}
			fc.Advance(time.Second)
			if ev := next(); ev.GetType() != masterpb.Event_HEARTBEAT {
				t.Errorf("event at 15s: %v", ev.GetType())
			}
			fc.Advance(15 * time.Second)
			if ev := next(); ev.GetType() != masterpb.Event_HEARTBEAT {
				t.Errorf("event at 30s: %v", ev.GetType())
			}

			// The master closing the feed ends the stream.
			close(src.events)
			if _, err := rd.Next(); err != io.EOF {
				t.Errorf("after close: %v, want EOF", err)
			}
		})
	}
}

func TestSubscribeHeartbeatOption(t *testing.T) {
	src := newFakeSource(testSnapshot())
	fc := clock.NewFake(testNow)
	mux := http.NewServeMux()
	Register(mux, src, Options{Clock: fc, HeartbeatInterval: 2 * time.Second})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/master/api/v1", "application/json", bytes.NewReader([]byte(`{"type":"SUBSCRIBE"}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := recordio.NewReader(resp.Body, 0)
	rec, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	var ev masterpb.Event
	if err := codec.Unmarshal(codec.JSON, rec, &ev); err != nil || ev.GetSubscribed().GetHeartbeatIntervalSeconds() != 2 {
		t.Fatalf("subscribed %v %v", &ev, err)
	}
	waitPending(t, fc)
	fc.Advance(2 * time.Second)
	if rec, err = rd.Next(); err != nil {
		t.Fatal(err)
	}
	if err := codec.Unmarshal(codec.JSON, rec, &ev); err != nil || ev.GetType() != masterpb.Event_HEARTBEAT {
		t.Errorf("event %v %v", &ev, err)
	}
}

func TestSubscribeWatchError(t *testing.T) {
	src := newFakeSource(testSnapshot())
	src.watchErr = errFake
	mux, _ := newTestServer(t, src)
	rec := post(mux, "/api/v1", "application/json", "", []byte(`{"type":"SUBSCRIBE"}`))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d", rec.Code)
	}
}

// TestSubscribeClientGoes checks the handler returns (and so cancels the
// Watch context) when the client disconnects.
func TestSubscribeClientGoes(t *testing.T) {
	src := newFakeSource(testSnapshot())
	mux, _ := newTestServer(t, src)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		close(done)
	}))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/api/v1", "application/json", bytes.NewReader([]byte(`{"type":"SUBSCRIBE"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recordio.NewReader(resp.Body, 0).Next(); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("handler did not return after the client left")
	}
}
