package scheduler

import (
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

// Builders for the filters a framework hands the master so that it is
// not offered what it would refuse anyway (Mesos 1.11's offer
// constraints and FrameworkInfo.offer_filters; the paper's §3.5 "only
// offer nodes from list L" and "only offer nodes with at least R free").
// The master's allocator applies them before it makes offers.

// OfferConstraintsFor returns offer constraints for one role: an agent may
// be offered to the role if every constraint of at least one group holds
// on it. Add more roles with AddRole.
func OfferConstraintsFor(role string, groups ...[]*schedulerpb.AttributeConstraint) *schedulerpb.OfferConstraints {
	return AddRole(&schedulerpb.OfferConstraints{}, role, groups...)
}

// AddRole sets role's groups in c and returns c.
func AddRole(c *schedulerpb.OfferConstraints, role string, groups ...[]*schedulerpb.AttributeConstraint) *schedulerpb.OfferConstraints {
	rc := &schedulerpb.OfferConstraints_RoleConstraints{}
	for _, g := range groups {
		rc.Groups = append(rc.Groups, &schedulerpb.OfferConstraints_RoleConstraints_Group{AttributeConstraints: g})
	}
	if c.RoleConstraints == nil {
		c.RoleConstraints = map[string]*schedulerpb.OfferConstraints_RoleConstraints{}
	}
	c.RoleConstraints[role] = rc
	return c
}

// HostnameIn is the groups that admit exactly the agents with these
// hostnames (the paper's "only offer nodes from list L").
func HostnameIn(hostnames ...string) [][]*schedulerpb.AttributeConstraint {
	out := make([][]*schedulerpb.AttributeConstraint, 0, len(hostnames))
	for _, h := range hostnames {
		out = append(out, []*schedulerpb.AttributeConstraint{TextEquals(Hostname(), h)})
	}
	return out
}

// Selectors: an agent attribute by name, or a pseudoattribute.

// Attribute selects the agent attribute name.
func Attribute(name string) *schedulerpb.AttributeConstraint_Selector {
	return &schedulerpb.AttributeConstraint_Selector{
		Selector: &schedulerpb.AttributeConstraint_Selector_AttributeName{AttributeName: name}}
}

// Hostname, Region and Zone select the agent's hostname and its fault
// domain's region and zone.
func Hostname() *schedulerpb.AttributeConstraint_Selector {
	return pseudo(schedulerpb.AttributeConstraint_Selector_HOSTNAME)
}

// Region selects the agent's fault domain region.
func Region() *schedulerpb.AttributeConstraint_Selector {
	return pseudo(schedulerpb.AttributeConstraint_Selector_REGION)
}

// Zone selects the agent's fault domain zone.
func Zone() *schedulerpb.AttributeConstraint_Selector {
	return pseudo(schedulerpb.AttributeConstraint_Selector_ZONE)
}

func pseudo(t schedulerpb.AttributeConstraint_Selector_PseudoattributeType) *schedulerpb.AttributeConstraint_Selector {
	return &schedulerpb.AttributeConstraint_Selector{
		Selector: &schedulerpb.AttributeConstraint_Selector_PseudoattributeType_{PseudoattributeType: t}}
}

// Predicates. As in Mesos, the text predicates hold on an attribute that
// is present but not TEXT, and regexes must match the whole value.

// Exists holds when the selected (pseudo)attribute exists.
func Exists(s *schedulerpb.AttributeConstraint_Selector) *schedulerpb.AttributeConstraint {
	return constraint(s, &schedulerpb.AttributeConstraint_Predicate{Predicate: &schedulerpb.AttributeConstraint_Predicate_Exists_{
		Exists: &schedulerpb.AttributeConstraint_Predicate_Exists{}}})
}

// NotExists holds when it does not.
func NotExists(s *schedulerpb.AttributeConstraint_Selector) *schedulerpb.AttributeConstraint {
	return constraint(s, &schedulerpb.AttributeConstraint_Predicate{Predicate: &schedulerpb.AttributeConstraint_Predicate_NotExists_{
		NotExists: &schedulerpb.AttributeConstraint_Predicate_NotExists{}}})
}

// TextEquals holds when it exists with value v.
func TextEquals(s *schedulerpb.AttributeConstraint_Selector, v string) *schedulerpb.AttributeConstraint {
	return constraint(s, &schedulerpb.AttributeConstraint_Predicate{Predicate: &schedulerpb.AttributeConstraint_Predicate_TextEquals_{
		TextEquals: &schedulerpb.AttributeConstraint_Predicate_TextEquals{Value: proto.String(v)}}})
}

// TextNotEquals holds when it does not exist or has another value.
func TextNotEquals(s *schedulerpb.AttributeConstraint_Selector, v string) *schedulerpb.AttributeConstraint {
	return constraint(s, &schedulerpb.AttributeConstraint_Predicate{Predicate: &schedulerpb.AttributeConstraint_Predicate_TextNotEquals_{
		TextNotEquals: &schedulerpb.AttributeConstraint_Predicate_TextNotEquals{Value: proto.String(v)}}})
}

// TextMatches holds when it exists and the regex (RE2 syntax) matches its
// whole value.
func TextMatches(s *schedulerpb.AttributeConstraint_Selector, regex string) *schedulerpb.AttributeConstraint {
	return constraint(s, &schedulerpb.AttributeConstraint_Predicate{Predicate: &schedulerpb.AttributeConstraint_Predicate_TextMatches_{
		TextMatches: &schedulerpb.AttributeConstraint_Predicate_TextMatches{Regex: proto.String(regex)}}})
}

// TextNotMatches holds when it does not exist or the regex does not match.
func TextNotMatches(s *schedulerpb.AttributeConstraint_Selector, regex string) *schedulerpb.AttributeConstraint {
	return constraint(s, &schedulerpb.AttributeConstraint_Predicate{Predicate: &schedulerpb.AttributeConstraint_Predicate_TextNotMatches_{
		TextNotMatches: &schedulerpb.AttributeConstraint_Predicate_TextNotMatches{Regex: proto.String(regex)}}})
}

func constraint(s *schedulerpb.AttributeConstraint_Selector, p *schedulerpb.AttributeConstraint_Predicate) *schedulerpb.AttributeConstraint {
	return &schedulerpb.AttributeConstraint{Selector: s, Predicate: p}
}

// SetMinAllocatable sets info's offer filter for role: the framework is
// offered an agent's resources for the role only if they hold at least
// one of these quantity sets (e.g. {"cpus": 4, "mem": 8192}), in place of
// the master's --min_allocatable_resources. No sets at all: any non-empty
// resources.
func SetMinAllocatable(info *mesos.FrameworkInfo, role string, sets ...map[string]float64) {
	mar := &mesos.OfferFilters_MinAllocatableResources{Quantities: []*mesos.OfferFilters_ResourceQuantities{}}
	for _, set := range sets {
		rq := &mesos.OfferFilters_ResourceQuantities{Quantities: map[string]*mesos.Value_Scalar{}}
		for name, v := range set {
			rq.Quantities[name] = &mesos.Value_Scalar{Value: proto.Float64(v)}
		}
		mar.Quantities = append(mar.Quantities, rq)
	}
	if info.OfferFilters == nil {
		info.OfferFilters = map[string]*mesos.OfferFilters{}
	}
	info.OfferFilters[role] = &mesos.OfferFilters{MinAllocatableResources: mar}
}

// Long and short tasks (tech report §3.3.2, a mezzo master started with
// --long_task_fraction): each agent bounds the resources long tasks may
// use; an offer carries its long part as attributes named
// LongTaskAttributePrefix + resource; a task declares itself with the
// label TaskLengthLabel ("long" or "short"), or is short if it has
// max_completion_time and long otherwise.
const (
	LongTaskAttributePrefix = "mezzo_long_task_"
	TaskLengthLabel         = "mezzo.task_length"
)

// LongTaskPart returns what of the offer long tasks may use, by resource
// name, and whether the master bounds long tasks at all.
func LongTaskPart(o *mesos.Offer) (map[string]float64, bool) {
	var out map[string]float64
	for _, a := range o.GetAttributes() {
		if name, ok := strings.CutPrefix(a.GetName(), LongTaskAttributePrefix); ok && a.GetType() == mesos.Value_SCALAR {
			if out == nil {
				out = map[string]float64{}
			}
			out[name] = a.GetScalar().GetValue()
		}
	}
	return out, out != nil
}

// DeclareTaskLength labels the task "long" or "short" (replacing an earlier
// declaration) and returns it.
func DeclareTaskLength(t *mesos.TaskInfo, long bool) *mesos.TaskInfo {
	v := "short"
	if long {
		v = "long"
	}
	if t.Labels == nil {
		t.Labels = &mesos.Labels{}
	}
	kept := t.Labels.Labels[:0]
	for _, l := range t.Labels.Labels {
		if l.GetKey() != TaskLengthLabel {
			kept = append(kept, l)
		}
	}
	t.Labels.Labels = append(kept, &mesos.Label{Key: proto.String(TaskLengthLabel), Value: proto.String(v)})
	return t
}
