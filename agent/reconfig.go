package agent

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"mezzo/api/mesos"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// Reconfiguration policies (--reconfiguration_policy), as Mesos's: what an
// agent restarted with different flags may change about itself and still
// recover under its old identity.
const (
	// PolicyEqual: hostname, port, resources and attributes must all be
	// as checkpointed (the default).
	PolicyEqual = "equal"
	// PolicyAdditive: resources and attributes may only be added (scalars
	// may grow, ranges and sets may widen); hostname and port must stay.
	PolicyAdditive = "additive"
)

// checkReconfiguration compares the agent as configured now with the
// AgentInfo checkpointed by the previous run; the error names the first
// difference the policy does not allow and how to proceed.
func checkReconfiguration(policy string, prev, cur *mesos.AgentInfo) error {
	if err := compatible(policy, prev, cur); err != nil {
		return fmt.Errorf("agent config: the agent's checkpointed info is incompatible with its flags under --reconfiguration_policy=%s: %w "+
			"(restart with the previous flags, or remove <work_dir>/meta/slaves/latest to register as a new agent)", policy, err)
	}
	return nil
}

func compatible(policy string, prev, cur *mesos.AgentInfo) error {
	if prev.GetHostname() != cur.GetHostname() {
		return fmt.Errorf("hostname changed from %q to %q", prev.GetHostname(), cur.GetHostname())
	}
	if prev.GetPort() != cur.GetPort() {
		return fmt.Errorf("port changed from %d to %d", prev.GetPort(), cur.GetPort())
	}
	pr, err := resources.FromProto(prev.GetResources())
	if err != nil {
		return fmt.Errorf("checkpointed resources: %w", err)
	}
	cr, err := resources.FromProto(cur.GetResources())
	if err != nil {
		return fmt.Errorf("resources: %w", err)
	}
	switch policy {
	case PolicyAdditive:
		if !cr.Contains(pr) {
			return fmt.Errorf("resources changed from '%s' to '%s': '%s' were removed",
				pr.String(), cr.String(), pr.Subtract(cr).String())
		}
		prevAttrs, curAttrs := attributeMap(prev.GetAttributes()), attributeMap(cur.GetAttributes())
		for _, name := range sortedAttrNames(prevAttrs) {
			c, ok := curAttrs[name]
			if !ok {
				return fmt.Errorf("attribute '%s' was removed", attributeText(prevAttrs[name]))
			}
			if !proto.Equal(c, prevAttrs[name]) {
				return fmt.Errorf("attribute '%s' changed to '%s'", attributeText(prevAttrs[name]), attributeText(c))
			}
		}
	default:
		if !cr.Equal(pr) {
			return fmt.Errorf("resources changed from '%s' to '%s'", pr.String(), cr.String())
		}
		if !attributesEqual(prev.GetAttributes(), cur.GetAttributes()) {
			return fmt.Errorf("attributes changed from '%s' to '%s'",
				attributesText(prev.GetAttributes()), attributesText(cur.GetAttributes()))
		}
	}
	return nil
}

func attributeMap(as []*mesos.Attribute) map[string]*mesos.Attribute {
	out := map[string]*mesos.Attribute{}
	for _, a := range as {
		out[a.GetName()] = a
	}
	return out
}

func sortedAttrNames(m map[string]*mesos.Attribute) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func attributesEqual(a, b []*mesos.Attribute) bool {
	am, bm := attributeMap(a), attributeMap(b)
	if len(am) != len(bm) {
		return false
	}
	for k, v := range am {
		if !proto.Equal(v, bm[k]) {
			return false
		}
	}
	return true
}

// attributesText renders attributes in --attributes syntax.
func attributesText(as []*mesos.Attribute) string {
	parts := make([]string, 0, len(as))
	for _, a := range as {
		parts = append(parts, attributeText(a))
	}
	return strings.Join(parts, ";")
}

func attributeText(a *mesos.Attribute) string {
	var v string
	switch a.GetType() {
	case mesos.Value_SCALAR:
		v = strconv.FormatFloat(a.GetScalar().GetValue(), 'f', -1, 64)
	case mesos.Value_RANGES:
		var rs []string
		for _, r := range a.GetRanges().GetRange() {
			rs = append(rs, fmt.Sprintf("%d-%d", r.GetBegin(), r.GetEnd()))
		}
		v = "[" + strings.Join(rs, ", ") + "]"
	case mesos.Value_SET:
		v = "{" + strings.Join(a.GetSet().GetItem(), ", ") + "}"
	default:
		v = a.GetText().GetValue()
	}
	return a.GetName() + ":" + v
}
