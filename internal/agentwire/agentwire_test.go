package agentwire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/protocol"
	"mezzo/api/recordio"
)

// FuzzReader: the small read buffer ReadEvents can be given (the emulator's
// 16 bytes up) yields exactly the records, and the clean or unclean end, of
// the default 64 KiB buffer.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"", "3\nabc", "3\nabc0\n2\nde", "5\nab", "x\n", "\n", "12345678901\n", "4\nabcd4\nefgh",
		"1000\n" + string(bytes.Repeat([]byte("z"), 1000)), "70\nshort",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 600
		ours := recordio.NewReaderSize(bytes.NewReader(data), 16, max)
		oracle := recordio.NewReader(bytes.NewReader(data), max)
		for i := 0; ; i++ {
			got, gerr := ours.Next()
			want, werr := oracle.Next()
			if (gerr == nil) != (werr == nil) || errors.Is(gerr, io.EOF) != errors.Is(werr, io.EOF) ||
				errors.Is(gerr, io.ErrUnexpectedEOF) != errors.Is(werr, io.ErrUnexpectedEOF) {
				t.Fatalf("record %d: error %v, oracle %v", i, gerr, werr)
			}
			if gerr != nil {
				return
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("record %d: %q, oracle %q", i, got, want)
			}
		}
	})
}

func TestRedirectHost(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"//10.0.0.2:5050/internal/v1/agent", "10.0.0.2:5050"},
		{"http://m2:5050/x", "m2:5050"},
		{"", ""},
		{"/relative", ""},
		{"%zz", ""},
	} {
		if got := RedirectHost(tt.in); got != tt.want {
			t.Errorf("RedirectHost(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func encodeEvents(t *testing.T, evs ...*protocol.AgentEvent) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := recordio.NewWriter(&buf)
	for _, ev := range evs {
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestReadEvents(t *testing.T) {
	ping := &protocol.AgentEvent{Type: protocol.AgentEvent_PING.Enum()}
	stream := encodeEvents(t, ping, ping, ping)
	tests := []struct {
		name    string
		data    []byte
		stopAt  int // deliver returns false at this event (0 = never)
		want    int
		wantErr error
		errText string
	}{
		{name: "clean end", data: stream, want: 3, wantErr: ErrStreamClosed},
		{name: "stopped by deliver", data: stream, stopAt: 2, want: 2},
		{name: "cut inside a record", data: stream[:len(stream)-1], want: 2, wantErr: io.ErrUnexpectedEOF},
		{name: "undecodable", data: []byte("2\n\xff\xff"), errText: "undecodable event"},
		{name: "too large", data: []byte("100\n"), errText: "exceeds size limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			err := ReadEvents(bytes.NewReader(tt.data), 16, 50, func(ev *protocol.AgentEvent) bool {
				n++
				return n != tt.stopAt
			})
			if n != tt.want {
				t.Errorf("delivered %d, want %d", n, tt.want)
			}
			switch {
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Errorf("err = %v, want %q", err, tt.errText)
				}
			case !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil):
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestDial: an unavailable master is skipped, a redirect is followed to the
// leader, and the stream's body is returned with the leader's address.
func TestDial(t *testing.T) {
	var leaderCalls int
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaderCalls++
		if r.URL.Path != Path || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("0\n"))
	}))
	defer leader.Close()
	leaderAddr := strings.TrimPrefix(leader.URL, "http://")
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "//"+leaderAddr+Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer follower.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "No leader elected", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	hc := noRedirects()
	masters := []string{strings.TrimPrefix(down.URL, "http://"), strings.TrimPrefix(follower.URL, "http://")}
	resp, host, err := Dial(context.Background(), hc, masters, "", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if host != leaderAddr || leaderCalls != 1 {
		t.Errorf("host %s (calls %d), want %s", host, leaderCalls, leaderAddr)
	}

	// Every master failing: the errors name each master.
	_, _, err = Dial(context.Background(), hc, masters[:1], "", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), masters[0]) {
		t.Errorf("err = %v", err)
	}
	if _, _, err := Dial(context.Background(), hc, nil, "", nil); err == nil {
		t.Error("no masters: no error")
	}
}

