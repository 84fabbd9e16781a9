package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"mezzo/master"
)

// followerElection keeps the master a follower of leader.
type followerElection struct{ leader string }

func (e followerElection) LeaderCh() <-chan bool {
	ch := make(chan bool, 1)
	ch <- false
	return ch
}
func (followerElection) IsLeader() bool       { return false }
func (followerElection) Term() uint64         { return 1 }
func (e followerElection) LeaderAddr() string { return e.leader }

// On a follower, the web UI and every read of the cluster's state send the
// client to the leader (issue 16: a follower answered its own empty view,
// and the UI would otherwise read the leader cross-origin).
func TestFollowerSendsEveryClientToTheLeader(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := master.New(master.Config{ID: "M2", Hostname: "m2.test", IP: "127.0.0.1", Port: 5051,
		Allocator: idleAllocator{}, Logger: quiet, Election: followerElection{leader: "m1.test:5050"},
		Registrar: master.NewMemoryRegistrar()})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the UI") })
	h := New(m, Options{UI: ui, Logger: quiet})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s := m.LastPublished(); s != nil && s.Leader != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the follower never learned the leader")
		}
		time.Sleep(time.Millisecond) // polling interval, bounded by the deadline
	}
	for _, path := range []string{"/", "/index.html?x=1", "/master/state", "/master/tasks?limit=5", "/master/slaves",
		"/master/state-summary", "/master/frameworks", "/master/roles", "/master/allocator/explain?framework_id=f"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "//m1.test:5050"+path {
			t.Errorf("GET %s on a follower: %d Location %q, want 307 to //m1.test:5050%s", path, rec.Code, rec.Header().Get("Location"), path)
		}
	}
	for _, path := range []string{"/health", "/master/flags", "/metrics/snapshot"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s on a follower: %d, want its own 200", path, rec.Code)
		}
	}
}
