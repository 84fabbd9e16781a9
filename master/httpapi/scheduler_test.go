package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/recordio"
	"mezzo/api/schedulerpb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

type reply struct {
	status int
	header http.Header
	body   string
}

func (c *cluster) post(t *testing.T, path string, hdr map[string]string, body []byte) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+path, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.h1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func encode(t *testing.T, mt codec.MediaType, m proto.Message) []byte {
	t.Helper()
	b, err := codec.Marshal(mt, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scheduler is a test scheduler on a SUBSCRIBE stream.
type scheduler struct {
	t        *testing.T
	c        *cluster
	mt       codec.MediaType
	streamID string
	id       string
	resp     *http.Response
	events   chan *schedulerpb.Event
	cancel   context.CancelFunc
}

func (c *cluster) subscribe(t *testing.T, mt codec.MediaType, info *mesos.FrameworkInfo) *scheduler {
	t.Helper()
	call := &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(), Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: info}}
	call.FrameworkId = info.Id
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.srv.URL+"/api/v1/scheduler", bytes.NewReader(encode(t, mt, call)))
	req.Header.Set("Content-Type", string(mt))
	req.Header.Set("Accept", string(mt))
	resp, err := c.h1.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("SUBSCRIBE: %d %s", resp.StatusCode, b)
	}
	s := &scheduler{t: t, c: c, mt: mt, streamID: resp.Header.Get("Mesos-Stream-Id"), resp: resp,
		events: make(chan *schedulerpb.Event, 1024), cancel: cancel}
	go func() {
		defer resp.Body.Close()
		defer close(s.events)
		r := recordio.NewReader(resp.Body, 0)
		for {
			rec, err := r.Next()
			if err != nil {
				return
			}
			if mt == codec.JSON && bytes.ContainsRune(rec, '\n') {
				t.Errorf("JSON record contains a newline: %q", rec)
			}
			ev := &schedulerpb.Event{}
			if err := codec.Unmarshal(mt, rec, ev); err != nil {
				t.Errorf("decoding event: %v", err)
				return
			}
			s.events <- ev
		}
	}()
	ev := s.next()
	if ev.GetType() != schedulerpb.Event_SUBSCRIBED {
		t.Fatalf("first event %v", ev.GetType())
	}
	s.id = ev.GetSubscribed().GetFrameworkId().GetValue()
	if ev.GetSubscribed().GetHeartbeatIntervalSeconds() != 15 || ev.GetSubscribed().GetMasterInfo().GetId() != "M" {
		t.Fatalf("SUBSCRIBED = %v", ev)
	}
	if ev := s.next(); ev.GetType() != schedulerpb.Event_HEARTBEAT {
		t.Fatalf("second event %v, want HEARTBEAT", ev.GetType())
	}
	return s
}

func (s *scheduler) next() *schedulerpb.Event {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.t.Fatal("scheduler stream ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		s.t.Fatal("scheduler: timed out waiting for an event")
		return nil
	}
}

func (s *scheduler) call(c *schedulerpb.Call) reply {
	s.t.Helper()
	c.FrameworkId = &mesos.FrameworkID{Value: proto.String(s.id)}
	return s.c.post(s.t, "/api/v1/scheduler", map[string]string{"Content-Type": string(s.mt), "Mesos-Stream-Id": s.streamID}, encode(s.t, s.mt, c))
}

func frameworkInfo() *mesos.FrameworkInfo {
	return &mesos.FrameworkInfo{User: proto.String("root"), Name: proto.String("test"), FailoverTimeout: proto.Float64(3600)}
}

func TestSubscribeStreamHeaders(t *testing.T) {
	c := newCluster(t, Options{})
	for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
		t.Run(string(mt), func(t *testing.T) {
			s := c.subscribe(t, mt, frameworkInfo())
			if got := s.resp.Header.Get("Content-Type"); got != string(mt) {
				t.Errorf("Content-Type = %q, want %q", got, mt)
			}
			if s.streamID == "" || len(s.streamID) > 128 {
				t.Errorf("Mesos-Stream-Id = %q", s.streamID)
			}
			if s.resp.ContentLength != -1 {
				t.Errorf("ContentLength = %d, want -1 (chunked stream)", s.resp.ContentLength)
			}
			if r := s.call(&schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum()}); r.status != 202 || r.body != "" {
				t.Errorf("REVIVE: %d %q, want 202 empty", r.status, r.body)
			}
		})
	}
}

