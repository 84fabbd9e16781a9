package health

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/internal/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness runs a Checker on a fake clock and collects its Results.
type harness struct {
	t       *testing.T
	clk     *clock.Fake
	c       *Checker
	results chan Result
}

func startChecker(t *testing.T, check *mesos.HealthCheck, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewFake(epoch), results: make(chan Result, 64)}
	opts.Clock = h.clk
	c, err := New(check, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.c = c
	c.Start(context.Background(), func(r Result) { h.results <- r })
	t.Cleanup(func() {
		c.Stop()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Error("checker goroutine did not end after Stop")
		}
	})
	return h
}

// advance waits until the checker has armed its timer (it has none while a
// check runs), then moves the fake clock by d.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.clk.Pending() == 0 {
		if time.Now().After(deadline) {
			h.t.Fatal("checker never armed its timer")
		}
		time.Sleep(time.Millisecond)
	}
	h.clk.Advance(d)
}

func (h *harness) next() Result {
	h.t.Helper()
	select {
	case r := <-h.results:
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatal("no health result")
		return Result{}
	}
}

// quiet asserts that no Result arrived: it waits until the checker has armed
// its next timer, which it does before reporting.
func (h *harness) quiet() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.clk.Pending() == 0 {
		if time.Now().After(deadline) {
			h.t.Fatal("checker never armed its timer")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-h.results:
		h.t.Fatalf("unexpected result %+v", r)
	default:
	}
}

// scripted is an HTTP server answering each request with the next status
// of a script (the last one repeats).
type scripted struct {
	mu     sync.Mutex
	script []int
	hits   int
	srv    *httptest.Server
}

