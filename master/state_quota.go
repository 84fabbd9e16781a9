package master

import (
	"fmt"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/quotapb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// Quota on the loop: UPDATE_QUOTA, the deprecated SET_QUOTA and
// REMOVE_QUOTA, the checks against the cluster, offers rescinded after a
// change, and the consumption the snapshot reports. The pure validators
// and arithmetic are in quota_validate.go.

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
