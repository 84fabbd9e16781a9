package endpoints

import (
	"log/slog"
	"net/http"
	"time"

	"mezzo/internal/authorizer"
	"mezzo/internal/clock"
	"mezzo/internal/loglevel"
	"mezzo/internal/timerstat"
	"mezzo/master"
)

// DefaultHeartbeatInterval is how often an operator SUBSCRIBE stream gets a
// HEARTBEAT event; Mesos uses 15 seconds (src/master/master.hpp).
const DefaultHeartbeatInterval = 15 * time.Second

// Options configures Register. The zero value is usable.
type Options struct {
	// Version is reported by /master/state and GET_VERSION; empty means
	// mezzo's build version (internal/version).
	Version string
	// Logger receives request-level problems; nil means slog.Default().
	Logger *slog.Logger
	// Clock drives uptime and SUBSCRIBE heartbeats; nil means the wall clock.
	Clock clock.Clock
	// HeartbeatInterval overrides DefaultHeartbeatInterval (tests).
	HeartbeatInterval time.Duration
	// Logging backs GET_/SET_LOGGING_LEVEL; nil leaves the level fixed.
	Logging *loglevel.Control
	// ExtraMetrics adds metrics kept outside the master's loop to
	// /metrics/snapshot, /metrics and GET_METRICS (the registrar's
	// registrar/*); nil adds none.
	ExtraMetrics func() map[string]float64
	// ExtraTimers adds timers kept outside the master's loop (the
	// registrar's) to the summaries at /metrics; nil adds none.
	ExtraTimers func() map[string]timerstat.Stats
	// Authorizer decides what each caller may read (authz.go); nil:
	// everything.
	Authorizer authorizer.Authorizer
}

// Register installs every endpoint on mux. Routes exist both with and
// without the "/master" prefix, as in Mesos where the master's process id is
// "master" and unknown first path segments are delegated to it
// (/master/state == /state). /metrics/snapshot and /metrics belong to no
// process and have no prefixed form.
func Register(mux *http.ServeMux, src Source, opts Options) {
	h := newHandlers(src, opts)
	both := func(path string, f http.HandlerFunc) {
		mux.HandleFunc("/master"+path, f)
		mux.HandleFunc(path, f)
	}
	// Reads of the cluster's state are the leader's: a follower's own view
	// is empty (frameworks and tasks are soft state held by the leader), so
	// it answers 307 to the leader as Mesos's master does (or 503 without
	// one). /flags and the metrics are this process's own and stay local.
	both("/state", h.leaderOnly(h.state))
	both("/state-summary", h.leaderOnly(h.stateSummary))
	both("/frameworks", h.leaderOnly(h.frameworks))
	both("/slaves", h.leaderOnly(h.slaves))
	both("/tasks", h.leaderOnly(h.tasks))
	both("/roles", h.leaderOnly(h.roles))
	both("/flags", h.flags)
	both("/teardown", h.teardown)
	both("/kill-task", h.leaderOnly(h.killTask))
	both("/reserve", h.classic(classicReserve))
	both("/unreserve", h.classic(classicUnreserve))
	both("/create-volumes", h.classic(classicCreateVolumes))
	both("/destroy-volumes", h.classic(classicDestroyVolumes))
	both("/api/v1", h.operator)
	both("/weights", h.weights)
	both("/quota", h.quota)
	both("/quota/", h.quota)
	both("/allocator/explain", h.leaderOnly(h.explain))
	both("/maintenance/schedule", h.maintenanceSchedule)
	both("/maintenance/status", h.maintenanceStatus)
	both("/machine/down", h.machines(false))
	both("/machine/up", h.machines(true))
	mux.Handle("/metrics/snapshot", h.getEndpoint("/metrics/snapshot", http.HandlerFunc(h.metricsSnapshot)))
	mux.Handle("/metrics", h.getEndpoint("/metrics", h.prometheus()))
}

// getEndpoint guards next with get_endpoints on path, as Mesos guards the
// endpoints that reveal the process's internals (its metrics).
func (h *handlers) getEndpoint(path string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.allow(w, r, authorizer.GetEndpoint, authorizer.Value(path)) {
			next.ServeHTTP(w, r)
		}
	})
}

// handlers holds what every endpoint shares.
type handlers struct {
	src       Source
	version   string
	log       *slog.Logger
	clock     clock.Clock
	heartbeat time.Duration
	logging   *loglevel.Control
	extra     func() map[string]float64
	timers    func() map[string]timerstat.Stats
	authz     authorizer.Authorizer
}

func newHandlers(src Source, opts Options) *handlers {
	h := &handlers{
		src:       src,
		version:   opts.Version,
		log:       opts.Logger,
		clock:     opts.Clock,
		heartbeat: opts.HeartbeatInterval,
		logging:   opts.Logging,
		extra:     opts.ExtraMetrics,
		timers:    opts.ExtraTimers,
		authz:     opts.Authorizer,
	}
	if h.version == "" {
		h.version = buildInfo().Version
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.clock == nil {
		h.clock = clock.Real
	}
	if h.heartbeat <= 0 {
		h.heartbeat = DefaultHeartbeatInterval
	}
	return h
}

// snapshot returns the current snapshot, or an empty one so that a master
// that has not yet published still renders well-formed documents.
func (h *handlers) snapshot() *master.Snapshot {
	if s := h.src.Snapshot(); s != nil {
		return s
	}
	return &master.Snapshot{}
}

// leaderOnly wraps an endpoint that only the leading master can answer:
// on a follower it answers 307 to the leader (503 when none is known).
func (h *handlers) leaderOnly(f http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s := h.snapshot(); !s.Elected {
			redirectToLeader(w, r, s)
			return
		}
		f(w, r)
	}
}
