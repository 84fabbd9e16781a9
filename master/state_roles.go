package master

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/quotapb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// Weights, quota and revocation: the master's side of the allocator's
// role policies.
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

// weight is a role's weight: configured, or 1.
func (s *state) weight(role string) float64 {
	if w, ok := s.rolesState().weights[role]; ok {
		return w
	}
	return 1
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

// ---- weights ----

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

// ---- quota ----

// Largest quota values Mesos accepts: beyond them its fixed-point scalars
// overflow. mem and disk are in megabytes (1 exabyte); others 1 trillion.
const (
	maxQuotaMB    = 1024 * 1024 * 1024 * 1024
	maxQuotaOther = 1e12
)

// ValidateQuotaConfig checks one UPDATE_QUOTA config as Mesos's
// quota::validate does: the role is set and valid; every guarantee and
// limit is a finite, non-negative value within the supported maximum; and
// each guarantee is at most the limit of the same name (names without a
// limit are unlimited). field names the config in errors
// ("update_quota.quota_configs[0]").
func ValidateQuotaConfig(c *quotapb.QuotaConfig, field string) error {
	if c == nil {
		return badRequest("Invalid QuotaConfig: '%s' is null", field)
	}
	if c.Role == nil {
		return badRequest("Invalid QuotaConfig: '%s.role' must be set", field)
	}
	if err := resources.ValidateRole(c.GetRole()); err != nil {
		return badRequest("Invalid QuotaConfig: '%s.role' %q: %v", field, c.GetRole(), err)
	}
	for _, kind := range []struct {
		name string
		m    map[string]*mesos.Value_Scalar
	}{{"guarantees", c.GetGuarantees()}, {"limits", c.GetLimits()}} {
		for _, name := range sortedKeys(kind.m) {
			if err := checkQuotaValue(name, kind.m[name]); err != nil {
				return badRequest("Invalid QuotaConfig: '%s.%s[%s]': %v", field, kind.name, name, err)
			}
		}
	}
	for _, name := range sortedKeys(c.GetGuarantees()) {
		l, limited := c.GetLimits()[name]
		if g := c.GetGuarantees()[name].GetValue(); limited && g > l.GetValue() {
			return badRequest("Invalid QuotaConfig: '%s.guarantees[%s]' (%v) exceeds '%s.limits[%s]' (%v)",
				field, name, g, field, name, l.GetValue())
		}
	}
	return nil
}

func checkQuotaValue(name string, v *mesos.Value_Scalar) error {
	if name == "" {
		return fmt.Errorf("empty resource name")
	}
	if v == nil || v.Value == nil {
		return fmt.Errorf("missing value")
	}
	x := v.GetValue()
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Errorf("value %v is not a finite number", x)
	case x < 0:
		return fmt.Errorf("value %v is negative", x)
	case (name == "mem" || name == "disk") && x > maxQuotaMB:
		return fmt.Errorf("value %v is greater than 1 exabyte (%d MB), which is not supported", x, int64(maxQuotaMB))
	case name != "mem" && name != "disk" && x > maxQuotaOther:
		return fmt.Errorf("value %v is greater than 1 trillion, which is not supported", x)
	}
	return nil
}

