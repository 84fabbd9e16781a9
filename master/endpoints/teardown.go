package endpoints

import (
	"io"
	"net/http"
	"net/url"
)

// teardown serves the classic POST /master/teardown form
// (frameworkId=<id>, application/x-www-form-urlencoded body): 200 on
// success, 400 for a missing or unknown framework. Like the operator API it
// is answered only by the leading master.
func (h *handlers) teardown(w http.ResponseWriter, r *http.Request) {
	s := h.snapshot()
	if !s.Elected {
		redirectToLeader(w, r, s)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeText(w, http.StatusMethodNotAllowed, "Expecting one of { 'POST' }, but received '"+r.Method+"'")
		return
	}
	// Mesos decodes the body as a form whatever its Content-Type says.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCallBody))
	if err != nil {
		writeText(w, http.StatusBadRequest, "Failed to read request body: "+err.Error())
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeText(w, http.StatusBadRequest, "Unable to decode query string: "+err.Error())
		return
	}
	ids, ok := form["frameworkId"]
	if !ok || len(ids) == 0 {
		writeText(w, http.StatusBadRequest, "Missing 'frameworkId' query parameter in the request body")
		return
	}
	h.teardownFramework(w, r, ids[0])
}
