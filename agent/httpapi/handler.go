// Package httpapi is the agent's HTTP surface: the v1 executor API
// (POST /api/v1/executor), the v1 operator API (POST /api/v1: GET_HEALTH,
// the read calls and the logging level), the classic read endpoints (/state,
// /health, /version, /flags, /metrics/snapshot, /monitor/statistics, each
// also under /slave(1)/), the Prometheus exposition at /metrics and the mount point of /files/*. It owns decoding, validation, media-type negotiation, RecordIO
// streaming and the classic JSON rendering; the agent loop (package agent)
// owns the state and implements Backend. The agent builds the handler with
// New and serves it on its ip:port.
package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"mezzo/api/executorpb"
	"mezzo/internal/authorizer"
	"mezzo/internal/loglevel"
	"mezzo/internal/opapi"
	"mezzo/internal/promexp"
	"mezzo/internal/version"
)

// Backend is what the agent provides to the HTTP layer. Every method may be
// called concurrently from request goroutines.
type Backend interface {
	// Recovering reports whether the agent is still recovering its state;
	// the executor API answers 503 meanwhile.
	Recovering() bool
	// SubscribeExecutor handles a validated SUBSCRIBE call. On success the
	// backend has queued on s the events to send first (SUBSCRIBED, ...) and
	// owns s from now on: it sends events and closes s when the
	// subscription ends. An *Error selects the HTTP status of a refusal.
	SubscribeExecutor(call *executorpb.Call, s *ExecutorStream) error
	// ExecutorCall handles a validated UPDATE, MESSAGE or HEARTBEAT call;
	// nil means 202 Accepted. An *Error selects the HTTP status.
	ExecutorCall(call *executorpb.Call) error
	// State returns the agent's view for /state.
	State() (*StateView, error)
	// Metrics returns the /metrics/snapshot values.
	Metrics() (map[string]float64, error)
	// Containers lists the executors' containers with their measured
	// usage (/monitor/statistics, GET_CONTAINERS).
	Containers() ([]ContainerUsage, error)
}

// Error is a refusal with an HTTP status and a text/plain message.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an *Error.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// Handler serves the agent's endpoints.
type Handler struct {
	b       Backend
	files   Files
	log     *slog.Logger
	logging *loglevel.Control
	prom    http.Handler
	// authz and execAuth are the security hooks (auth.go); nil: open.
	authz    authorizer.Authorizer
	execAuth func(*http.Request, *executorpb.Call) error
}

// New returns the agent's HTTP handler. files serves /files/* and
// LIST_FILES / READ_FILE (nil: 404). logging backs GET_/SET_LOGGING_LEVEL
// (nil: the level reads 0 and cannot be set).
func New(b Backend, files Files, log *slog.Logger, logging *loglevel.Control) *Handler {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := &Handler{b: b, files: files, log: log, logging: logging}
	h.prom = promexp.Handler(promexp.Source{Values: b.Metrics, Samples: h.infoSamples})
	return h
}

// ServeHTTP routes by path; "/slave(1)/x" is the same endpoint as "/x"
// (the agent's libprocess id is slave(1)).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := agentPath(r.URL.Path)
	// The reads that are all or nothing, by Mesos's actions.
	var err error
	switch path {
	case "/metrics/snapshot", "/metrics", "/files/debug", "/files/debug.json":
		err = h.check(r, authorizer.GetEndpoint, authorizer.Value(strings.TrimSuffix(path, ".json")))
	case "/monitor/statistics", "/monitor/statistics.json":
		err = h.check(r, authorizer.GetEndpoint, authorizer.Value("/monitor/statistics"))
	case "/flags":
		err = h.check(r, authorizer.ViewFlags, authorizer.AnyObject)
	default:
		if strings.HasPrefix(path, "/files/") {
			err = h.checkFile(r, r.URL.Query().Get("path"))
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	switch {
	case path == "/api/v1/executor":
		h.executor(w, r)
	case path == "/state" || path == "/state.json":
		h.state(w, r)
	case path == "/health":
		w.WriteHeader(http.StatusOK)
	case path == "/version":
		h.version(w, r)
	case path == "/metrics/snapshot":
		h.metrics(w, r)
	case path == "/metrics":
		h.prom.ServeHTTP(w, r)
	case path == "/flags":
		h.flags(w, r)
	case path == "/monitor/statistics" || path == "/monitor/statistics.json":
		h.monitorStatistics(w, r)
	case path == "/api/v1":
		h.operator(w, r)
	case strings.HasPrefix(path, "/files/") && h.files != nil:
		h.files.ServeHTTP(w, r)
	default:
		opapi.NoEndpoint(w, r, "agent")
	}
}

// writeError answers err as text/plain with its status (500 unless it is
// an *Error).
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var e *Error
	if errors.As(err, &e) {
		status = e.Status
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, err.Error())
}

// writeJSON answers v as JSON, or as JSONP when the query has
// jsonp=<callback> (the web UI reads agents this way).
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, err)
		return
	}
	if cb := r.URL.Query().Get("jsonp"); cb != "" {
		if !validCallback(cb) {
			writeError(w, Errorf(http.StatusBadRequest, "invalid 'jsonp' callback name %q", cb))
			return
		}
		w.Header().Set("Content-Type", "text/javascript")
		body = append(append([]byte(cb+"("), body...), ");"...)
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.Write(body)
}

// validCallback accepts JavaScript identifiers and dotted paths (jQuery's
// "jQuery123_456", Angular's "angular.callbacks._0"), so a callback cannot
// inject script.
func validCallback(cb string) bool {
	if len(cb) > 128 {
		return false
	}
	for _, c := range cb {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '$', c == '.':
		default:
			return false
		}
	}
	return true
}

func (h *Handler) state(w http.ResponseWriter, r *http.Request) {
	v, err := h.stateFor(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, r, renderState(v))
}

func (h *Handler) metrics(w http.ResponseWriter, r *http.Request) {
	m, err := h.b.Metrics()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, r, m)
}

// flags answers /flags as Mesos's agent does: {"flags": {name: value}}.
func (h *Handler) flags(w http.ResponseWriter, r *http.Request) {
	v, err := h.b.State()
	if err != nil {
		writeError(w, err)
		return
	}
	flags := v.Flags
	if flags == nil {
		flags = map[string]string{}
	}
	writeJSON(w, r, map[string]any{"flags": flags})
}

// infoSamples is mezzo_agent_info: 1, labelled with the agent's ID (empty
// until registered), hostname and mezzo version, so that queries can join
// the agent's series (scraped by address) to the master's per-agent ones.
func (h *Handler) infoSamples() []promexp.Sample {
	v, err := h.b.State()
	if err != nil {
		return nil
	}
	return []promexp.Sample{{Name: "mezzo_agent_info", Help: "The agent's identity (always 1).", Type: prometheus.GaugeValue,
		Labels: []string{"agent_id", v.ID, "hostname", v.Hostname, "version", version.Get().Version}, Value: 1}}
}

// version answers /version as Mesos's libprocess does on every process:
// {version, build_date, build_time, build_user, git_sha?} of this binary
// (see internal/version for where each comes from).
func (h *Handler) version(w http.ResponseWriter, r *http.Request) {
	info := version.Get()
	out := map[string]any{
		"version":    info.Version,
		"build_date": info.BuildDate(),
		"build_time": info.BuildUnix(),
		"build_user": info.BuildUser,
	}
	if info.GitSHA != "" {
		out["git_sha"] = info.GitSHA
	}
	writeJSON(w, r, out)
}