func newScripted(t *testing.T, script ...int) *scripted {
	s := &scripted{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		i := min(s.hits, len(s.script)-1)
		s.hits++
		code := s.script[i]
		s.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func portOf(t *testing.T, rawURL string) uint32 {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return uint32(p)
}

func httpCheck(port uint32, path string) *mesos.HealthCheck {
	info := &mesos.HealthCheck_HTTPCheckInfo{Port: proto.Uint32(port)}
	if path != "" {
		info.Path = proto.String(path)
	}
	return &mesos.HealthCheck{
		Type:                mesos.HealthCheck_HTTP.Enum(),
		Http:                info,
		DelaySeconds:        proto.Float64(1),
		IntervalSeconds:     proto.Float64(2),
		TimeoutSeconds:      proto.Float64(5),
		ConsecutiveFailures: proto.Uint32(3),
		GracePeriodSeconds:  proto.Float64(0),
	}
}

func TestHTTPFailuresKillTask(t *testing.T) {
	s := newScripted(t, 500)
	h := startChecker(t, httpCheck(portOf(t, s.srv.URL), "/health"), Options{})
	for i := 1; i <= 4; i++ {
		if i == 1 {
			h.advance(time.Second) // delay
		} else {
			h.advance(2 * time.Second) // interval
		}
		r := h.next()
		if r.Healthy || r.ConsecutiveFailures != i || r.KillTask != (i >= 3) {
			t.Fatalf("check %d: got %+v", i, r)
		}
		if !strings.Contains(r.Message, "HTTP health check failed") || !strings.Contains(r.Message, "500") {
			t.Errorf("check %d: message %q", i, r.Message)
		}
	}
}

func TestHealthTransitions(t *testing.T) {
	// Each step advances the clock by one interval (the first by the
	// delay), the server answers with the step's status, and the step says
	// what Result, if any, must follow.
	type step struct {
		status int
		want   *Result
	}
	healthy := &Result{Healthy: true}
	fail := func(n int, kill bool) *Result { return &Result{ConsecutiveFailures: n, KillTask: kill} }
	cases := []struct {
		name  string
		grace float64
		steps []step
	}{
		{"first success reported once", 0, []step{{200, healthy}, {204, nil}, {301, nil}}},
		{"recovery reported", 0, []step{{200, healthy}, {503, fail(1, false)}, {200, healthy}, {200, nil}}},
		{"failures reset by success", 0, []step{{500, fail(1, false)}, {500, fail(2, false)}, {200, healthy}, {500, fail(1, false)}}},
		// delay 1s, interval 2s: checks at 1, 3, 5, 7; grace 4s covers the
		// first two only.
		{"grace period ignores early failures", 4, []step{{500, nil}, {500, nil}, {500, fail(1, false)}, {500, fail(2, false)}, {500, fail(3, true)}}},
		{"grace period ends at first success", 100, []step{{500, nil}, {200, healthy}, {500, fail(1, false)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var script []int
			for _, s := range tc.steps {
				script = append(script, s.status)
			}
			s := newScripted(t, script...)
			check := httpCheck(portOf(t, s.srv.URL), "")
			check.GracePeriodSeconds = proto.Float64(tc.grace)
			h := startChecker(t, check, Options{LaunchTime: epoch})
			for i, st := range tc.steps {
				if i == 0 {
					h.advance(time.Second)
				} else {
					h.advance(2 * time.Second)
				}
				if st.want == nil {
					h.quiet()
					continue
				}
				r := h.next()
				if r.Healthy != st.want.Healthy || r.ConsecutiveFailures != st.want.ConsecutiveFailures || r.KillTask != st.want.KillTask {
					t.Fatalf("step %d (status %d): got %+v, want %+v", i, st.status, r, *st.want)
				}
			}
		})
	}
}

func TestHTTPStatusesAndRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mux.HandleFunc("/bad", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	mux.HandleFunc("/to-bad", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/bad", http.StatusFound) })
	mux.HandleFunc("/to-ok", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tls := httptest.NewTLSServer(mux)
	defer tls.Close()

	cases := []struct {
		name     string
		srv      *httptest.Server
		scheme   string
		path     string
		statuses []uint32
		healthy  bool
	}{
		{"200", srv, "", "/ok", nil, true},
		{"418 outside 200-399", srv, "", "/teapot", nil, false},
		{"418 listed in statuses", srv, "", "/teapot", []uint32{418}, true},
		{"200 not listed in statuses", srv, "", "/ok", []uint32{204}, false},
		{"404", srv, "http", "/missing", nil, false},
		{"redirect followed to a failure", srv, "", "/to-bad", nil, false},
		{"redirect followed to success", srv, "", "/to-ok", nil, true},
		{"https without certificate checks", tls, "https", "/ok", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := httpCheck(portOf(t, tc.srv.URL), tc.path)
			if tc.scheme != "" {
				check.Http.Scheme = proto.String(tc.scheme)
			}
			check.Http.Statuses = tc.statuses
			h := startChecker(t, check, Options{})
			h.advance(time.Second)
			if r := h.next(); r.Healthy != tc.healthy {
				t.Fatalf("got %+v, want healthy=%v", r, tc.healthy)
			}
		})
	}
}

func TestTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := uint32(ln.Addr().(*net.TCPAddr).Port)
	check := &mesos.HealthCheck{
		Type:               mesos.HealthCheck_TCP.Enum(),
		Tcp:                &mesos.HealthCheck_TCPCheckInfo{Port: proto.Uint32(port)},
		GracePeriodSeconds: proto.Float64(0),
	}
	h := startChecker(t, check, Options{})
	h.advance(15 * time.Second) // default delay
	if r := h.next(); !r.Healthy {
		t.Fatalf("listening port: got %+v", r)
	}
	ln.Close()
	h.advance(10 * time.Second) // default interval
	r := h.next()
	if r.Healthy || r.ConsecutiveFailures != 1 || !strings.Contains(r.Message, "TCP health check failed") {
		t.Fatalf("closed port: got %+v", r)
	}
}

func commandCheck(script string, timeout float64) *mesos.HealthCheck {
	return &mesos.HealthCheck{
		Type:                mesos.HealthCheck_COMMAND.Enum(),
		Command:             &mesos.CommandInfo{Value: proto.String(script)},
		DelaySeconds:        proto.Float64(0),
		TimeoutSeconds:      proto.Float64(timeout),
		ConsecutiveFailures: proto.Uint32(1),
		GracePeriodSeconds:  proto.Float64(0),
	}
}

func TestCommand(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		check   *mesos.HealthCheck
		healthy bool
		msg     string
	}{
		{"exit 0", commandCheck("exit 0", 60), true, ""},
		{"exit 3", commandCheck("exit 3", 60), false, "COMMAND health check failed: command exited with status 3"},
		{"task environment and sandbox", commandCheck(`test "$TASK_VAR" = task && test "$(pwd -P)" = "$(cd "$MESOS_SANDBOX" && pwd -P)"`, 60), true, ""},
		{"check environment overrides", func() *mesos.HealthCheck {
			c := commandCheck(`test "$TASK_VAR" = check`, 60)
			c.Command.Environment = &mesos.Environment{Variables: []*mesos.Environment_Variable{
				{Name: proto.String("TASK_VAR"), Value: proto.String("check")},
			}}
			return c
		}(), true, ""},
		{"exec form", &mesos.HealthCheck{
			Type:               mesos.HealthCheck_COMMAND.Enum(),
			Command:            &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("test"), Arguments: []string{"test", "-d", dir}},
			DelaySeconds:       proto.Float64(0),
			GracePeriodSeconds: proto.Float64(0),
		}, true, ""},
		{"timeout kills the command", commandCheck("sleep 30", 0.2), false, "has not returned after 200ms"},
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "TASK_VAR=task", "MESOS_SANDBOX=" + dir}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			h := startChecker(t, tc.check, Options{Env: env, Dir: dir})
			h.advance(0)
			r := h.next()
			if r.Healthy != tc.healthy || !strings.Contains(r.Message, tc.msg) {
				t.Fatalf("got %+v, want healthy=%v message containing %q", r, tc.healthy, tc.msg)
			}
			// Only "timeout kills the command" could take long: its sleep
			// lasts 30s, so ending well within that shows the kill (a
			// tighter bound fails under load for nothing).
			if took := time.Since(start); took > 25*time.Second {
				t.Errorf("check took %v", took)
			}
		})
	}
}

