package authn

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
)

// Realm is an HTTP authentication realm (RFC 7235), the name Mesos gives a
// group of endpoints that share one --authenticate_* flag.
type Realm string

// Mesos's realm names, and mezzo's for its agent protocol (Mesos agents
// authenticate over their own SASL exchange instead).
const (
	MasterReadonly  Realm = "mesos-master-readonly"
	MasterReadwrite Realm = "mesos-master-readwrite"
	MasterScheduler Realm = "mesos-master-scheduler"
	MasterAgents    Realm = "mezzo-master-agent"
	AgentReadonly   Realm = "mesos-agent-readonly"
	AgentReadwrite  Realm = "mesos-agent-readwrite"
	AgentExecutor   Realm = "mesos-agent-executor"
)

// Guard decides who a request is. The zero value lets every request
// through anonymously.
type Guard struct {
	// Authenticator checks presented credentials; nil when the process was
	// given no --credentials (presented credentials are then ignored, as
	// nothing could check them).
	Authenticator *Authenticator
	// Required lists the realms whose requests must authenticate (the
	// --authenticate_* flags that are on).
	Required map[Realm]bool
	// Log receives one line per refusal (never the secret); nil: none.
	Log *slog.Logger
	// Failures counts refusals (the metric <process>/http_authentication_failures).
	Failures *atomic.Int64
}

// Check returns the principal of r in realm ("" for an anonymous caller)
// and true; or answers 401 with WWW-Authenticate naming the realm, logs and
// counts the refusal, and returns false, when the realm is required and r
// carries no credentials, or when r presents credentials that do not
// authenticate (wrong ones are refused even where anonymity is allowed:
// a caller who tries to be someone and fails is not let in as nobody).
// Malformed headers are 401s too.
func (g *Guard) Check(w http.ResponseWriter, r *http.Request, realm Realm) (string, bool) {
	values := r.Header.Values("Authorization")
	if g.Authenticator == nil {
		if g.Required[realm] {
			// Unreachable when the process validates its flags (an
			// --authenticate_* flag needs --credentials), but fail closed.
			g.refuse(w, r, realm, "", errors.New("authentication is required but no credentials are configured"))
			return "", false
		}
		return "", true
	}
	principal, err := g.Authenticator.Check(values)
	switch {
	case err == nil:
		return principal, true
	case errors.Is(err, ErrNoCredentials) && !g.Required[realm]:
		return "", true
	}
	tried := ""
	if p, _, perr := ParseBasic(values); perr == nil {
		tried = p
	}
	g.refuse(w, r, realm, tried, err)
	return "", false
}

func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, realm Realm, tried string, err error) {
	if g.Failures != nil {
		g.Failures.Add(1)
	}
	if g.Log != nil {
		g.Log.Warn("HTTP authentication failed", "realm", string(realm), "path", r.URL.Path,
			"remote", r.RemoteAddr, "principal", tried, "reason", err.Error())
	}
	Challenge(w, realm, err)
}

// Handler authenticates every request to next by the realm realmOf gives
// its path (false: the path needs none): a refused request gets Check's
// 401 and reaches nothing; an admitted one carries its principal in its
// context (PrincipalOf). A nil g returns next.
func (g *Guard) Handler(realmOf func(path string) (Realm, bool), next http.Handler) http.Handler {
	if g == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		realm, needed := realmOf(r.URL.Path)
		if !needed {
			next.ServeHTTP(w, r)
			return
		}
		p, ok := g.Check(w, r, realm)
		if !ok {
			return
		}
		if p != "" {
			r = r.WithContext(WithPrincipal(r.Context(), p))
		}
		next.ServeHTTP(w, r)
	})
}

// Challenge answers 401 Unauthorized with the Basic challenge for realm
// and a text body saying why.
func Challenge(w http.ResponseWriter, realm Realm, why error) {
	w.Header().Set("WWW-Authenticate", `Basic realm="`+string(realm)+`"`)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	msg := "Authentication required"
	if why != nil && !errors.Is(why, ErrNoCredentials) {
		msg = "Authentication failed: " + why.Error()
	}
	w.Write([]byte(msg + " (realm " + string(realm) + ")\n"))
}

type principalKey struct{}

// WithPrincipal returns ctx carrying the authenticated principal ("" for
// an anonymous caller).
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// PrincipalOf returns the principal ctx carries ("" if none).
func PrincipalOf(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// Transport returns a RoundTripper that presents c on every request
// through base (http.DefaultTransport when nil). A nil c returns base.
// Redirects followed by an http.Client re-run the RoundTripper, so the
// credential reaches the leading master too.
func (c *Credential) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if c == nil {
		return base
	}
	return &basicTransport{base: base, header: c.BasicHeader()}
}

type basicTransport struct {
	base   http.RoundTripper
	header string
}

func (t *basicTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" {
		return t.base.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", t.header)
	return t.base.RoundTrip(r2)
}
