package endpoints

import (
	"context"
	"net/http"
	"time"

	"mezzo/api/masterpb"
	"mezzo/master"
)

// DrainSource is the part of Source that drains agents (embedded in
// Source): the operator's DRAIN_AGENT, DEACTIVATE_AGENT and
// REACTIVATE_AGENT, answered once the registry holds the change (see
// master.Master.DrainAgent for the errors and their statuses).
type DrainSource interface {
	// DrainAgent applies DRAIN_AGENT; maxGrace nil means the tasks' own
	// grace periods.
	DrainAgent(ctx context.Context, p master.Principal, agentID string, maxGrace *time.Duration, markGone bool) error
	// DeactivateAgent applies DEACTIVATE_AGENT.
	DeactivateAgent(ctx context.Context, p master.Principal, agentID string) error
	// ReactivateAgent applies REACTIVATE_AGENT.
	ReactivateAgent(ctx context.Context, p master.Principal, agentID string) error
}

// drainCall serves DRAIN_AGENT, DEACTIVATE_AGENT and REACTIVATE_AGENT: 200
// with an empty body, as Mesos, once the change is durable; 400 naming the
// field for a missing agent ID or a bad max_grace_period. It reports
// whether call was one of them.
func (h *handlers) drainCall(w http.ResponseWriter, r *http.Request, call *masterpb.Call) bool {
	switch call.GetType() {
	case masterpb.Call_DRAIN_AGENT:
		d := call.GetDrainAgent()
		id := d.GetAgentId().GetValue()
		if id == "" {
			writeText(w, http.StatusBadRequest, "Failed to validate master::Call: Expecting 'drain_agent.agent_id' to be present")
			return true
		}
		var grace *time.Duration
		if mg := d.GetMaxGracePeriod(); mg != nil {
			if err := mg.CheckValid(); err != nil {
				writeText(w, http.StatusBadRequest, "Failed to validate master::Call: 'drain_agent.max_grace_period' is invalid: "+err.Error())
				return true
			}
			g := mg.AsDuration()
			if g < 0 {
				writeText(w, http.StatusBadRequest, "Failed to validate master::Call: 'drain_agent.max_grace_period' must be non-negative, got "+g.String())
				return true
			}
			grace = &g
		}
		h.writeEmptyOr(w, h.src.DrainAgent(r.Context(), principal(r), id, grace, d.GetMarkGone()))
	case masterpb.Call_DEACTIVATE_AGENT:
		id := call.GetDeactivateAgent().GetAgentId().GetValue()
		if id == "" {
			writeText(w, http.StatusBadRequest, "Failed to validate master::Call: Expecting 'deactivate_agent.agent_id' to be present")
			return true
		}
		h.writeEmptyOr(w, h.src.DeactivateAgent(r.Context(), principal(r), id))
	case masterpb.Call_REACTIVATE_AGENT:
		id := call.GetReactivateAgent().GetAgentId().GetValue()
		if id == "" {
			writeText(w, http.StatusBadRequest, "Failed to validate master::Call: Expecting 'reactivate_agent.agent_id' to be present")
			return true
		}
		h.writeEmptyOr(w, h.src.ReactivateAgent(r.Context(), principal(r), id))
	default:
		return false
	}
	return true
}