// TestDialStaleRedirect: a follower that still redirects to a leader that
// just died is asked again, and the attempt succeeds once it names the new
// leader; a master answering with an error ends the attempt at once.
func TestDialStaleRedirect(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	nextAddr := acceptingMaster(t)
	var asked atomic.Int32
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := deadAddr
		if asked.Add(1) > 2 {
			to = nextAddr // the follower has learnt the news
		}
		w.Header().Set("Location", "//"+to+Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer follower.Close()
	masters := []string{deadAddr, strings.TrimPrefix(follower.URL, "http://")}
	resp, host, err := Dial(context.Background(), noRedirects(), masters, deadAddr, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if host != nextAddr || asked.Load() != 3 {
		t.Errorf("host %s after %d asks, want %s after 3", host, asked.Load(), nextAddr)
	}

	// Every master unreachable: no retry, the attempt fails.
	if _, _, err := Dial(context.Background(), noRedirects(), []string{deadAddr}, "", nil); err == nil {
		t.Error("dead masters only: no error")
	}
	// A 503 from one master is an answer: no retry even though another
	// redirected to a dead address.
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "No leader elected", http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	asked.Store(-100) // the follower redirects to the dead address
	if _, _, err := Dial(context.Background(), noRedirects(), []string{strings.TrimPrefix(follower.URL, "http://"), strings.TrimPrefix(unavailable.URL, "http://")}, "", nil); err == nil {
		t.Error("503 and a stale redirect: no error")
	}
	if got := asked.Load(); got != -99 {
		t.Errorf("the follower was asked %d times, want once", got+100)
	}
}

func TestCall(t *testing.T) {
	for _, tt := range []struct {
		status int
		ok     bool
	}{{http.StatusAccepted, true}, {http.StatusOK, true}, {http.StatusForbidden, false}, {http.StatusBadRequest, false}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tt.status)
			_, _ = w.Write([]byte(" why \n"))
		}))
		res, err := Call(context.Background(), noRedirects(), strings.TrimPrefix(srv.URL, "http://"), []byte("x"))
		srv.Close()
		if (err == nil) != tt.ok || res.Status != tt.status || res.Message != "why" {
			t.Errorf("status %d: %+v, %v", tt.status, res, err)
		}
	}
}

// A master that refused a connection is tried last until it answers
// again or the memory expires.
func TestRefusedMastersLast(t *testing.T) {
	h := hostMemory{ttl: time.Hour}
	cands := []string{"dead:1", "a:1", "b:1"}
	if got := h.ordered(cands); !slices.Equal(got, cands) {
		t.Fatalf("nothing refused: %v", got)
	}
	h.note("dead:1")
	if got := h.ordered(cands); !slices.Equal(got, []string{"a:1", "b:1", "dead:1"}) {
		t.Fatalf("after a refusal: %v", got)
	}
	h.forget("dead:1")
	if got := h.ordered(cands); !slices.Equal(got, cands) {
		t.Fatalf("after it answered: %v", got)
	}
	h.ttl = 0
	h.note("a:1")
	if h.has("a:1") {
		t.Fatal("an expired refusal is still remembered")
	}

	// Dial notes a refusal itself.
	dead := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	if _, _, err := Dial(context.Background(), noRedirects(), []string{addr}, "", nil); err == nil {
		t.Fatal("dial of a dead master succeeded")
	}
	if !refused.has(addr) {
		t.Fatal("the refusal was not remembered")
	}
}

// TestAcceptedMasterFirst: once a master accepted a subscription, the
// process's next Dial asks it first instead of a follower that would only
// redirect there; a master outside the agent's list is never asked.
func TestAcceptedMasterFirst(t *testing.T) {
	leaderAddr := acceptingMaster(t)
	var followerCalls atomic.Int64
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followerCalls.Add(1)
		w.Header().Set("Location", "//"+leaderAddr+Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer follower.Close()
	followerAddr := strings.TrimPrefix(follower.URL, "http://")
	masters := []string{followerAddr, leaderAddr}
	hc := noRedirects()
	for i := range 3 {
		resp, host, err := Dial(context.Background(), hc, masters, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if host != leaderAddr {
			t.Fatalf("dial %d: host %s, want %s", i, host, leaderAddr)
		}
	}
	if n := followerCalls.Load(); n != 1 {
		t.Fatalf("the follower was asked %d times, want once (by the first dial)", n)
	}
	// Another cluster's agent in the same process never asks this leader.
	otherAddr := acceptingMaster(t)
	resp, host, err := Dial(context.Background(), hc, []string{otherAddr}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if host != otherAddr {
		t.Fatalf("host %s, want %s", host, otherAddr)
	}
}

// acceptingMaster starts a master that accepts every subscription (an
// empty stream) and returns its host:port.
func acceptingMaster(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A redirect teaches the process the leader before the leader answers:
// while the first agent waits for a busy leader's 200, the next ones go
// to the leader without asking the follower.
func TestRedirectTeachesLeader(t *testing.T) {
	release := make(chan struct{})
	var leaderCalls atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaderCalls.Add(1)
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	defer leader.Close()
	defer close(release)
	leaderAddr := strings.TrimPrefix(leader.URL, "http://")
	var followerCalls atomic.Int64
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followerCalls.Add(1)
		w.Header().Set("Location", "//"+leaderAddr+Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer follower.Close()
	masters := []string{strings.TrimPrefix(follower.URL, "http://"), leaderAddr}
	hc := noRedirects()
	errs := make(chan error, 2)
	dial := func() {
		resp, _, err := Dial(context.Background(), hc, masters, "", nil)
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}
	go dial()
	waitUntil(t, "the first dial at the leader", func() bool { return leaderCalls.Load() == 1 })
	go dial()
	waitUntil(t, "the second dial at the leader", func() bool { return leaderCalls.Load() == 2 })
	if n := followerCalls.Load(); n != 1 {
		t.Fatalf("the follower was asked %d times, want once (by the first dial)", n)
	}
	release <- struct{}{}
	release <- struct{}{}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// waitUntil polls cond until it holds, failing the test after a deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // poll interval, bounded by the deadline
	}
}
