package endpoints

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/master"
)

func TestKillTaskEndpoint(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		body     string
		writeErr error
		code     int
		contains string
		write    string // recorded KillTask call, "" for none
	}{
		{"kills", http.MethodPost, "frameworkId=m1-0000&taskId=t1", nil, http.StatusOK, "", "KillTask m1-0000 t1"},
		{"GET refused", http.MethodGet, "", nil, http.StatusMethodNotAllowed, "POST", ""},
		{"no task", http.MethodPost, "frameworkId=m1-0000", nil, http.StatusBadRequest, "'taskId'", ""},
		{"no framework", http.MethodPost, "taskId=t1", nil, http.StatusBadRequest, "'frameworkId'", ""},
		{"bad form", http.MethodPost, "%zz", nil, http.StatusBadRequest, "decode", ""},
		{"unknown task", http.MethodPost, "frameworkId=m1-0000&taskId=x", &master.APIError{Status: http.StatusNotFound, Message: "Framework m1-0000 has no live task x"},
			http.StatusNotFound, "no live task x", "KillTask m1-0000 x"},
		{"ended", http.MethodPost, "frameworkId=m1-0000&taskId=t1", &master.APIError{Status: http.StatusConflict, Message: "Task t1 already ended"},
			http.StatusConflict, "already ended", "KillTask m1-0000 t1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newFakeSource(testSnapshot())
			src.writeErr = tt.writeErr
			mux, _ := newTestServer(t, src)
			req := newRequest(tt.method, "/master/kill-task", tt.body)
			rec := do(mux, req)
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.contains) {
				t.Errorf("%d %q, want %d containing %q", rec.Code, rec.Body, tt.code, tt.contains)
			}
			got := strings.Join(src.writes, "|")
			if got != tt.write {
				t.Errorf("writes %q, want %q", got, tt.write)
			}
		})
	}
	// A follower sends the operator to the leader.
	s := testSnapshot()
	s.Elected = false
	s.Leader = &mesos.MasterInfo{Hostname: proto.String("leader.example"), Port: proto.Uint32(5050)}
	mux, _ := newTestServer(t, newFakeSource(s))
	rec := do(mux, newRequest(http.MethodPost, "/master/kill-task", "frameworkId=m1-0000&taskId=t1"))
	if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "//leader.example:5050/master/kill-task" {
		t.Errorf("follower: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

func newRequest(method, path, form string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}
