package master

import (
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Role weights: the --weights flag, UPDATE_WEIGHTS / PUT /master/weights.

// weight is a role's weight: configured, or 1.
func (s *state) weight(role string) float64 {
	if w, ok := s.rolesState().weights[role]; ok {
		return w
	}
	return 1
}

// updateWeights records validated weights through the registrar, then
// applies them and hands them to the allocator. finish gets the result on
// the loop.
func (s *state) updateWeights(infos []*mesos.WeightInfo, finish func(error)) {
	s.serialRoles(func(next func()) {
		s.reg.UpdateWeights(infos, func(err error) {
			s.post(func(s *state, now time.Time) {
				defer next()
				if err != nil {
					finish(registrarFailed(err))
					return
				}
				s.applyWeights(infos)
				finish(nil)
			})
		})
	})
}

// applyWeights sets durable weights, tells the allocator, and rescinds
// every outstanding offer if an updated role has frameworks, so the new
// weights govern the next allocation (as Mesos; the allocator is told
// first so that recovered resources are not re-offered under old weights).
func (s *state) applyWeights(infos []*mesos.WeightInfo) {
	r := s.rolesState()
	changed := make(map[string]float64, len(infos))
	for _, wi := range infos {
		r.weights[wi.GetRole()] = wi.GetWeight()
		changed[wi.GetRole()] = wi.GetWeight()
	}
	s.dirty = true
	s.alloc.UpdateWeights(changed)
	if s.anyFrameworkIn(func(role string) bool { _, ok := changed[role]; return ok }) {
		for _, id := range sortedKeys(s.offers) {
			if o := s.offers[id]; o != nil {
				s.rescindOffer(o, true)
			}
		}
	}
}

func (s *state) anyFrameworkIn(match func(role string) bool) bool {
	for _, fw := range s.frameworks {
		for _, role := range fw.roles() {
			if match(role) {
				return true
			}
		}
	}
	return false
}

// validateConfigWeights checks Config.Weights (--weights).
func validateConfigWeights(ws map[string]float64) error {
	for role, w := range ws {
		if err := resources.ValidateRole(role); err != nil {
			return fmt.Errorf("master: Config.Weights: invalid role %q: %v", role, err)
		}
		if !(w > 0) || math.IsInf(w, 0) {
			return fmt.Errorf("master: Config.Weights[%q] = %v: weights must be positive and finite", role, w)
		}
	}
	return nil
}

// ValidateWeightInfos checks an UPDATE_WEIGHTS / PUT /master/weights
// request as Mesos does (role names trimmed and valid, weights positive;
// mezzo also refuses non-finite weights) and returns the infos with their
// roles trimmed. The error is an *APIError (400) naming the entry.
func ValidateWeightInfos(infos []*mesos.WeightInfo) ([]*mesos.WeightInfo, error) {
	out := make([]*mesos.WeightInfo, 0, len(infos))
	for i, wi := range infos {
		if wi == nil {
			return nil, badRequest("Invalid weight_infos[%d]: null", i)
		}
		role := strings.TrimSpace(wi.GetRole())
		if err := resources.ValidateRole(role); err != nil {
			return nil, badRequest("Invalid weight_infos[%d].role '%s': %v", i, role, err)
		}
		if w := wi.GetWeight(); !(w > 0) || math.IsInf(w, 0) {
			return nil, badRequest("Invalid weight_infos[%d].weight for role '%s': %v: weights must be positive and finite", i, role, w)
		}
		out = append(out, &mesos.WeightInfo{Role: proto.String(role), Weight: proto.Float64(wi.GetWeight())})
	}
	return out, nil
}
