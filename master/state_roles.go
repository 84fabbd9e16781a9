package master

import (
	"net/http"

	"mezzo/api/quotapb"
)

// Roles: the loop-owned state shared by weights (state_weights.go), quota
// (state_quota.go, quota_validate.go) and revocation (state_revocation.go),
// the master's side of the allocator's role policies.
//
// Every weight or quota change is validated against the state on the loop,
// written through the Registrar, and applied (master state, then the
// allocator, then offers rescinded so that the new policy can act) only in
// the registrar's completion, as Mesos's weights and quota handlers do.
// Changes are serialized: one registrar write for weights or quota is in
// flight at a time and later requests wait for it, so each is validated
// against every change accepted before it (two concurrent quota requests
// cannot both pass a check that only one of them may pass).

// roleState is the loop-owned part of the state for roles.
type roleState struct {
	// weights are the configured (non-default) role weights.
	weights map[string]float64
	// quotas are the configured quotas by role (never empty configs).
	quotas map[string]*quotapb.QuotaConfig

	busy  bool     // a weights/quota registrar write is in flight
	queue []func() // changes waiting for it, in arrival order

	// preempting maps framework ID → task ID → the role whose guarantee
	// the kill serves, for tasks killed by revocation whose terminal
	// status update has not arrived yet.
	preempting map[string]map[string]string
}

// rolesState returns the roles state, built on first use from the
// configuration's initial weights.
func (s *state) rolesState() *roleState {
	if s.roles == nil {
		s.roles = &roleState{
			weights:    map[string]float64{},
			quotas:     map[string]*quotapb.QuotaConfig{},
			preempting: map[string]map[string]string{},
		}
		for role, w := range s.cfg.Weights {
			s.roles.weights[role] = w
		}
	}
	return s.roles
}

// serialRoles runs op now, or once the weights/quota change in flight has
// completed. op must call next exactly once, on the loop, when it is done.
func (s *state) serialRoles(op func(next func())) {
	r := s.rolesState()
	if r.busy {
		r.queue = append(r.queue, func() { s.serialRoles(op) })
		return
	}
	r.busy = true
	op(func() {
		r.busy = false
		if len(r.queue) > 0 {
			f := r.queue[0]
			r.queue = r.queue[1:]
			f()
		}
	})
}

// registrarFailed is the answer when the registry refused or failed a write.
func registrarFailed(err error) *APIError {
	return &APIError{Status: http.StatusServiceUnavailable, Message: "Failed to update the registry: " + err.Error()}
}