// Every status code of reference §1.2, in both encodings.
func TestSchedulerStatusCodes(t *testing.T) {
	c := newCluster(t, Options{MaxBodyBytes: 4096})
	for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
		s := c.subscribe(t, mt, frameworkInfo())
		fid := &mesos.FrameworkID{Value: proto.String(s.id)}
		ct := map[string]string{"Content-Type": string(mt)}
		withStream := func(id string) map[string]string {
			return map[string]string{"Content-Type": string(mt), "Mesos-Stream-Id": id}
		}
		revive := encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum(), FrameworkId: fid})
		garbage := []byte("\xff\x01{not a call")
		for _, tc := range []struct {
			name   string
			method string
			hdr    map[string]string
			body   []byte
			status int
			msg    string
		}{
			{"GET", http.MethodGet, ct, nil, 405, "Expecting one of { 'POST' }"},
			{"no Content-Type", "", nil, revive, 400, "Expecting 'Content-Type' to be present"},
			{"bad Content-Type", "", map[string]string{"Content-Type": "text/plain"}, revive, 415, ""},
			{"body too large", "", ct, bytes.Repeat([]byte("x"), 5000), 413, "4096"},
			{"garbage", "", ct, garbage, 400, map[codec.MediaType]string{codec.JSON: "Failed to convert JSON into Call protobuf", codec.Protobuf: "Failed to parse body into Call protobuf"}[mt]},
			{"no type", "", ct, encode(t, mt, &schedulerpb.Call{FrameworkId: fid}), 400, "Failed to validate scheduler::Call: Expecting 'type' to be present"},
			{"no framework_id", "", ct, encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum()}), 400, "Expecting 'framework_id' to be present"},
			{"missing sub-message", "", withStream(s.streamID), encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(), FrameworkId: fid}), 400, "Expecting 'decline' to be present"},
			{"SUBSCRIBE with stream id", "", withStream("x"), encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
				Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: frameworkInfo()}}), 400, "should not include the 'Mesos-Stream-Id' header"},
			{"SUBSCRIBE not acceptable", "", map[string]string{"Content-Type": string(mt), "Accept": "text/html"}, encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
				Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: frameworkInfo()}}), 406, ""},
			{"unknown framework", "", withStream(s.streamID), encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum(),
				FrameworkId: &mesos.FrameworkID{Value: proto.String("nope")}}), 400, "Framework cannot be found"},
			{"missing stream id", "", ct, revive, 400, "Mesos-Stream-Id"},
			{"wrong stream id", "", withStream("0000"), revive, 400, "didn't match the stream ID"},
			{"bad ack uuid", "", withStream(s.streamID), encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), FrameworkId: fid,
				Acknowledge: &schedulerpb.Call_Acknowledge{AgentId: &mesos.AgentID{Value: proto.String("a")}, TaskId: &mesos.TaskID{Value: proto.String("t")}, Uuid: []byte("short")}}), 400, "uuid"},
			{"UNKNOWN", "", withStream(s.streamID), encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_UNKNOWN.Enum(), FrameworkId: fid}), 501, ""},
			{"ok", "", withStream(s.streamID), revive, 202, ""},
			{"REQUEST ignored", "", withStream(s.streamID), encode(t, mt, &schedulerpb.Call{Type: schedulerpb.Call_REQUEST.Enum(), FrameworkId: fid, Request: &schedulerpb.Call_Request{}}), 202, ""},
		} {
			t.Run(string(mt)+"/"+tc.name, func(t *testing.T) {
				method := tc.method
				if method == "" {
					method = http.MethodPost
				}
				req, _ := http.NewRequest(method, c.srv.URL+"/master/api/v1/scheduler", bytes.NewReader(tc.body))
				for k, v := range tc.hdr {
					req.Header.Set(k, v)
				}
				resp, err := c.h1.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.msg) {
					t.Fatalf("got %d %q, want %d containing %q", resp.StatusCode, b, tc.status, tc.msg)
				}
				if tc.status == 405 && resp.Header.Get("Allow") != "POST" {
					t.Fatalf("Allow = %q", resp.Header.Get("Allow"))
				}
			})
		}
		// UPDATE_FRAMEWORK answers 200.
		info := frameworkInfo()
		info.Id = fid
		info.Name = proto.String("renamed")
		if r := s.call(&schedulerpb.Call{Type: schedulerpb.Call_UPDATE_FRAMEWORK.Enum(), UpdateFramework: &schedulerpb.Call_UpdateFramework{FrameworkInfo: info}}); r.status != 200 {
			t.Fatalf("UPDATE_FRAMEWORK: %d %s", r.status, r.body)
		}
		// Disconnected (stream closed, failover timeout running) → 403.
		s.cancel()
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := c.post(t, "/api/v1/scheduler", withStream(s.streamID), revive)
			if r.status == 403 && strings.Contains(r.body, "Framework is not subscribed") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after disconnect: %d %q, want 403", r.status, r.body)
			}
			time.Sleep(5 * time.Millisecond) // polling with a deadline for the disconnect to be processed
		}
	}
}

