package httpapi

import (
	"net/http"
	"strings"

	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
)

// The agent's HTTP security, in Mesos's shape:
//
//   - Authenticate wraps the handler: the operator API is in the
//     read-write realm, the other endpoints but /health and /version in
//     the read-only one (--authenticate_http_readwrite/readonly with the
//     agent's --credentials); 401 with WWW-Authenticate otherwise.
//   - The executor API is authenticated by the executors' own tokens
//     (SetExecutorAuthenticator, --authenticate_http_executors): 401 with
//     a Bearer challenge in the mesos-agent-executor realm.
//   - What a caller may read is the Authorizer's (SetAuthorizer, --acls):
//     sandboxes by access_sandboxes (the owner recorded when the agent
//     attached them), /state and GET_* by view_frameworks, view_executors
//     and view_tasks, /flags by view_flags, the metrics and the containers'
//     statistics by get_endpoints; 403 naming the action.

// realmOf is the realm of an agent path (without its /slave(1) prefix),
// false for the endpoints that need none (the executor API authenticates
// with tokens).
func realmOf(path string) (authn.Realm, bool) {
	switch path {
	case "/health", "/version", "/api/v1/executor":
		return "", false
	case "/api/v1":
		return authn.AgentReadwrite, true
	}
	return authn.AgentReadonly, true
}

// Authenticate returns next behind g (nil g: next itself).
func Authenticate(g *authn.Guard, next http.Handler) http.Handler {
	return g.Handler(func(p string) (authn.Realm, bool) { return realmOf(agentPath(p)) }, next)
}

// agentPath strips the agent's libprocess id ("/slave(1)/x" is "/x").
func agentPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "/slave(1)"); ok && strings.HasPrefix(rest, "/") {
		return rest
	}
	return p
}

// RequireClientCert refuses (401) TLS requests without a verified client
// certificate, but for the executor API, whose callers are local
// executors holding no certificate (their tokens authenticate them): the
// agent's half of --tls_verify_peer, whose listener verifies a
// certificate when one is given (tlsconfig.PeersOptional).
func RequireClientCert(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) == 0 && agentPath(r.URL.Path) != "/api/v1/executor" {
			writeError(w, Errorf(http.StatusUnauthorized, "A client certificate is required (the agent runs with --tls_verify_peer)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// SetAuthorizer makes h show each caller only what a allows (nil: all).
// Call before serving.
func (h *Handler) SetAuthorizer(a authorizer.Authorizer) { h.authz = a }

// SetExecutorAuthenticator makes every executor API call pass check
// first (its error, an *Error, is the answer). Call before serving.
func (h *Handler) SetExecutorAuthenticator(check func(*http.Request, *executorpb.Call) error) {
	h.execAuth = check
}

// may reports whether r's caller may perform action on o.
func (h *Handler) may(r *http.Request, action authorizer.Action, o authorizer.Object) bool {
	return h.authz == nil || authorizer.Allowed(h.authz, authorizer.Request{Subject: authn.PrincipalOf(r.Context()), Action: action, Object: o})
}

// forbid is the 403 refusing r's caller action on o.
func forbid(r *http.Request, action authorizer.Action, o authorizer.Object) *Error {
	who := "an unauthenticated caller"
	if p := authn.PrincipalOf(r.Context()); p != "" {
		who = "principal '" + p + "'"
	}
	return Errorf(http.StatusForbidden, "Forbidden: %s is not authorized to %s (object %v)", who, action, o)
}

// check is may as an error: nil or the 403.
func (h *Handler) check(r *http.Request, action authorizer.Action, o authorizer.Object) error {
	if h.may(r, action, o) {
		return nil
	}
	h.log.Warn("read refused", "principal", authn.PrincipalOf(r.Context()), "action", string(action), "path", r.URL.Path)
	return forbid(r, action, o)
}

// checkFile authorizes reading the virtual path p: a sandbox by its
// owner (access_sandboxes), anything else attached by access_mesos_logs.
// A path nothing serves passes: the files handler answers 404.
func (h *Handler) checkFile(r *http.Request, p string) error {
	if h.authz == nil || h.files == nil {
		return nil
	}
	owner, sandbox, found := h.files.OwnerOf(p)
	switch {
	case !found:
		return nil
	case sandbox:
		return h.check(r, authorizer.AccessSandbox, owner)
	}
	return h.check(r, authorizer.AccessMesosLog, authorizer.AnyObject)
}

// stateFor is the agent's state as r's caller may view it.
func (h *Handler) stateFor(r *http.Request) (*StateView, error) {
	v, err := h.b.State()
	if err != nil || h.authz == nil {
		return v, err
	}
	out := *v
	out.Frameworks = h.viewFrameworks(r, v.Frameworks)
	out.CompletedFrameworks = h.viewFrameworks(r, v.CompletedFrameworks)
	if !h.may(r, authorizer.ViewFlags, authorizer.AnyObject) {
		out.Flags = nil
	}
	return &out, nil
}

func (h *Handler) viewFrameworks(r *http.Request, fws []FrameworkView) []FrameworkView {
	var out []FrameworkView
	for _, f := range fws {
		if !h.may(r, authorizer.ViewFramework, authorizer.ViewFrameworkObject(f.Info)) {
			continue
		}
		f.Executors = h.viewExecutors(r, f.Info, f.Executors)
		f.CompletedExecutors = h.viewExecutors(r, f.Info, f.CompletedExecutors)
		out = append(out, f)
	}
	return out
}

func (h *Handler) viewExecutors(r *http.Request, fw *mesos.FrameworkInfo, es []ExecutorView) []ExecutorView {
	var out []ExecutorView
	for _, e := range es {
		if !h.may(r, authorizer.ViewExecutor, authorizer.ViewExecutorObject(e.Info, fw)) {
			continue
		}
		task := func(t *mesos.Task) bool {
			return h.may(r, authorizer.ViewTask, authorizer.ViewTaskObject(t, fw))
		}
		e.Tasks = keep(e.Tasks, task)
		e.Queued = keep(e.Queued, task)
		e.TerminatedTasks = keep(e.TerminatedTasks, task)
		e.CompletedTasks = keep(e.CompletedTasks, task)
		var queued []*mesos.TaskInfo
		for _, ti := range e.QueuedTasks {
			if h.may(r, authorizer.ViewTask, authorizer.RunTaskObject(ti, e.Info, fw)) {
				queued = append(queued, ti)
			}
		}
		e.QueuedTasks = queued
		out = append(out, e)
	}
	return out
}

func keep[T any](xs []T, ok func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}
