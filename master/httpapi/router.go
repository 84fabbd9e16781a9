package httpapi

import (
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"mezzo/internal/authn"
	"mezzo/internal/loglevel"
	"mezzo/internal/opapi"
	"mezzo/internal/timerstat"
	"mezzo/internal/version"
	"mezzo/master"
	"mezzo/master/agentproxy"
	"mezzo/master/endpoints"
)

// DefaultMaxBodyBytes bounds request bodies of the scheduler API and the
// agent protocol (16 MiB): enough for an ACCEPT launching thousands of
// tasks, small enough that a peer cannot exhaust memory.
const DefaultMaxBodyBytes = 16 << 20

// Options configures New. The zero value is usable.
type Options struct {
	// Logger receives request-level problems; nil means the master's logger.
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// LeaderWait is how long a scheduler-API or agent-protocol request to
	// a master that knows no leader (an election is under way) waits for
	// one before the 503; it then gets the 307 to the new leader, or is
	// served if this master was elected. 0 answers at once, as Mesos.
	LeaderWait time.Duration
	// UI, when set, serves every path no API claims (the embedded web UI
	// at "/"); nil leaves those paths 404.
	UI http.Handler
	// Profiling serves Go's runtime profiles under /debug/pprof/ (CPU,
	// heap, goroutines). Off by default: they reveal internals and a CPU
	// profile costs the master while it runs.
	Profiling bool
	// Logging backs the operator calls GET_/SET_LOGGING_LEVEL; nil leaves
	// the level fixed (SET answers 501).
	Logging *loglevel.Control
	// ExtraMetrics adds metrics kept outside the master (the registrar's)
	// to the metrics endpoints; nil adds none.
	ExtraMetrics func() map[string]float64
	// ExtraTimers adds timers kept outside the master (the registrar's)
	// to the summaries at /metrics; nil adds none.
	ExtraTimers func() map[string]timerstat.Stats
	// Auth authenticates every request (auth.go): --credentials and the
	// --authenticate_* flags. Nil lets everyone in anonymously.
	Auth *authn.Guard
	// AgentTLS, when set, is how the agent proxy (master/agentproxy)
	// reaches agents: over https with this client configuration.
	AgentTLS *tls.Config
	// AgentCredential, when set, is what the agent proxy presents to
	// agents that authenticate their readers.
	AgentCredential *authn.Credential
}

// The master is the operator endpoints' Source: checked here, where the
// two are wired together, so that a change to either breaks the build.
var _ endpoints.Source = (*master.Master)(nil)

// agentPath is the endpoint of mezzo's agent protocol (agentwire.Path on
// the agents' side).
const agentPath = "/internal/v1/agent"

// server holds what every handler shares.
type server struct {
	m       *master.Master
	log     *slog.Logger
	maxBody int64
	cfg     master.Config
	wait    time.Duration
}

// New returns the master's HTTP handler: scheduler API, agent protocol,
// health, version, redirect, and master/endpoints' classic and operator
// endpoints.
func New(m *master.Master, opts Options) http.Handler {
	cfg := m.Config()
	s := &server{m: m, log: opts.Logger, maxBody: opts.MaxBodyBytes, cfg: cfg, wait: opts.LeaderWait}
	if s.log == nil {
		s.log = cfg.Logger
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/scheduler", s.scheduler)
	mux.HandleFunc("/master/api/v1/scheduler", s.scheduler)
	mux.HandleFunc("/health", health)
	mux.HandleFunc("/master/health", health)
	mux.HandleFunc("/version", s.version)
	mux.HandleFunc("/master/version", s.version)
	mux.HandleFunc("/redirect", s.redirect)
	mux.HandleFunc("/master/redirect", s.redirect)
	mux.HandleFunc("/redirect/", noEndpoint)
	mux.HandleFunc("/master/redirect/", noEndpoint)
	endpoints.Register(mux, m, endpoints.Options{
		Version:           cfg.Version,
		Logger:            s.log,
		Clock:             cfg.Clock,
		HeartbeatInterval: cfg.HeartbeatInterval,
		Logging:           opts.Logging,
		Authorizer:        cfg.Authorizer,
		ExtraMetrics: func() map[string]float64 {
			out := m.EventQueueMetrics()
			if opts.ExtraMetrics != nil {
				for k, v := range opts.ExtraMetrics() {
					out[k] = v
				}
			}
			if opts.Auth != nil && opts.Auth.Failures != nil {
				out["master/http_authentication_failures"] = float64(opts.Auth.Failures.Load())
			}
			return out
		},
		ExtraTimers: opts.ExtraTimers,
	})
	// The agents' sandboxes and statistics, read through the master
	// (agentproxy: read-only endpoints of registered agents only), so the
	// web UI needs to reach nothing but the master.
	proxy := agentproxy.New(m, agentproxy.Options{Authorizer: cfg.Authorizer, TLS: opts.AgentTLS, Credential: opts.AgentCredential})
	for _, prefix := range agentproxy.Prefixes {
		mux.Handle(prefix, proxy)
	}
	if opts.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if opts.UI != nil {
		mux.Handle("/", s.uiOnLeader(opts.UI))
	} else {
		mux.HandleFunc("/", noEndpoint)
	}
	// The agent protocol skips the mux: after a failover every agent
	// subscribes at once, and the mux's route matching was where each
	// request's new goroutine first outgrew its stack (copied, 4% of a
	// new leader's CPU at 40,000 agents).
	return opts.Auth.Handler(realmOf, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == agentPath {
			s.agent(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
}

// noEndpoint answers 404 naming the path nothing serves.
func noEndpoint(w http.ResponseWriter, r *http.Request) { opapi.NoEndpoint(w, r, "master") }

// health answers 200 with an empty body, as Mesos's /health does.
func health(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}

// version answers /version: {version, build_date, build_time, build_user, git_sha?}.
func (s *server) version(w http.ResponseWriter, r *http.Request) {
	info := version.Get()
	v := s.cfg.Version
	if v == "" {
		v = info.Version
	}
	out := map[string]any{
		"version":    v,
		"build_user": info.BuildUser,
		"build_date": info.BuildDate(),
		"build_time": info.BuildUnix(),
	}
	if info.GitSHA != "" {
		out["git_sha"] = info.GitSHA
	}
	body, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// redirect answers 307 to the leading master's base address,
// protocol-relative ("//host:port"), or 503 if no leader is known.
func (s *server) redirect(w http.ResponseWriter, r *http.Request) {
	snap := s.m.LastPublished()
	if snap == nil || snap.Leader == nil {
		http.Error(w, "No leader elected", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Location", "//"+master.LeaderHostPort(snap.Leader))
	w.WriteHeader(http.StatusTemporaryRedirect)
}

// uiOnLeader serves the web UI on the leader; a follower that knows the
// leader sends the browser there (307 to the same path), as Mesos's UI
// moves to the leading master. The UI's pages read /master/state and the
// other leader-only endpoints from their own origin, and a follower
// answers those with 307 to another origin, which a browser's fetch may
// not follow without CORS; on the leader's origin every read is local.
func (s *server) uiOnLeader(ui http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			if snap := s.m.LastPublished(); snap != nil && !snap.Elected && snap.Leader != nil {
				w.Header().Set("Location", "//"+master.LeaderHostPort(snap.Leader)+r.URL.RequestURI())
				w.WriteHeader(http.StatusTemporaryRedirect)
				return
			}
		}
		ui.ServeHTTP(w, r)
	})
}
