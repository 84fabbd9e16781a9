package allocator

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

func selName(n string) *schedulerpb.AttributeConstraint_Selector {
	return &schedulerpb.AttributeConstraint_Selector{Selector: &schedulerpb.AttributeConstraint_Selector_AttributeName{AttributeName: n}}
}

func selPseudo(t schedulerpb.AttributeConstraint_Selector_PseudoattributeType) *schedulerpb.AttributeConstraint_Selector {
	return &schedulerpb.AttributeConstraint_Selector{Selector: &schedulerpb.AttributeConstraint_Selector_PseudoattributeType_{PseudoattributeType: t}}
}

func predExistsP() *schedulerpb.AttributeConstraint_Predicate {
	return &schedulerpb.AttributeConstraint_Predicate{Predicate: &schedulerpb.AttributeConstraint_Predicate_Exists_{Exists: &schedulerpb.AttributeConstraint_Predicate_Exists{}}}
}

func predMatches(re string) *schedulerpb.AttributeConstraint_Predicate {
	return &schedulerpb.AttributeConstraint_Predicate{Predicate: &schedulerpb.AttributeConstraint_Predicate_TextMatches_{
		TextMatches: &schedulerpb.AttributeConstraint_Predicate_TextMatches{Regex: proto.String(re)}}}
}

func oneConstraint(role string, ac *schedulerpb.AttributeConstraint) *schedulerpb.OfferConstraints {
	return &schedulerpb.OfferConstraints{RoleConstraints: map[string]*schedulerpb.OfferConstraints_RoleConstraints{
		role: {Groups: []*schedulerpb.OfferConstraints_RoleConstraints_Group{{AttributeConstraints: []*schedulerpb.AttributeConstraint{ac}}}}}}
}

