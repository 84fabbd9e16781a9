package scheduler

import (
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/internal/authn"
	"mezzo/internal/clock"
)

// Defaults, as Mesos and mesos-go use them.
const (
	// DefaultHeartbeatInterval is used until SUBSCRIBED says otherwise
	// (Mesos: 15 s).
	DefaultHeartbeatInterval = 15 * time.Second
	// MissedHeartbeats is how many heartbeat intervals of silence make a
	// stream dead (the scheduler HTTP API docs suggest about 5).
	MissedHeartbeats = 5
	// DefaultMinBackoff and DefaultMaxBackoff bound the delay between
	// re-subscription attempts (mesos-go: 0.5 s to 13 s for redirects).
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 15 * time.Second
	// DefaultMaxRedirects is how many 307s one attempt follows (mesos-go: 9).
	DefaultMaxRedirects = 9
	// DefaultInitialRounds is how many times Subscribe tries the whole
	// master list before giving up on the first subscription.
	DefaultInitialRounds = 3
)

// Path is the scheduler API endpoint on a master.
const Path = "/api/v1/scheduler"

// Config configures a Client. Only Masters and Framework are required.
type Config struct {
	// Masters are the masters' addresses, "host:port" (or a URL base like
	// "https://host:port"). Any master will do: non-leaders redirect.
	Masters []string
	// Codec is the media type of calls and events (default Protobuf).
	Codec codec.MediaType
	// HTTPClient sends requests (default: a client without an overall
	// timeout, which would cut the event stream). Its redirect policy is
	// replaced: the client follows redirects itself to track the leader.
	// For a TLS master, give "https://host:port" Masters and a client
	// whose transport trusts the master's CA (and presents a client
	// certificate where the master requires one).
	HTTPClient *http.Client
	// TLS, when set, is the client configuration for masters serving TLS
	// (tlsconfig.Load(tlsconfig.Files{CA: "ca.pem"}).Client() builds one
	// from Mesos-style files): addresses without a scheme become https,
	// and an HTTPClient without its own Transport gets one using it.
	TLS *tls.Config
	// Credential, when set, is presented on every request (HTTP Basic),
	// for masters with --authenticate_frameworks; Framework.principal
	// defaults to its principal, as the master requires the two to match.
	Credential *authn.Credential
	// Framework is sent in SUBSCRIBE. Its id, if set, re-subscribes an
	// existing framework; otherwise the master assigns one, which the
	// client then uses for every later call and re-subscription.
	Framework *mesos.FrameworkInfo
	// Revocable subscribes with the REVOCABLE_RESOURCES capability (added
	// to Framework's, and to the info of every UpdateFramework, if
	// missing): the framework is then offered revocable resources too,
	// in offers of their own (see ByAgent and Take).
	Revocable bool
	// SuppressedRoles are sent in SUBSCRIBE (roles for which the
	// framework wants no offers yet).
	SuppressedRoles []string
	// OfferConstraints are sent in SUBSCRIBE: per role, the agents the
	// framework may be offered, by attribute (see OfferConstraintsFor).
	// UpdateFramework replaces them (and the info and suppressed roles)
	// for later re-subscriptions too.
	OfferConstraints *schedulerpb.OfferConstraints
	// Clock drives heartbeat deadlines and backoff (default clock.Real).
	Clock clock.Clock
	// MinBackoff and MaxBackoff bound the re-subscription backoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxRedirects bounds the 307s followed by one attempt.
	MaxRedirects int
	// InitialRounds is how many passes over Masters Subscribe makes before
	// it reports failure; later re-subscriptions retry until ctx ends.
	InitialRounds int
	// Logf, if set, receives connection-level diagnostics.
	Logf func(format string, args ...any)
}

// validate fills defaults and returns the normalized config.
func (c Config) validate() (Config, error) {
	if len(c.Masters) == 0 {
		return c, errors.New("scheduler: no master address given")
	}
	if c.Framework == nil {
		return c, errors.New("scheduler: Config.Framework is required")
	}
	c.Framework = proto.Clone(c.Framework).(*mesos.FrameworkInfo)
	if c.Revocable {
		c.Framework = withCapability(c.Framework, mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES)
	}
	c.SuppressedRoles = append([]string(nil), c.SuppressedRoles...)
	if c.OfferConstraints != nil {
		c.OfferConstraints = proto.CloneOf(c.OfferConstraints)
	}
	bases := make([]string, 0, len(c.Masters))
	for _, m := range c.Masters {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if c.TLS != nil && !strings.Contains(m, "://") {
			m = "https://" + strings.TrimPrefix(m, "//")
		}
		bases = append(bases, baseURL(m))
	}
	if len(bases) == 0 {
		return c, errors.New("scheduler: no master address given")
	}
	c.Masters = bases
	if c.Codec == "" {
		c.Codec = codec.Protobuf
	}
	if c.Codec != codec.Protobuf && c.Codec != codec.JSON {
		return c, errors.New("scheduler: unsupported codec " + string(c.Codec))
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.TLS != nil && c.HTTPClient.Transport == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = c.TLS
		tr.ForceAttemptHTTP2 = true
		hc := *c.HTTPClient
		hc.Transport = tr
		c.HTTPClient = &hc
	}
	if c.Credential != nil {
		hc := *c.HTTPClient
		hc.Transport = c.Credential.Transport(hc.Transport)
		c.HTTPClient = &hc
		if c.Framework.GetPrincipal() == "" {
			c.Framework.Principal = proto.String(c.Credential.Principal)
		}
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(DefaultMaxBackoff, c.MinBackoff)
	}
	if c.MaxRedirects <= 0 {
		c.MaxRedirects = DefaultMaxRedirects
	}
	if c.InitialRounds <= 0 {
		c.InitialRounds = DefaultInitialRounds
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c, nil
}

// baseURL turns "host:port" or "scheme://host:port[/...]" into
// "scheme://host:port".
func baseURL(addr string) string {
	scheme := "http"
	if i := strings.Index(addr, "://"); i >= 0 {
		scheme, addr = addr[:i], addr[i+3:]
	}
	addr = strings.TrimPrefix(addr, "//")
	if i := strings.IndexByte(addr, '/'); i >= 0 {
		addr = addr[:i]
	}
	return scheme + "://" + addr
}