// ValidateQuotaRequest checks a deprecated SET_QUOTA / POST /master/quota
// request as Mesos does (a valid role; a non-empty guarantee of valid,
// unreserved scalar resources without disk or revocable info, no name
// twice) and converts it to the equivalent QuotaConfig, whose guarantee
// is also its limit (legacy quota semantics).
func ValidateQuotaRequest(req *quotapb.QuotaRequest) (*quotapb.QuotaConfig, error) {
	if req == nil {
		return nil, badRequest("Failed to validate set quota request: 'quota_request' is null")
	}
	if req.Role == nil {
		return nil, badRequest("Failed to validate set quota request: 'role' must be set")
	}
	role := req.GetRole()
	if err := resources.ValidateRole(role); err != nil {
		return nil, badRequest("Failed to validate set quota request: invalid 'role' %q: %v", role, err)
	}
	if len(req.GetGuarantee()) == 0 {
		return nil, badRequest("Failed to validate set quota request: 'guarantee' is empty")
	}
	if err := resources.Validate(req.GetGuarantee()); err != nil {
		return nil, badRequest("Failed to validate set quota request: invalid 'guarantee': %v", err)
	}
	seen := map[string]bool{}
	cfg := &quotapb.QuotaConfig{Role: proto.String(role),
		Guarantees: map[string]*mesos.Value_Scalar{}, Limits: map[string]*mesos.Value_Scalar{}}
	for i, r := range req.GetGuarantee() {
		field := fmt.Sprintf("guarantee[%d] %q", i, r.GetName())
		switch {
		// A pre-refinement role other than "*" is a reservation too.
		case len(r.GetReservations()) > 0 || (r.Role != nil && r.GetRole() != "*") || r.GetReservation() != nil:
			return nil, badRequest("Failed to validate set quota request: %s must not be reserved", field)
		case r.GetDisk() != nil:
			return nil, badRequest("Failed to validate set quota request: %s must not contain DiskInfo", field)
		case r.GetRevocable() != nil:
			return nil, badRequest("Failed to validate set quota request: %s must not be revocable", field)
		case r.GetType() != mesos.Value_SCALAR:
			return nil, badRequest("Failed to validate set quota request: %s is not a scalar resource", field)
		case seen[r.GetName()]:
			return nil, badRequest("Failed to validate set quota request: %s: duplicate resource name", field)
		}
		seen[r.GetName()] = true
		cfg.Guarantees[r.GetName()] = &mesos.Value_Scalar{Value: proto.Float64(r.GetScalar().GetValue())}
		cfg.Limits[r.GetName()] = &mesos.Value_Scalar{Value: proto.Float64(r.GetScalar().GetValue())}
	}
	if err := ValidateQuotaConfig(cfg, "quota_request"); err != nil {
		return nil, badRequest("Failed to validate set quota request: %v", err)
	}
	return cfg, nil
}

// quotaOf converts a config to the allocator's form (empty: no quota).
func quotaOf(c *quotapb.QuotaConfig) allocator.Quota {
	q := allocator.Quota{}
	if len(c.GetGuarantees()) > 0 {
		q.Guarantees = map[string]float64{}
		for name, v := range c.GetGuarantees() {
			q.Guarantees[name] = v.GetValue()
		}
	}
	if len(c.GetLimits()) > 0 {
		q.Limits = map[string]float64{}
		for name, v := range c.GetLimits() {
			q.Limits[name] = v.GetValue()
		}
	}
	return q
}

func emptyQuota(c *quotapb.QuotaConfig) bool {
	return len(c.GetGuarantees()) == 0 && len(c.GetLimits()) == 0
}

// quotasWith is the configured quotas with configs applied.
func (s *state) quotasWith(configs []*quotapb.QuotaConfig) map[string]allocator.Quota {
	out := map[string]allocator.Quota{}
	for role, c := range s.rolesState().quotas {
		out[role] = quotaOf(c)
	}
	for _, c := range configs {
		if emptyQuota(c) {
			delete(out, c.GetRole())
		} else {
			out[c.GetRole()] = quotaOf(c)
		}
	}
	return out
}

// checkQuotaTree checks the hierarchy rule Mesos enforces: a role's
// guarantees contain the sum of its children's guarantees. A role without
// quota guarantees nothing, so its children may not either; checking each
// role with quota against its immediate parent covers every level.
func checkQuotaTree(quotas map[string]allocator.Quota) error {
	childSums := map[string]map[string]float64{}
	for role, q := range quotas {
		i := strings.LastIndexByte(role, '/')
		if i < 0 {
			continue
		}
		parent := role[:i]
		if childSums[parent] == nil {
			childSums[parent] = map[string]float64{}
		}
		for name, x := range q.Guarantees {
			childSums[parent][name] += x
		}
	}
	for _, parent := range sortedKeys(childSums) {
		own := quotas[parent].Guarantees
		for _, name := range sortedKeys(childSums[parent]) {
			if sum := childSums[parent][name]; sum > own[name]+1e-9 {
				return fmt.Errorf("parent role '%s' guarantees %s %v, less than the sum of its children's guarantees (%v)",
					parent, name, own[name], sum)
			}
		}
	}
	return nil
}