// Every refusal Mesos makes, with Mesos's message.
func TestNewOfferConstraintsErrors(t *testing.T) {
	good := &schedulerpb.AttributeConstraint{Selector: selName("rack"), Predicate: predExistsP()}
	for _, tc := range []struct {
		name string
		c    *schedulerpb.OfferConstraints
		want string
	}{
		{"role not subscribed", oneConstraint("other", good),
			"Offer constraints specify `role_constraints` for a role 'other' not contained in the set of roles"},
		{"no groups", &schedulerpb.OfferConstraints{RoleConstraints: map[string]*schedulerpb.OfferConstraints_RoleConstraints{"r": {}}},
			"Offer constraints are not valid: 'OfferConstraints::role_constraints' has an empty 'RoleConstraints::groups' for role r"},
		{"empty group", &schedulerpb.OfferConstraints{RoleConstraints: map[string]*schedulerpb.OfferConstraints_RoleConstraints{
			"r": {Groups: []*schedulerpb.OfferConstraints_RoleConstraints_Group{{}}}}},
			"Offer constraints are not valid: 'OfferConstraints::RoleConstraints::groups' for role r contains an empty RoleConstraints::Group"},
		{"no selector", oneConstraint("r", &schedulerpb.AttributeConstraint{Selector: &schedulerpb.AttributeConstraint_Selector{}, Predicate: predExistsP()}),
			"Offer constraints are not valid: A role r has an invalid 'AttributeConstraint': Exactly one of 'AttributeConstraint::Selector::name' or 'AttributeConstraint::Selector::pseudoattribute_type' must be set"},
		{"unknown pseudoattribute", oneConstraint("r", &schedulerpb.AttributeConstraint{Selector: selPseudo(schedulerpb.AttributeConstraint_Selector_UNKNOWN), Predicate: predExistsP()}),
			"Offer constraints are not valid: A role r has an invalid 'AttributeConstraint': Unknown pseudoattribute type"},
		{"no predicate", oneConstraint("r", &schedulerpb.AttributeConstraint{Selector: selName("rack"), Predicate: &schedulerpb.AttributeConstraint_Predicate{}}),
			"Offer constraints are not valid: A role r has an invalid 'AttributeConstraint': Unknown predicate type"},
		{"bad regex", oneConstraint("r", &schedulerpb.AttributeConstraint{Selector: selName("rack"), Predicate: predMatches("(")}),
			"Offer constraints are not valid: A role r has an invalid 'AttributeConstraint': Failed to construct regex from pattern '('"},
		{"regex too complex", oneConstraint("r", &schedulerpb.AttributeConstraint{Selector: selName("rack"), Predicate: predMatches(strings.Repeat("a", 200))}),
			"Offer constraints are not valid: A role r has an invalid 'AttributeConstraint': Regex '" + strings.Repeat("a", 200) + "' is too complex: program size of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewOfferConstraints(tc.c, []string{"r"}, 0)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if oc, err := NewOfferConstraints(nil, []string{"r"}, 0); oc != nil || err != nil {
		t.Fatalf("nil constraints: %v, %v", oc, err)
	}
	if _, err := NewOfferConstraints(oneConstraint("r", good), []string{"r"}, 0); err != nil {
		t.Fatal(err)
	}
	// The program size bound is the caller's.
	long := oneConstraint("r", &schedulerpb.AttributeConstraint{Selector: selName("rack"), Predicate: predMatches(strings.Repeat("a", 200))})
	if _, err := NewOfferConstraints(long, []string{"r"}, 1000); err != nil {
		t.Fatalf("with a larger bound: %v", err)
	}
}

func agentInfo(host string, attrs map[string]string, region, zone string) *mesos.AgentInfo {
	info := &mesos.AgentInfo{Hostname: proto.String(host)}
	for _, k := range sortedKeys(attrs) {
		info.Attributes = append(info.Attributes, &mesos.Attribute{Name: proto.String(k), Type: mesos.Value_TEXT.Enum(),
			Text: &mesos.Value_Text{Value: proto.String(attrs[k])}})
	}
	if region != "" {
		info.Domain = &mesos.DomainInfo{FaultDomain: &mesos.DomainInfo_FaultDomain{
			Region: &mesos.DomainInfo_FaultDomain_RegionInfo{Name: proto.String(region)},
			Zone:   &mesos.DomainInfo_FaultDomain_ZoneInfo{Name: proto.String(zone)}}}
	}
	return info
}

// Each predicate on a present TEXT attribute, an absent one, a present
// non-TEXT one (where Mesos lets the text predicates hold), and the
// pseudoattributes.
func TestConstraintPredicates(t *testing.T) {
	withScalar := agentInfo("h1", map[string]string{"rack": "r1"}, "eu", "eu-1")
	withScalar.Attributes = append(withScalar.Attributes, &mesos.Attribute{Name: proto.String("slots"), Type: mesos.Value_SCALAR.Enum(),
		Scalar: &mesos.Value_Scalar{Value: proto.Float64(4)}})
	bare := agentInfo("h2", nil, "", "")
	text := func(v string) *schedulerpb.AttributeConstraint_Predicate_TextEquals {
		return &schedulerpb.AttributeConstraint_Predicate_TextEquals{Value: proto.String(v)}
	}
	preds := map[string]*schedulerpb.AttributeConstraint_Predicate{
		"exists":     predExistsP(),
		"not_exists": {Predicate: &schedulerpb.AttributeConstraint_Predicate_NotExists_{NotExists: &schedulerpb.AttributeConstraint_Predicate_NotExists{}}},
		"eq r1":      {Predicate: &schedulerpb.AttributeConstraint_Predicate_TextEquals_{TextEquals: text("r1")}},
		"ne r1": {Predicate: &schedulerpb.AttributeConstraint_Predicate_TextNotEquals_{
			TextNotEquals: &schedulerpb.AttributeConstraint_Predicate_TextNotEquals{Value: proto.String("r1")}}},
		"matches r.": predMatches("r."),
		"matches r":  predMatches("r"), // whole value only
		"not_matches r.": {Predicate: &schedulerpb.AttributeConstraint_Predicate_TextNotMatches_{
			TextNotMatches: &schedulerpb.AttributeConstraint_Predicate_TextNotMatches{Regex: proto.String("r.")}}},
	}
	for _, tc := range []struct {
		sel  *schedulerpb.AttributeConstraint_Selector
		pred string
		info *mesos.AgentInfo
		want bool
	}{
		{selName("rack"), "exists", withScalar, true},
		{selName("rack"), "exists", bare, false},
		{selName("rack"), "not_exists", bare, true},
		{selName("rack"), "not_exists", withScalar, false},
		{selName("rack"), "eq r1", withScalar, true},
		{selName("rack"), "eq r1", bare, false},
		{selName("rack"), "ne r1", withScalar, false},
		{selName("rack"), "ne r1", bare, true},
		{selName("rack"), "matches r.", withScalar, true},
		{selName("rack"), "matches r", withScalar, false},
		{selName("rack"), "matches r.", bare, false},
		{selName("rack"), "not_matches r.", withScalar, false},
		{selName("rack"), "not_matches r.", bare, true},
		{selName("slots"), "eq r1", withScalar, true}, // non-TEXT: text predicates hold
		{selName("slots"), "ne r1", withScalar, true},
		{selName("slots"), "matches r.", withScalar, true},
		{selName("slots"), "not_exists", withScalar, false},
		{selPseudo(schedulerpb.AttributeConstraint_Selector_HOSTNAME), "matches r.", withScalar, false},
		{selPseudo(schedulerpb.AttributeConstraint_Selector_HOSTNAME), "exists", bare, true},
		{selPseudo(schedulerpb.AttributeConstraint_Selector_REGION), "exists", withScalar, true},
		{selPseudo(schedulerpb.AttributeConstraint_Selector_REGION), "exists", bare, false},
		{selPseudo(schedulerpb.AttributeConstraint_Selector_ZONE), "not_exists", bare, true},
		{selPseudo(schedulerpb.AttributeConstraint_Selector_ZONE), "ne r1", withScalar, true},
	} {
		oc, err := NewOfferConstraints(oneConstraint("r", &schedulerpb.AttributeConstraint{Selector: tc.sel, Predicate: preds[tc.pred]}), []string{"r"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := !oc.excludes("r", tc.info); got != tc.want {
			t.Errorf("%v %s on %s: holds = %v, want %v", tc.sel, tc.pred, tc.info.GetHostname(), got, tc.want)
		}
		if oc.excludes("other", tc.info) {
			t.Errorf("a role without constraints is constrained")
		}
	}
}
