package endpoints

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"mezzo/api/codec"
	"mezzo/internal/version"
)

// jnum is a JSON number written as Mesos (stout) writes a double: with a
// decimal point ("2.0") and at most 15 significant digits. Mesos models its
// gauges, times and resource amounts as doubles, and some clients compare
// the text.
type jnum float64

// MarshalJSON implements json.Marshaler.
func (n jnum) MarshalJSON() ([]byte, error) {
	return codec.AppendFloat(nil, float64(n)), nil
}

// secs is a time as Mesos's endpoints show it: seconds since the epoch as a
// double; the zero time is 0.
func secs(t time.Time) jnum {
	if t.IsZero() {
		return 0
	}
	return jnum(float64(t.UnixNano()) / 1e9)
}

// encodeJSON renders v compactly without HTML escaping (Mesos does not
// escape '<', '>' or '&').
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSON answers 200 with v as JSON, or as JSONP when the query has
// jsonp=<callback>: body "<callback>(<json>);" with Content-Type
// text/javascript, as libprocess's OK(json, jsonp) does. The web UI reads
// every endpoint that way.
func (h *handlers) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		h.log.Error("endpoints: rendering JSON", "path", r.URL.Path, "err", err)
		writeText(w, http.StatusInternalServerError, "Failed to render JSON: "+err.Error())
		return
	}
	ctype := "application/json"
	if cb, ok := r.URL.Query()["jsonp"]; ok {
		name := ""
		if len(cb) > 0 {
			name = cb[0]
		}
		if !validCallback(name) {
			writeText(w, http.StatusBadRequest, "Invalid 'jsonp' callback name: expecting a JavaScript identifier path")
			return
		}
		wrapped := make([]byte, 0, len(name)+len(body)+3)
		wrapped = append(wrapped, name...)
		wrapped = append(wrapped, '(')
		wrapped = append(wrapped, body...)
		wrapped = append(wrapped, ')', ';')
		body = wrapped
		ctype = "text/javascript"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// validCallback accepts the callback names JSONP clients generate
// ("JSON_CALLBACK", "angular.callbacks._0", "jQuery1123_456",
// "cb[0]"). Mesos echoes any string; we refuse the rest so the endpoint
// cannot be used to inject script into a page.
func validCallback(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case c >= '0' && c <= '9', c == '.', c == '[', c == ']':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// writeText answers an error as Mesos does: status plus a text/plain body.
func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(code)
	w.Write([]byte(msg))
}

// requirePost answers 405 (with Allow: POST) unless r is a POST, and
// reports whether the handler may go on.
func requirePost(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", http.MethodPost)
	writeText(w, http.StatusMethodNotAllowed, "Expecting one of { 'POST' }, but received '"+r.Method+"'")
	return false
}

// leaderPostBody runs what the classic POST endpoints check first: only the
// leader answers (307 to it, 503 without one), then requirePost, then
// readBody. It returns the body, or false once it has answered.
func (h *handlers) leaderPostBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	s := h.snapshot()
	if !s.Elected {
		redirectToLeader(w, r, s)
		return nil, false
	}
	if !requirePost(w, r) {
		return nil, false
	}
	return readBody(w, r)
}

// readBody reads r's body up to maxCallBody; on failure it answers 400 and
// reports false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCallBody))
	if err != nil {
		writeText(w, http.StatusBadRequest, "Failed to read request body: "+err.Error())
		return nil, false
	}
	return body, true
}

// build describes this binary for /master/state and GET_VERSION.
type build struct {
	Version   string
	GitSHA    string
	BuildDate string  // "2006-01-02 15:04:05", as Mesos's build::DATE
	BuildTime float64 // seconds since the epoch
	BuildUser string
}

// buildInfo is a variable so tests can pin the build description that
// golden files contain.
var buildInfo = currentBuild

func currentBuild() build {
	v := version.Get()
	return build{Version: v.Version, GitSHA: v.GitSHA, BuildUser: v.BuildUser,
		BuildDate: v.BuildDate(), BuildTime: float64(v.BuildUnix())}
}