func TestStopAbortsRunningCommand(t *testing.T) {
	h := startChecker(t, commandCheck("sleep 30", 0), Options{Env: []string{"PATH=/usr/bin:/bin"}})
	h.advance(0)
	// Wait for the command to be running (the timer is consumed); the
	// old loop gave up silently after 5s and tested Stop before the
	// command ran.
	deadline := time.Now().Add(30 * time.Second)
	for h.clk.Pending() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the check never started its command")
		}
		time.Sleep(time.Millisecond) // polling interval, bounded by the deadline
	}
	// Stop must abort the command, not wait for it: a check that waited
	// would end after the 30s sleep, so ending well within that is the
	// proof (a "took under 5s" bound failed under load for nothing).
	h.c.Stop()
	select {
	case <-h.c.Done():
	case <-time.After(25 * time.Second):
		t.Fatal("Stop did not abort the running check")
	}
	select {
	case r := <-h.results:
		t.Fatalf("result after Stop: %+v", r)
	default:
	}
}

func TestStopBeforeStart(t *testing.T) {
	c, err := New(commandCheck("exit 0", 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Stop()
	c.Stop()
	<-c.Done()
	c.Start(context.Background(), func(Result) { t.Error("result after Stop") })
}

func TestRecord(t *testing.T) {
	// record is the whole state machine; drive it directly with times.
	clk := clock.NewFake(epoch)
	c := &Checker{
		check:        httpCheck(80, "/"),
		clk:          clk,
		launch:       epoch,
		grace:        10 * time.Second,
		maxFailures:  2,
		initializing: true,
	}
	boom := errors.New("boom")
	steps := []struct {
		at     time.Duration
		err    error
		report bool
		want   Result
	}{
		{5 * time.Second, boom, false, Result{}},
		{10 * time.Second, boom, false, Result{}}, // grace is inclusive
		{11 * time.Second, boom, true, Result{ConsecutiveFailures: 1, Message: "HTTP health check failed: boom"}},
		{12 * time.Second, boom, true, Result{ConsecutiveFailures: 2, KillTask: true, Message: "HTTP health check failed: boom"}},
		{13 * time.Second, nil, true, Result{Healthy: true}},
		{14 * time.Second, nil, false, Result{Healthy: true}},
		{15 * time.Second, boom, true, Result{ConsecutiveFailures: 1, Message: "HTTP health check failed: boom"}},
	}
	for i, s := range steps {
		clk.Advance(epoch.Add(s.at).Sub(clk.Now()))
		got, report := c.record(s.err)
		if report != s.report || (report && got != s.want) {
			t.Fatalf("step %d: got %+v report=%v, want %+v report=%v", i, got, report, s.want, s.report)
		}
	}
}
