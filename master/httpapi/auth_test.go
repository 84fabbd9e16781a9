package httpapi

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"mezzo/internal/authn"
)

func TestRealmOf(t *testing.T) {
	for _, tc := range []struct {
		path  string
		realm authn.Realm
		none  bool
	}{
		{"/api/v1/scheduler", authn.MasterScheduler, false},
		{"/master/api/v1/scheduler", authn.MasterScheduler, false},
		{"/internal/v1/agent", authn.MasterAgents, false},
		{"/api/v1", authn.MasterReadwrite, false},
		{"/master/teardown", authn.MasterReadwrite, false},
		{"/master/kill-task", authn.MasterReadwrite, false},
		{"/quota/web/x", authn.MasterReadwrite, false},
		{"/master/weights", authn.MasterReadwrite, false},
		{"/master/state", authn.MasterReadonly, false},
		{"/metrics/snapshot", authn.MasterReadonly, false},
		{"/agent/S1/files/read", authn.MasterReadonly, false},
		{"/", authn.MasterReadonly, false},
		{"/masterx/state", authn.MasterReadonly, false},
		{"/health", "", true},
		{"/master/version", "", true},
		{"/master/redirect", "", true},
	} {
		realm, needed := realmOf(tc.path)
		if realm != tc.realm || needed == tc.none {
			t.Errorf("realmOf(%q) = %q, %v; want %q, %v", tc.path, realm, needed, tc.realm, !tc.none)
		}
	}
}

// With --authenticate_http_readwrite and --authenticate_frameworks a
// caller without credentials, or with wrong ones, reaches nothing: 401
// with the realm's challenge, and the master sees no call. Reads stay
// anonymous; /health never asks.
func TestAuthenticationGate(t *testing.T) {
	var failures atomic.Int64
	g := &authn.Guard{
		Authenticator: authn.NewAuthenticator([]authn.Credential{{Principal: "ops", Secret: "pw"}}),
		Required:      map[authn.Realm]bool{authn.MasterReadwrite: true, authn.MasterScheduler: true},
		Failures:      &failures,
	}
	c := newCluster(t, Options{Auth: g})
	do := func(method, path, auth string) (int, http.Header) {
		req, _ := http.NewRequest(method, c.srv.URL+path, strings.NewReader(`{"type":"GET_HEALTH"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.h1.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	right := authn.Credential{Principal: "ops", Secret: "pw"}.BasicHeader()
	wrong := authn.Credential{Principal: "ops", Secret: "guess"}.BasicHeader()
	for _, tc := range []struct {
		method, path, auth string
		want               int
		realm              string
	}{
		{"POST", "/api/v1", "", 401, "mesos-master-readwrite"},
		{"POST", "/api/v1", wrong, 401, "mesos-master-readwrite"},
		{"POST", "/api/v1", right, 200, ""},
		{"POST", "/api/v1/scheduler", "", 401, "mesos-master-scheduler"},
		{"POST", "/master/teardown", "", 401, "mesos-master-readwrite"},
		{"GET", "/master/state", "", 200, ""},
		{"GET", "/master/state", wrong, 401, "mesos-master-readonly"},
		{"GET", "/health", wrong, 200, ""},
	} {
		code, hdr := do(tc.method, tc.path, tc.auth)
		if code != tc.want {
			t.Errorf("%s %s (auth %v): %d, want %d", tc.method, tc.path, tc.auth != "", code, tc.want)
		}
		if tc.realm != "" && hdr.Get("WWW-Authenticate") != `Basic realm="`+tc.realm+`"` {
			t.Errorf("%s %s: WWW-Authenticate %q", tc.method, tc.path, hdr.Get("WWW-Authenticate"))
		}
	}
	if n := failures.Load(); n != 5 {
		t.Errorf("failures counted %d, want 5", n)
	}
	if s := c.m.Snapshot(); len(s.Frameworks) != 0 {
		t.Errorf("refused requests changed the master: %d frameworks", len(s.Frameworks))
	}
}