// Re-subscribing: the old stream gets ERROR "Framework failed over" and ends.
func TestResubscribeFailsOverOldStream(t *testing.T) {
	c := newCluster(t, Options{})
	s1 := c.subscribe(t, codec.JSON, frameworkInfo())
	info := frameworkInfo()
	info.Id = &mesos.FrameworkID{Value: proto.String(s1.id)}
	s2 := c.subscribe(t, codec.Protobuf, info)
	if s2.id != s1.id || s2.streamID == s1.streamID {
		t.Fatalf("re-subscription: id %s stream %s (old %s %s)", s2.id, s2.streamID, s1.id, s1.streamID)
	}
	ev := s1.next()
	if ev.GetType() != schedulerpb.Event_ERROR || ev.GetError().GetMessage() != "Framework failed over" {
		t.Fatalf("old stream got %v", ev)
	}
	select {
	case _, ok := <-s1.events:
		if ok {
			t.Fatal("old stream continued")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("old stream not closed")
	}
}

// The whole loop over real HTTP: a scheduler (JSON over HTTP/1.1) and an
// agent (protobuf over h2c) launch a task and see it through.
func TestEndToEndOverHTTP(t *testing.T) {
	c := newCluster(t, Options{})
	a := c.startAgent(t, c.h2c, testAgentSub("agent1"))
	s := c.subscribe(t, codec.JSON, frameworkInfo())
	c.m.AllocatorOffer(s.id, allocator.Offers{"*": {a.id: resources.MustParse("cpus:4;mem:1024")}})
	ev := s.next()
	if ev.GetType() != schedulerpb.Event_OFFERS {
		t.Fatalf("got %v", ev.GetType())
	}
	o := ev.GetOffers().GetOffers()[0]
	if o.GetUrl().GetAddress().GetIp() != "127.0.0.1" {
		t.Fatalf("offer url %v", o.GetUrl())
	}
	task := &mesos.TaskInfo{Name: proto.String("t"), TaskId: &mesos.TaskID{Value: proto.String("t")}, AgentId: o.GetAgentId(),
		Resources: o.GetResources()[:1], Command: &mesos.CommandInfo{Value: proto.String("true")}}
	task.Resources = resources.ToPreRefinement(resources.MustParse("cpus:1").Proto())
	r := s.call(&schedulerpb.Call{Type: schedulerpb.Call_ACCEPT.Enum(), Accept: &schedulerpb.Call_Accept{OfferIds: []*mesos.OfferID{o.GetId()},
		Operations: []*mesos.Offer_Operation{{Type: mesos.Offer_Operation_LAUNCH.Enum(), Launch: &mesos.Offer_Operation_Launch{TaskInfos: []*mesos.TaskInfo{task}}}}}})
	if r.status != 202 {
		t.Fatalf("ACCEPT: %d %s", r.status, r.body)
	}
	run := a.next(protocol.AgentEvent_RUN_TASK)
	if run.GetRunTask().GetTask().GetTaskId().GetValue() != "t" || run.GetEpoch() != 1 {
		t.Fatalf("RUN_TASK %v", run)
	}
	uuid := bytes.Repeat([]byte{7}, 16)
	if st := a.call(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), StatusUpdate: &protocol.AgentCall_StatusUpdate{
		FrameworkId: &mesos.FrameworkID{Value: proto.String(s.id)},
		Status:      &mesos.TaskStatus{TaskId: task.TaskId, State: mesos.TaskState_TASK_FINISHED.Enum(), Uuid: uuid}}}); st != 202 {
		t.Fatalf("status update: %d", st)
	}
	up := s.next()
	if up.GetType() != schedulerpb.Event_UPDATE || up.GetUpdate().GetStatus().GetState() != mesos.TaskState_TASK_FINISHED ||
		!bytes.Equal(up.GetUpdate().GetStatus().GetUuid(), uuid) {
		t.Fatalf("UPDATE %v", up)
	}
	r = s.call(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
		AgentId: o.GetAgentId(), TaskId: task.TaskId, Uuid: uuid}})
	if r.status != 202 {
		t.Fatalf("ACKNOWLEDGE: %d %s", r.status, r.body)
	}
	if ack := a.next(protocol.AgentEvent_ACKNOWLEDGE); !bytes.Equal(ack.GetAcknowledge().GetUuid(), uuid) {
		t.Fatalf("ACKNOWLEDGE %v", ack)
	}
	snap := c.m.Snapshot()
	if len(snap.Frameworks[0].CompletedTasks) != 1 {
		t.Fatalf("task not completed: %+v", snap.Frameworks[0])
	}
}

