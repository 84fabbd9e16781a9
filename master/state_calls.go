package master

import (
	"net/http"
	"slices"
	"time"

	"mezzo/api/allocatorpb"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// schedulerCall applies a validated non-SUBSCRIBE call after the checks
// Mesos makes, in its order: the framework must exist (400), be subscribed
// (403), and the call must carry the current subscription's
// Mesos-Stream-Id (400).
func (s *state) schedulerCall(p Principal, call *schedulerpb.Call, streamID string, now time.Time) error {
	fw := s.frameworks[call.GetFrameworkId().GetValue()]
	s.countSchedulerCallAt(fw, call, streamID)
	if fw == nil {
		return badRequest("Framework cannot be found")
	}
	if p.Name != "" && p.Name != fw.info.GetPrincipal() {
		// An authenticated caller acts only for its own frameworks.
		return badRequest("Authenticated principal '%s' does not match principal '%s' used by framework %s", p.Name, fw.info.GetPrincipal(), fw.id)
	}
	if !fw.connected || fw.stream == nil {
		return forbidden("Framework is not subscribed")
	}
	if streamID == "" {
		return badRequest("All non-subscribe calls should include the 'Mesos-Stream-Id' header")
	}
	if streamID != fw.stream.id {
		return badRequest("The stream ID '%s' included in this request didn't match the stream ID currently associated with framework ID %s",
			streamID, fw.id)
	}
	switch call.GetType() {
	case schedulerpb.Call_TEARDOWN:
		s.removeFramework(fw, now)
	case schedulerpb.Call_ACCEPT:
		s.accept(fw, call.GetAccept(), now)
	case schedulerpb.Call_DECLINE:
		s.decline(fw, call.GetDecline().GetOfferIds(), call.GetDecline().GetFilters())
	case schedulerpb.Call_REVIVE:
		roles := call.GetRevive().GetRoles()
		s.setSuppressed(fw, roles, false)
		s.alloc.ReviveOffers(fw.id, roles)
	case schedulerpb.Call_SUPPRESS:
		roles := call.GetSuppress().GetRoles()
		s.setSuppressed(fw, roles, true)
		s.alloc.SuppressOffers(fw.id, roles)
	case schedulerpb.Call_KILL:
		s.kill(fw, call.GetKill(), now)
	case schedulerpb.Call_SHUTDOWN:
		s.shutdownExecutor(fw, call.GetShutdown())
	case schedulerpb.Call_ACKNOWLEDGE:
		s.acknowledge(fw, call.GetAcknowledge())
	case schedulerpb.Call_RECONCILE:
		s.reconcile(fw, call.GetReconcile().GetTasks(), now)
	case schedulerpb.Call_MESSAGE:
		s.message(fw, call.GetMessage())
	case schedulerpb.Call_REQUEST:
		return s.request(fw, call.GetRequest().GetRequests())
	case schedulerpb.Call_UPDATE_FRAMEWORK:
		return s.updateFramework(fw, call.GetUpdateFramework())
	case schedulerpb.Call_ACKNOWLEDGE_OPERATION_STATUS:
		s.acknowledgeOperation(fw, call.GetAcknowledgeOperationStatus())
	case schedulerpb.Call_RECONCILE_OPERATIONS:
		s.reconcileOperations(fw, call.GetReconcileOperations().GetOperations())
	case schedulerpb.Call_ACCEPT_INVERSE_OFFERS:
		a := call.GetAcceptInverseOffers()
		s.answerInverseOffers(fw, a.GetInverseOfferIds(), a.GetFilters(), allocatorpb.InverseOfferStatus_ACCEPT, now)
	case schedulerpb.Call_DECLINE_INVERSE_OFFERS:
		d := call.GetDeclineInverseOffers()
		s.answerInverseOffers(fw, d.GetInverseOfferIds(), d.GetFilters(), allocatorpb.InverseOfferStatus_DECLINE, now)
	default:
		return &APIError{Status: http.StatusNotImplemented, Message: "Received '" + call.GetType().String() + "' call"}
	}
	return nil
}

// request hands a REQUEST to the allocator. Offers do not change (as with
// Mesos's allocator); what it asks for lets explain say at once when no
// agent could ever hold it. A request's role is its resources' allocation
// role, else each of the framework's roles.
func (s *state) request(fw *framework, reqs []*mesos.Request) error {
	out := make([]allocator.Request, 0, len(reqs))
	for i, rq := range reqs {
		r, err := resources.FromProto(rq.GetResources())
		if err != nil {
			return badRequest("Invalid 'request.requests[%d].resources': %v", i, err)
		}
		roles := fw.roles()
		for _, res := range rq.GetResources() {
			role := res.GetAllocationInfo().GetRole()
			switch {
			case role == "" || (len(roles) == 1 && roles[0] == role):
			case !slices.Contains(fw.roles(), role):
				return badRequest("Invalid 'request.requests[%d].resources': role '%s' is not one of the framework's roles", i, role)
			case len(roles) == 1:
				return badRequest("Invalid 'request.requests[%d].resources': resources of roles '%s' and '%s' in one request", i, roles[0], role)
			default:
				roles = []string{role}
			}
		}
		for _, role := range roles {
			out = append(out, allocator.Request{Role: role, AgentID: rq.GetAgentId().GetValue(), Resources: r})
		}
	}
	s.alloc.RequestResources(fw.id, out)
	return nil
}

// setSuppressed records suppressed roles (all of the framework's roles if
// roles is empty) so that snapshots and re-subscriptions reflect them.
func (s *state) setSuppressed(fw *framework, roles []string, suppressed bool) {
	if len(roles) == 0 {
		roles = fw.roles()
	}
	for _, r := range roles {
		if suppressed {
			fw.suppressed[r] = true
		} else {
			delete(fw.suppressed, r)
		}
	}
	s.dirty = true
}
