package endpoints

import (
	"net/http"
	"net/url"
)

// teardown serves the classic POST /master/teardown form
// (frameworkId=<id>, application/x-www-form-urlencoded body): 200 on
// success, 400 for a missing or unknown framework. Like the operator API it
// is answered only by the leading master.
func (h *handlers) teardown(w http.ResponseWriter, r *http.Request) {
	// Mesos decodes the body as a form whatever its Content-Type says.
	body, ok := h.leaderPostBody(w, r)
	if !ok {
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

// killTask serves mezzo's POST /master/kill-task (form frameworkId=<id>,
// taskId=<id>): the operator kills one task as its framework's KILL would.
// Mesos has no such endpoint; its shape follows /master/teardown. 200 once
// the agent was told, 400 for a missing field, 404 for an unknown
// framework or task, 409 for one that already ended.
func (h *handlers) killTask(w http.ResponseWriter, r *http.Request) {
	if !requirePost(w, r) {
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeText(w, http.StatusBadRequest, "Unable to decode query string: "+err.Error())
		return
	}
	for _, f := range []string{"frameworkId", "taskId"} {
		if form.Get(f) == "" {
			writeText(w, http.StatusBadRequest, "Missing '"+f+"' parameter in the request body")
			return
		}
	}
	if err := h.src.KillTask(r.Context(), principal(r), form.Get("frameworkId"), form.Get("taskId")); err != nil {
		writeText(w, errorStatus(err), "Failed to kill task: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
}
