// Package agentproxy forwards a few read-only agent endpoints through the
// master, so that the web UI (and anything else that can reach only the
// master, e.g. behind one ingress) can read sandboxes, logs and container
// statistics without reaching every agent itself.
//
// A request names the agent by ID and then the agent's own path:
//
//	GET /agent/<agent_id>/files/read?path=...&offset=...&length=...
//	GET /agent/<agent_id>/slave(1)/monitor/statistics
//	GET /slave/<agent_id>/files/browse?path=...
//
// Mesos's master has no such proxy (its UI reads agents directly, by the
// host:port in their pid); the /agent/<id>/ and /slave/<id>/ prefixes are
// the ones DC/OS's Admin Router put in front of Mesos, so tools written
// for those paths work unchanged. Only the endpoints in Allowed are
// forwarded, only with GET or HEAD, only to an agent registered with this
// master, at the HTTP endpoint the agent registered with: the proxy can
// neither write to an agent nor be pointed at another host. cmd/mezzo
// mounts Handler on the master's mux (master/httpapi Options.AgentProxy);
// Handler reads the agents from the master's published snapshot and never
// touches its loop.
package agentproxy

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
	"mezzo/internal/opapi"
	"mezzo/master"
)

// Allowed are the agent endpoints the proxy forwards (after an optional
// "/slave(1)" prefix, the agent's libprocess id, which the agent accepts
// too): the sandbox reads, the agent's state (where the UI finds an
// executor's sandbox) and the containers' resource statistics. Each has
// its ".json" alias, as on the agent.
var Allowed = []string{
	"/files/browse",
	"/files/read",
	"/files/download",
	"/monitor/statistics",
	"/state",
}

// Prefixes are the path prefixes Handler serves; mount each on the mux.
var Prefixes = []string{"/agent/", "/slave/"}

// Snapshots is what the proxy needs of the master: its latest published
// state (registered agents with their endpoints; leadership). It is called
// from HTTP goroutines and must not block; *master.Master satisfies it.
type Snapshots interface {
	Snapshot() *master.Snapshot
}

// Options configures New. The zero value is usable.
type Options struct {
	// Timeout bounds a forwarded request's connection and response
	// headers (the body of a download may take longer); 0 means 10s.
	Timeout time.Duration
	// Transport reaches the agents; nil means an HTTP/1.1 transport (over
	// TLS with TLS).
	Transport http.RoundTripper
	// TLS, when set, makes the proxy reach agents over https with this
	// client configuration (a TLS cluster is TLS everywhere).
	TLS *tls.Config
	// Credential, when set, is presented to the agents (the master reads
	// as itself; agents that authenticate readers need it).
	Credential *authn.Credential
	// Authorizer decides which sandboxes a caller may read through the
	// proxy (access_sandboxes, authz.go); nil: all.
	Authorizer authorizer.Authorizer
}

// maxIDLen bounds an agent ID in a path: Mesos's are a UUID plus "-S<n>".
const maxIDLen = 256