// Many agents share one h2c connection, each on its own stream.
func TestManyAgentsOneConnection(t *testing.T) {
	c := newCluster(t, Options{})
	c.startAgent(t, c.h2c, testAgentSub("first"))
	const n = 50
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.startAgent(t, c.h2c, testAgentSub("agent"))
		}()
	}
	wg.Wait()
	// Registration replies on the stream; the snapshot showing it may be
	// published a little later (publishing is throttled by its cost).
	for deadline := time.Now().Add(10 * time.Second); len(c.m.Snapshot().Agents) != n+1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d agents registered, want %d", len(c.m.Snapshot().Agents), n+1)
		}
		runtime.Gosched()
	}
	if got := c.conns.Load(); got != 1 {
		t.Fatalf("%d TCP connections, want 1", got)
	}
}

func TestAgentProtocolErrors(t *testing.T) {
	c := newCluster(t, Options{})
	pb := map[string]string{"Content-Type": string(codec.Protobuf)}
	call := func(m *protocol.AgentCall) []byte { b, _ := proto.Marshal(m); return b }
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		body   []byte
		status int
		msg    string
	}{
		{"JSON refused", map[string]string{"Content-Type": string(codec.JSON)}, []byte("{}"), 415, "protobuf only"},
		{"garbage", pb, []byte("\xff\xff"), 400, "Failed to parse body into AgentCall protobuf"},
		{"no type", pb, call(&protocol.AgentCall{}), 400, "'type'"},
		{"no agent id", pb, call(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum()}), 400, "'agent_id'"},
		{"unknown agent", pb, call(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum(), AgentId: &mesos.AgentID{Value: proto.String("x")}}), 403, "not registered"},
		{"subscribe without endpoint", pb, call(&protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(),
			Subscribe: &protocol.AgentCall_Subscribe{AgentInfo: &mesos.AgentInfo{Hostname: proto.String("h")}}}), 400, "endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.post(t, "/internal/v1/agent", tc.hdr, tc.body)
			if r.status != tc.status || !strings.Contains(r.body, tc.msg) {
				t.Fatalf("got %d %q, want %d %q", r.status, r.body, tc.status, tc.msg)
			}
		})
	}
}

func TestHealthVersionRedirect(t *testing.T) {
	c := newCluster(t, Options{})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (*http.Response, string) {
		resp, err := noFollow.Get(c.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, p := range []string{"/health", "/master/health"} {
		if resp, body := get(p); resp.StatusCode != 200 || body != "" {
			t.Errorf("%s: %d %q", p, resp.StatusCode, body)
		}
	}
	resp, body := get("/version")
	var v map[string]any
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &v) != nil || v["version"] != "1.12.0-test" {
		t.Errorf("/version: %d %s", resp.StatusCode, body)
	}
	for _, k := range []string{"build_date", "build_time", "build_user"} {
		if _, ok := v[k]; !ok {
			t.Errorf("/version lacks %s", k)
		}
	}
	if resp, _ := get("/master/redirect"); resp.StatusCode != 307 || resp.Header.Get("Location") != "//m.test:5050" {
		t.Errorf("/master/redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get("/master/redirect/state"); resp.StatusCode != 404 {
		t.Errorf("/master/redirect/state: %d, want 404", resp.StatusCode)
	}
	// master/endpoints is mounted on the same mux.
	if resp, _ := get("/master/state"); resp.StatusCode != 200 {
		t.Errorf("/master/state: %d", resp.StatusCode)
	}
}
