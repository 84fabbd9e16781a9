package endpoints

import (
	"net/http"

	"mezzo/master/allocator"
)

// explanationJSON is the allocator's Explanation as /master/allocator/explain
// renders it: last_offer in seconds since the epoch (as Mesos writes times),
// omitted if the framework was never offered anything.
type explanationJSON struct {
	FrameworkID string                      `json:"framework_id"`
	Active      bool                        `json:"active"`
	LastOffer   *jnum                       `json:"last_offer,omitempty"`
	Roles       []allocator.RoleExplanation `json:"roles"`
}

// explain serves GET /master/allocator/explain?framework_id=ID, a mezzo
// extension: per role of the framework, why it is or is not being offered
// resources (FRAMEWORK_INACTIVE, SUPPRESSED, NO_ACTIVE_AGENTS,
// NOTHING_FREE_IN_ROLE, OVER_QUOTA_LIMIT, BELOW_MIN_ALLOCATABLE,
// GPU_AGENTS_ONLY, FILTERED, EXCLUDED_BY_OFFER_CONSTRAINTS or ELIGIBLE,
// and NO_AGENT_FITS when the
// framework declined the whole of every agent it may use) with agent
// counts per reason.
// 400 without framework_id, 404 for a framework neither the master nor
// the allocator knows, 501 if the allocator cannot explain.
func (h *handlers) explain(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		writeText(w, http.StatusMethodNotAllowed, "Expecting one of { 'GET' }, but received '"+r.Method+"'")
		return
	}
	id, ok := queryValue(r, "framework_id")
	if !ok || id == "" {
		writeText(w, http.StatusBadRequest, "Missing 'framework_id' query parameter")
		return
	}
	e, ok := h.src.Explain(id)
	if !ok {
		writeText(w, http.StatusNotImplemented, "The allocator of this master cannot explain its decisions")
		return
	}
	unknown := len(e.Roles) == 1 && e.Roles[0].Reason == allocator.ReasonUnknownFramework
	if (unknown || h.authz != nil) && !hasFramework(h.snapshotFor(r), id) {
		// A framework the caller may not view is one it cannot know of.
		writeText(w, http.StatusNotFound, "No framework found with specified ID")
		return
	}
	out := explanationJSON{FrameworkID: e.FrameworkID, Active: e.Active, Roles: e.Roles}
	if out.Roles == nil {
		out.Roles = []allocator.RoleExplanation{}
	}
	if !e.LastOffer.IsZero() {
		t := secs(e.LastOffer)
		out.LastOffer = &t
	}
	h.writeJSON(w, r, out)
}