// topLevelGuarantees sums the guarantees of roles without an ancestor in
// quotas: children's guarantees are contained in their parents'.
func topLevelGuarantees(quotas map[string]allocator.Quota) map[string]float64 {
	out := map[string]float64{}
	for role, q := range quotas {
		if hasQuotaAncestor(role, quotas) {
			continue
		}
		for name, x := range q.Guarantees {
			out[name] += x
		}
	}
	return out
}

func hasQuotaAncestor(role string, quotas map[string]allocator.Quota) bool {
	for i := 0; i < len(role); i++ {
		if role[i] == '/' {
			if _, ok := quotas[role[:i]]; ok {
				return true
			}
		}
	}
	return false
}

// capacity is the non-revocable scalar total of every registered agent,
// connected or not (disconnection is usually transient, as Mesos reasons).
func (s *state) capacity() map[string]float64 {
	out := map[string]float64{}
	for _, a := range s.agents {
		for name, x := range a.total.NonRevocable().Quantities() {
			out[name] += x
		}
	}
	return out
}

// exceeds returns the first name (sorted) whose want exceeds have.
func exceeds(want, have map[string]float64) (string, bool) {
	for _, name := range sortedKeys(want) {
		if want[name] > have[name]+1e-9 {
			return name, true
		}
	}
	return "", false
}

