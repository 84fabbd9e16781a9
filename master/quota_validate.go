package master

import (
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// Quota's pure parts: request validators (as Mesos's quota::validate),
// the hierarchy rule, and consumption arithmetic. None touches the state.

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

// pick restricts m to the names in keys.
func pick(m map[string]float64, keys map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name := range keys {
		out[name] = m[name]
	}
	return out
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
