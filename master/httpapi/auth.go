package httpapi

import (
	"net/http"
	"strings"

	"mezzo/internal/authn"
	"mezzo/master"
)

// Authentication happens here, once, before any handler: authenticate
// finds the request's realm by its path, asks the Guard who the caller is
// (401 with WWW-Authenticate when the realm requires credentials or the
// presented ones are wrong) and hands the principal to every handler in
// the request's context. The handlers pass it to the master's entry
// points (principal), which authorize on the loop.

// readwritePaths are the classic endpoints in Mesos's read-write realm
// (src/master/master.cpp routes), without the "/master" prefix; every
// method of them is, as in Mesos.
var readwritePaths = map[string]bool{
	"/api/v1":               true,
	"/teardown":             true,
	"/kill-task":            true,
	"/reserve":              true,
	"/unreserve":            true,
	"/create-volumes":       true,
	"/destroy-volumes":      true,
	"/maintenance/schedule": true,
	"/machine/down":         true,
	"/machine/up":           true,
	"/weights":              true,
	"/quota":                true,
}

// unauthenticated are the endpoints Mesos serves to anyone: liveness,
// version and the leader's address.
var unauthenticated = map[string]bool{"/health": true, "/version": true, "/redirect": true}

// realmOf is the authentication realm of a request path, and false for
// the endpoints that need none.
func realmOf(path string) (authn.Realm, bool) {
	if path == agentPath {
		return authn.MasterAgents, true
	}
	p := path
	if rest, ok := strings.CutPrefix(path, "/master"); ok && (rest == "" || rest[0] == '/') {
		p = rest
	}
	switch {
	case p == "/api/v1/scheduler":
		return authn.MasterScheduler, true
	case unauthenticated[p]:
		return "", false
	case readwritePaths[p], strings.HasPrefix(p, "/quota/"):
		return authn.MasterReadwrite, true
	}
	// Reads: the state endpoints, metrics, the agents' endpoints through
	// the master and the web UI.
	return authn.MasterReadonly, true
}

// principal is the caller of a scheduler-API or agent-protocol request,
// as authenticate found it ("" when anonymous).
func principal(r *http.Request) master.Principal {
	return master.Principal{Name: authn.PrincipalOf(r.Context())}
}