func quantityString(m map[string]float64) string {
	parts := make([]string, 0, len(m))
	for _, name := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s:%v", name, m[name]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// checkQuotaUpdate validates UPDATE_QUOTA configs against the state: no
// role twice, the hierarchy rule, and, unless forced, total guarantees
// within the cluster's capacity and no new limit below the role's current
// consumption (Mesos 1.10+).
func (s *state) checkQuotaUpdate(configs []*quotapb.QuotaConfig, force bool) error {
	seen := map[string]int{}
	for i, c := range configs {
		if j, dup := seen[c.GetRole()]; dup {
			return badRequest("Invalid QuotaConfig: 'update_quota.quota_configs[%d].role' '%s' repeats quota_configs[%d]", i, c.GetRole(), j)
		}
		seen[c.GetRole()] = i
	}
	quotas := s.quotasWith(configs)
	if err := checkQuotaTree(quotas); err != nil {
		return badRequest("Invalid QuotaConfig: %v", err)
	}
	if force {
		return nil
	}
	total, capacity := topLevelGuarantees(quotas), s.capacity()
	if _, over := exceeds(total, capacity); over {
		return badRequest("Invalid QuotaConfig: total quota guarantees %s exceed cluster capacity %s (use 'force' to bypass this check)",
			quantityString(total), quantityString(capacity))
	}
	subUsed, subReserved := consumptionBase(s.roleUsage())
	for _, c := range configs {
		limits := quotaOf(c).Limits
		if len(limits) == 0 {
			continue
		}
		consumed := quotaConsumption(c.GetRole(), subUsed, subReserved)
		if name, bad := exceeds(pick(consumed, limits), limits); bad {
			return badRequest("Invalid QuotaConfig: role '%s' already consumes %s %v, more than its requested limit %v (use 'force' to bypass this check)",
				c.GetRole(), name, consumed[name], limits[name])
		}
	}
	return nil
}

// pick restricts m to the names in keys.
func pick(m map[string]float64, keys map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name := range keys {
		out[name] = m[name]
	}
	return out
}

// updateQuota applies UPDATE_QUOTA configs (each validated by
// ValidateQuotaConfig) through the registrar.
func (s *state) updateQuota(configs []*quotapb.QuotaConfig, force bool, finish func(error)) {
	s.serialRoles(func(next func()) {
		if err := s.checkQuotaUpdate(configs, force); err != nil {
			finish(err)
			next()
			return
		}
		s.writeQuota(configs, next, finish)
	})
}

// setQuota applies a deprecated SET_QUOTA (converted by
// ValidateQuotaRequest): the role must have no quota yet, and unless
// forced its guarantee must fit the cluster (409 otherwise, as Mesos).
func (s *state) setQuota(cfg *quotapb.QuotaConfig, force bool, finish func(error)) {
	s.serialRoles(func(next func()) {
		fail := func(err error) { finish(err); next() }
		if _, exists := s.rolesState().quotas[cfg.GetRole()]; exists {
			fail(badRequest("Failed to validate set quota request: role '%s' already has quota", cfg.GetRole()))
			return
		}
		quotas := s.quotasWith([]*quotapb.QuotaConfig{cfg})
		if err := checkQuotaTree(quotas); err != nil {
			fail(badRequest("Failed to validate set quota request: %v", err))
			return
		}
		if !force {
			total, capacity := topLevelGuarantees(quotas), s.capacity()
			if _, over := exceeds(total, capacity); over {
				fail(&APIError{Status: http.StatusConflict, Message: fmt.Sprintf(
					"Quota guarantees overcommit the cluster (use 'force' to bypass this check): total quota guarantees %s exceed cluster capacity %s",
					quantityString(total), quantityString(capacity))})
				return
			}
		}
		s.writeQuota([]*quotapb.QuotaConfig{cfg}, next, finish)
	})
}

// removeQuota applies REMOVE_QUOTA / DELETE /master/quota/<role>.
func (s *state) removeQuota(role string, finish func(error)) {
	s.serialRoles(func(next func()) {
		fail := func(err error) { finish(err); next() }
		if err := resources.ValidateRole(role); err != nil {
			fail(badRequest("Failed to remove quota: invalid 'role' %q: %v", role, err))
			return
		}
		if _, exists := s.rolesState().quotas[role]; !exists {
			fail(badRequest("Failed to remove quota: role '%s' has no quota set", role))
			return
		}
		cfg := &quotapb.QuotaConfig{Role: proto.String(role)}
		if err := checkQuotaTree(s.quotasWith([]*quotapb.QuotaConfig{cfg})); err != nil {
			fail(badRequest("Failed to remove quota: %v", err))
			return
		}
		s.writeQuota([]*quotapb.QuotaConfig{cfg}, next, finish)
	})
}

// writeQuota records configs through the registrar and, once durable,
// applies them: master state, allocator, then offers rescinded so that
// guarantees can be met and limits hold.
func (s *state) writeQuota(configs []*quotapb.QuotaConfig, next func(), finish func(error)) {
	cs := make([]*quotapb.QuotaConfig, len(configs))
	for i, c := range configs {
		cs[i] = proto.Clone(c).(*quotapb.QuotaConfig)
	}
	s.reg.UpdateQuota(cs, func(err error) {
		s.post(func(s *state, now time.Time) {
			defer next()
			if err != nil {
				finish(registrarFailed(err))
				return
			}
			r := s.rolesState()
			for _, c := range cs {
				if emptyQuota(c) {
					delete(r.quotas, c.GetRole())
				} else {
					r.quotas[c.GetRole()] = c
				}
				s.alloc.UpdateQuota(c.GetRole(), quotaOf(c))
			}
			s.dirty = true
			for _, c := range cs {
				if !emptyQuota(c) {
					s.rescindForQuota(c)
				}
			}
			finish(nil)
		})
	})
}

// inRoleTree reports whether role is root or one of its descendants.
func inRoleTree(role, root string) bool {
	return role == root || resources.IsStrictSubroleOf(role, root)
}

// rescindForQuota rescinds outstanding offers after a quota change. With a
// limit, every offer to the role's subtree goes (an offer must not let the
// role exceed it). With a guarantee, whole agents' offers go, active agents
// in ID order, until what was rescinded covers the guarantee and at least
// as many agents as the role has active frameworks were visited (Mesos's
// rule: coarse offers, one agent per framework).
func (s *state) rescindForQuota(c *quotapb.QuotaConfig) {
	role := c.GetRole()
	if len(c.GetLimits()) > 0 {
		for _, id := range sortedKeys(s.offers) {
			if o := s.offers[id]; o != nil && inRoleTree(o.role, role) {
				s.rescindOffer(o, true)
			}
		}
	}
	guarantee := quotaOf(c).Guarantees
	if len(guarantee) == 0 {
		return
	}
	frameworks := 0
	for _, fw := range s.frameworks {
		if !fw.active {
			continue
		}
		for _, r := range fw.roles() {
			if r == role {
				frameworks++
				break
			}
		}
	}
	rescinded := map[string]float64{}
	visited := 0
	for _, id := range s.agentIDs() {
		if _, short := exceeds(guarantee, rescinded); !short && visited >= frameworks {
			break
		}
		a := s.agents[id]
		if !a.active() || len(a.offers) == 0 {
			continue
		}
		for _, o := range sortedOffers(a.offers) {
			for name, x := range o.res.Quantities() {
				rescinded[name] += x
			}
			s.rescindOffer(o, true)
		}
		visited++
	}
}

// roleUsage returns, by role, the resources used by tasks and executors
// (allocated form) and the resources reserved to it on registered agents.
func (s *state) roleUsage() (used, reserved map[string]resources.Resources) {
	used = map[string]resources.Resources{}
	reserved = map[string]resources.Resources{}
	for _, fw := range s.frameworks {
		for _, t := range fw.tasks {
			if !t.recovered {
				role := t.role(defaultRole(fw))
				used[role] = used[role].Add(t.res)
			}
		}
		for _, es := range fw.executors {
			for _, e := range es {
				role := e.role(defaultRole(fw))
				used[role] = used[role].Add(e.res)
			}
		}
	}
	for _, a := range s.agents {
		for role, x := range a.reserved {
			reserved[role] = reserved[role].Add(x)
		}
	}
	return used, reserved
}

// consumptionBase aggregates, for every role and each of its ancestors,
// the non-revocable resources used in its subtree (allocation info
// dropped) and the resources reserved in its subtree: one pass over the
// roles (times their depth), so that quotaConsumption is cheap per role.
func consumptionBase(used, reserved map[string]resources.Resources) (subUsed, subReserved map[string]resources.Resources) {
	subtree := func(m map[string]resources.Resources, f func(resources.Resources) resources.Resources) map[string]resources.Resources {
		out := make(map[string]resources.Resources, len(m))
		for role, x := range m {
			x = f(x)
			for r := role; ; {
				out[r] = out[r].Add(x)
				i := strings.LastIndexByte(r, '/')
				if i < 0 {
					break
				}
				r = r[:i]
			}
		}
		return out
	}
	subUsed = subtree(used, func(x resources.Resources) resources.Resources { return x.NonRevocable().WithoutAllocationInfo() })
	subReserved = subtree(reserved, func(x resources.Resources) resources.Resources { return x })
	return subUsed, subReserved
}

// quotaConsumption is what counts against role's quota, as Mesos counts
// it: non-revocable resources used in the role's subtree plus the
// subtree's reservations not in use, as scalar quantities. subUsed and
// subReserved come from consumptionBase.
func quotaConsumption(role string, subUsed, subReserved map[string]resources.Resources) map[string]float64 {
	u := subUsed[role]
	out := u.Quantities()
	for name, x := range subReserved[role].Subtract(u).Quantities() {
		out[name] += x
	}
	return out
}

// quotaView is the snapshot's view of a role's quota (subUsed and
// subReserved from consumptionBase).
func (s *state) quotaView(role string, subUsed, subReserved map[string]resources.Resources) *RoleQuota {
	q := &RoleQuota{Guarantees: map[string]float64{}, Limits: map[string]float64{},
		Consumed: quotaConsumption(role, subUsed, subReserved)}
	if c := s.rolesState().quotas[role]; c != nil {
		aq := quotaOf(c)
		for k, v := range aq.Guarantees {
			q.Guarantees[k] = v
		}
		for k, v := range aq.Limits {
			q.Limits[k] = v
		}
	}
	return q
}

// ---- revocation ----

// revoke is the allocator's Revoke request on the loop: the framework
// holds r on the agent in a role above its fair share while a role below
// its guarantee waits. Its outstanding offers there (in that role) are
// rescinded first; then its tasks there, most recently launched first,
// are killed until their resources cover the rest of r. Kills go to the
// agent as KILL_TASK with the task's kill policy (its grace period
// applies); the statuses flow back as usual and are reported with
// REASON_CONTAINER_PREEMPTED.
func (s *state) revoke(fwID, agentID string, r resources.Resources, now time.Time) {
	fw, a := s.frameworks[fwID], s.agents[agentID]
	if fw == nil || a == nil {
		return
	}
	role := allocationRole(r, "")
	need := r.Quantities()
	covered := func() bool {
		for _, x := range need {
			if x > 1e-9 {
				return false
			}
		}
		return true
	}
	take := func(x resources.Resources) {
		for name, q := range x.Quantities() {
			need[name] -= q
		}
	}
	for _, o := range sortedOffers(fw.offers) {
		if o.agentID == agentID && (role == "" || o.role == role) {
			take(o.res)
			s.rescindOffer(o, true)
		}
	}
	rs := s.rolesState()
	s.prunePreempting()
	var victims []*task
	for _, t := range a.tasks[fwID] {
		if t.recovered || mesos.IsTerminal(t.proto.GetState()) || rs.preempting[fwID][t.id()] != "" {
			continue
		}
		if role != "" && t.role(defaultRole(fw)) != role {
			continue
		}
		victims = append(victims, t)
	}
	sort.Slice(victims, func(i, j int) bool {
		ti, tj := launchTime(victims[i]), launchTime(victims[j])
		if ti != tj {
			return ti > tj
		}
		return victims[i].id() > victims[j].id()
	})
	for _, t := range victims {
		if covered() {
			break
		}
		take(t.res)
		if rs.preempting[fwID] == nil {
			rs.preempting[fwID] = map[string]string{}
		}
		rs.preempting[fwID][t.id()] = role
		ev := s.agentEvent(protocol.AgentEvent_KILL_TASK)
		ev.KillTask = &protocol.AgentEvent_KillTask{FrameworkId: frameworkID(fwID), TaskId: t.proto.GetTaskId(),
			KillPolicy: t.proto.GetKillPolicy()}
		s.sendAgent(a, ev)
		s.log.Info("revocation: killing task to satisfy a quota guarantee",
			"framework", fwID, "task", t.id(), "agent", agentID, "role", role)
	}
}

// launchTime orders tasks by their first status (STAGING), seconds.
func launchTime(t *task) float64 {
	if st := t.proto.GetStatuses(); len(st) > 0 {
		return st[0].GetTimestamp()
	}
	return 0
}

// prunePreempting forgets kills whose task the master no longer tracks.
func (s *state) prunePreempting() {
	rs := s.rolesState()
	for fwID, ts := range rs.preempting {
		fw := s.frameworks[fwID]
		for id := range ts {
			if fw == nil || fw.tasks[id] == nil {
				delete(ts, id)
			}
		}
		if len(ts) == 0 {
			delete(rs.preempting, fwID)
		}
	}
}

// notePreemption marks the KILLING/KILLED updates of tasks killed by
// revocation with Mesos's preemption reason before the update is applied:
// the agent protocol's KILL_TASK carries no reason, so the master, which
// knows why it killed the task, supplies it.
func (s *state) notePreemption(call *protocol.AgentCall) {
	if s.roles == nil || len(s.roles.preempting) == 0 || call.GetType() != protocol.AgentCall_STATUS_UPDATE {
		return
	}
	su := call.GetStatusUpdate()
	st := su.GetStatus()
	fwID, taskID := su.GetFrameworkId().GetValue(), st.GetTaskId().GetValue()
	role, ok := s.roles.preempting[fwID][taskID]
	if !ok {
		return
	}
	switch st.GetState() {
	case mesos.TaskState_TASK_KILLING, mesos.TaskState_TASK_KILLED:
		st.Reason = mesos.TaskStatus_REASON_CONTAINER_PREEMPTED.Enum()
		if st.GetMessage() == "" {
			st.Message = proto.String(fmt.Sprintf("Task preempted by the master to meet the quota guarantee of a role (revocation; victim role '%s')", role))
		}
	}
	if mesos.IsTerminal(st.GetState()) {
		delete(s.roles.preempting[fwID], taskID)
		if len(s.roles.preempting[fwID]) == 0 {
			delete(s.roles.preempting, fwID)
		}
	}
}

// agentCallNotingPreemption is agentCall for the loop: it first marks
// status updates of tasks killed by revocation.
func (s *state) agentCallNotingPreemption(call *protocol.AgentCall, now time.Time) error {
	s.notePreemption(call)
	return s.agentCall(call, now)
}

// ---- Master methods ----

// callAsync runs fn on the loop; fn hands its result to finish (on the
// loop, possibly in a later event, e.g. a registrar completion). callAsync
// returns it once the snapshot reflecting the change is published.
func (m *Master) callAsync(ctx context.Context, fn func(s *state, now time.Time, finish func(error))) error {
	reply := make(chan error, 1)
	ok := m.mbox.push(func(s *state, now time.Time) {
		if !s.leading {
			reply <- s.notLeader()
			return
		}
		answered := false
		// If this leadership ends before fn finishes, the completion
		// will never run (see postFor): answer the caller then.
		s.onDepose = append(s.onDepose, func() {
			if !answered {
				answered = true
				reply <- ErrNotLeading
			}
		})
		fn(s, now, func(err error) {
			if answered {
				return
			}
			answered = true
			s.afterBatch(func() { reply <- err })
		})
	})
	if !ok {
		return ErrStopped
	}
	return m.await(ctx, reply)
}

// MarkAgentGone handles the operator's MARK_AGENT_GONE: the agent is
// recorded as gone in the registry, then removed (tasks
// TASK_GONE_BY_OPERATOR, or TASK_LOST for frameworks that are not
// partition-aware; the agent is told to shut down). It may never
// re-register under its ID. 404 *APIError for an unknown agent.
func (m *Master) MarkAgentGone(ctx context.Context, agentID string) error {
	return m.callAsync(ctx, func(s *state, now time.Time, finish func(error)) {
		s.markAgentGone(agentID, finish)
	})
}

// UpdateWeights handles UPDATE_WEIGHTS and PUT /master/weights: validated
// (400 *APIError naming the entry), recorded by the registrar, then applied
// and passed to the allocator.
func (m *Master) UpdateWeights(ctx context.Context, infos []*mesos.WeightInfo) error {
	valid, err := ValidateWeightInfos(infos)
	if err != nil {
		return err
	}
	return m.callAsync(ctx, func(s *state, now time.Time, finish func(error)) { s.updateWeights(valid, finish) })
}

// UpdateQuota handles UPDATE_QUOTA (all configs or none). Errors are
// *APIError 400 naming the config; force skips the capacity and
// consumption checks, as in Mesos.
func (m *Master) UpdateQuota(ctx context.Context, force bool, configs []*quotapb.QuotaConfig) error {
	cs := make([]*quotapb.QuotaConfig, len(configs))
	for i, c := range configs {
		if err := ValidateQuotaConfig(c, fmt.Sprintf("update_quota.quota_configs[%d]", i)); err != nil {
			return err
		}
		cs[i] = proto.Clone(c).(*quotapb.QuotaConfig)
	}
	return m.callAsync(ctx, func(s *state, now time.Time, finish func(error)) { s.updateQuota(cs, force, finish) })
}

// SetQuota handles the deprecated SET_QUOTA and POST /master/quota: 400
// for an invalid request or a role that already has quota, 409 when the
// guarantees would exceed the cluster (unless req.force).
func (m *Master) SetQuota(ctx context.Context, req *quotapb.QuotaRequest) error {
	cfg, err := ValidateQuotaRequest(req)
	if err != nil {
		return err
	}
	force := req.GetForce()
	return m.callAsync(ctx, func(s *state, now time.Time, finish func(error)) { s.setQuota(cfg, force, finish) })
}

// RemoveQuota handles the deprecated REMOVE_QUOTA and
// DELETE /master/quota/<role>: 400 if the role has no quota.
func (m *Master) RemoveQuota(ctx context.Context, role string) error {
	return m.callAsync(ctx, func(s *state, now time.Time, finish func(error)) { s.removeQuota(role, finish) })
}

// Explain asks the allocator why a framework is or is not offered
// resources; false if the allocator cannot explain (not an
// allocator.Introspector).
func (m *Master) Explain(frameworkID string) (allocator.Explanation, bool) {
	in, ok := m.alloc.(allocator.Introspector)
	if !ok {
		return allocator.Explanation{}, false
	}
	return in.Explain(frameworkID), true
}

// AllocatorMetrics returns the allocator's metrics under Mesos's key names
// (allocator/mesos/...), or nil if the allocator does not report any.
func (m *Master) AllocatorMetrics() map[string]float64 {
	if in, ok := m.alloc.(allocator.Introspector); ok {
		return in.Metrics()
	}
	return nil
}

// AllocatorRevoke is the allocator's Revoke callback (Config.Revocation):
// it kills the framework's tasks on the agent covering r, on the loop. It
// never blocks.
func (m *Master) AllocatorRevoke(frameworkID, agentID string, r resources.Resources) {
	m.post(func(s *state, now time.Time) { s.revoke(frameworkID, agentID, r, now) })
}