// New returns the proxy handler over src.
func New(src Snapshots, opts Options) http.Handler {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Transport == nil {
		opts.Transport = &http.Transport{
			DialContext:           (&net.Dialer{Timeout: opts.Timeout}).DialContext,
			ResponseHeaderTimeout: opts.Timeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			TLSClientConfig:       opts.TLS,
		}
	}
	scheme := "http"
	if opts.TLS != nil {
		scheme = "https"
	}
	return &proxy{src: src, timeout: opts.Timeout, scheme: scheme, authz: opts.Authorizer, client: &http.Client{
		Transport: opts.Credential.Transport(opts.Transport),
		// An agent never redirects these endpoints; following a redirect
		// would let a reply steer the master elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type proxy struct {
	src     Snapshots
	timeout time.Duration
	scheme  string
	authz   authorizer.Authorizer
	client  *http.Client
}

// split parses "/agent/<id>/<rest>" into the agent ID and the agent's
// endpoint with the "/slave(1)" prefix and ".json" suffix removed.
// agentPath is rest as the agent is asked for it.
func split(p string) (id, endpoint, agentPath string, ok bool) {
	for _, prefix := range Prefixes {
		if rest, found := strings.CutPrefix(p, prefix); found {
			id, agentPath, ok = strings.Cut(rest, "/")
			if !ok {
				return "", "", "", false
			}
			agentPath = "/" + agentPath
			endpoint = strings.TrimPrefix(agentPath, "/slave(1)")
			if endpoint == "" {
				endpoint = "/"
			}
			endpoint = strings.TrimSuffix(endpoint, ".json")
			return id, endpoint, agentPath, id != ""
		}
	}
	return "", "", "", false
}

// validID reports whether id can be an agent ID: Mesos IDs are made of
// letters, digits, '-', '_' and '.', and are not "." or "..".
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen || id == "." || id == ".." {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func allowed(endpoint string) bool {
	for _, a := range Allowed {
		if endpoint == a {
			return true
		}
	}
	return false
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Validate the request before anything else, so that a malformed one
	// gets the same answer from every master.
	id, endpoint, agentPath, ok := split(r.URL.Path)
	if !ok {
		opapi.NoEndpoint(w, r, "master")
		return
	}
	if !validID(id) {
		opapi.WriteText(w, http.StatusBadRequest, "Invalid agent ID '"+id+"' in the path: expecting letters, digits, '-', '_' and '.'\n")
		return
	}
	if !allowed(endpoint) {
		opapi.WriteText(w, http.StatusNotFound, "The master does not forward '"+agentPath+"' to agents; it forwards only "+
			strings.Join(Allowed, ", ")+" (read-only)\n")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		opapi.WriteText(w, http.StatusMethodNotAllowed, "Expecting one of { 'GET', 'HEAD' }, but received '"+r.Method+"'\n")
		return
	}
	q := r.URL.Query()
	if strings.HasPrefix(endpoint, "/files/") && q.Get("path") == "" {
		opapi.WriteText(w, http.StatusBadRequest, "Expecting 'path' query parameter for "+agentPath+"\n")
		return
	}
	if q.Has("jsonp") {
		// Same-origin callers need no JSONP, and a JSONP endpoint on the
		// master's origin would let any page read the agents through it.
		opapi.WriteText(w, http.StatusBadRequest, "Query parameter 'jsonp' is not forwarded: read agents through the master with a same-origin request\n")
		return
	}
	snap := p.src.Snapshot()
	if snap == nil || !snap.Elected {
		// Only the leader knows the agents (they register with it).
		redirectToLeader(w, r, snap)
		return
	}
	var agent *master.AgentView
	for _, a := range snap.Agents {
		if a.Info.GetId().GetValue() == id {
			agent = a
			break
		}
	}
	if agent == nil {
		for _, u := range snap.UnreachableAgents {
			if u.ID == id {
				opapi.WriteText(w, http.StatusServiceUnavailable, "Agent '"+id+"' is unreachable (since "+
					u.Time.UTC().Format(time.RFC3339)+"); it can be read again once it re-registers\n")
				return
			}
		}
		opapi.WriteText(w, http.StatusNotFound, "Agent '"+id+"' is not registered with this master\n")
		return
	}
	if agent.Endpoint == "" {
		opapi.WriteText(w, http.StatusBadGateway, "Agent '"+id+"' registered no HTTP endpoint\n")
		return
	}
	if !p.authorized(w, r, snap, endpoint, q.Get("path")) {
		return
	}
	var rewrite func([]byte) ([]byte, error)
	if endpoint == "/state" && p.authz != nil {
		rewrite = func(body []byte) ([]byte, error) { return p.filterState(r, snap, body) }
	}
	p.forward(w, r, id, agent.Endpoint, agentPath, q, rewrite)
}

// maxRewrite bounds an agent answer the proxy reads whole to filter it
// (an agent's /state; a busy agent's is a few MB).
const maxRewrite = 64 << 20

// forwarded are the response headers copied from the agent.
var forwarded = []string{"Content-Type", "Content-Length", "Content-Disposition", "Last-Modified", "ETag"}

// forward sends the request on to the agent and streams its answer back;
// rewrite, if set, replaces a 200's body (read whole) before it is sent.
func (p *proxy) forward(w http.ResponseWriter, r *http.Request, id, endpoint, agentPath string, q url.Values, rewrite func([]byte) ([]byte, error)) {
	// agentPath is one of Allowed (with its optional prefix and suffix),
	// so it needs no escaping; the query is re-encoded from its parsed form.
	target := p.scheme + "://" + endpoint + agentPath
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, target, nil)
	if err != nil {
		opapi.WriteText(w, http.StatusBadRequest, "Cannot forward to agent '"+id+"': "+err.Error()+"\n")
		return
	}
	// Only what the agent needs: no cookies or credentials meant for the
	// master travel on (an agent could collect them). The master reads as
	// itself (Options.Transport may present the master's own credential)
	// and has authorized the caller (authz.go).
	if a := r.Header.Get("Accept"); a != "" {
		req.Header.Set("Accept", a)
	}
	req.Header.Set("X-Forwarded-For", clientIP(r))
	resp, err := p.client.Do(req)
	if err != nil {
		opapi.WriteText(w, http.StatusBadGateway, "Agent '"+id+"' at "+endpoint+" did not answer: "+err.Error()+"\n")
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for _, k := range forwarded {
		if v := resp.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if rewrite != nil && resp.StatusCode == http.StatusOK {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxRewrite))
		if err == nil {
			body, err = rewrite(body)
		}
		if err != nil {
			opapi.WriteText(w, http.StatusBadGateway, "Agent '"+id+"' answered "+agentPath+" with what the master cannot filter: "+err.Error()+"\n")
			return
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(resp.StatusCode)
		if r.Method != http.MethodHead {
			w.Write(body)
		}
		return
	}
	w.WriteHeader(resp.StatusCode)
	if r.Method == http.MethodHead {
		return
	}
	io.Copy(flushWriter{w}, resp.Body)
}

// flushWriter flushes after each write, so a large download streams.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// redirectToLeader answers a follower's request: 307 to the same path on
// the leading master, 503 when no leader is known.
func redirectToLeader(w http.ResponseWriter, r *http.Request, s *master.Snapshot) {
	if s == nil || s.Leader == nil {
		opapi.WriteText(w, http.StatusServiceUnavailable, "No leader elected\n")
		return
	}
	host := s.Leader.GetHostname()
	if host == "" {
		ip := s.Leader.GetIp()
		host = net.IPv4(byte(ip), byte(ip>>8), byte(ip>>16), byte(ip>>24)).String()
	}
	w.Header().Set("Location", "//"+net.JoinHostPort(host, strconv.FormatUint(uint64(s.Leader.GetPort()), 10))+r.URL.RequestURI())
	w.WriteHeader(http.StatusTemporaryRedirect)
}
