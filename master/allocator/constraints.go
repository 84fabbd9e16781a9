package allocator

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

// Offer constraints (Mesos 1.11's scheduler.OfferConstraints, the paper's
// §3.5 "only offer nodes from list L"): per role, groups of attribute
// constraints; an agent may be offered to the role if every constraint of
// at least one group holds on it. The allocator evaluates them before it
// offers, so an agent the framework would refuse costs no offer round trip.
// The semantics are Mesos's (src/master/allocator/mesos/
// offer_constraints_filter.cpp): a constraint selects an attribute by name
// or a pseudoattribute (HOSTNAME, REGION, ZONE of the agent's fault
// domain); Exists/NotExists test presence; the text predicates hold on a
// present attribute that is not TEXT (Mesos's choice, kept); regexes must
// match the whole value.

// DefaultRegexMaxProgramSize is Mesos's
// --offer_constraints_re2_max_program_size default.
const DefaultRegexMaxProgramSize = 100

// OfferConstraints are a framework's compiled offer constraints. The
// zero value (or nil) constrains nothing.
type OfferConstraints struct {
	roles map[string][]constraintGroup
}

type constraintGroup []attributeConstraint

type attributeConstraint struct {
	// name is the attribute's name, unless pseudo says which
	// pseudoattribute the constraint is on.
	name   string
	pseudo schedulerpb.AttributeConstraint_Selector_PseudoattributeType
	pred   predicate
}

type predicateKind int

const (
	predExists predicateKind = iota
	predNotExists
	predTextEquals
	predTextNotEquals
	predTextMatches
	predTextNotMatches
)

type predicate struct {
	kind predicateKind
	text string
	re   *regexp.Regexp
}

// NewOfferConstraints validates and compiles c as Mesos does for SUBSCRIBE
// and UPDATE_FRAMEWORK, with Mesos's messages: roles names the framework's
// roles (a constraint for another role is an error), and regexes are
// compiled with at most maxProgramSize instructions (Go's regexp program;
// 0 means DefaultRegexMaxProgramSize). A nil c constrains nothing.
func NewOfferConstraints(c *schedulerpb.OfferConstraints, roles []string, maxProgramSize int) (*OfferConstraints, error) {
	oc, err := newOfferConstraints(c, roles, maxProgramSize)
	var roleErr *roleError
	if err != nil && !errors.As(err, &roleErr) {
		err = fmt.Errorf("Offer constraints are not valid: %w", err)
	}
	return oc, err
}

// roleError: the constraints name a role the framework does not have
// (reported without the "not valid" prefix, as Mesos does).
type roleError struct{ role string }

func (e *roleError) Error() string {
	return fmt.Sprintf("Offer constraints specify `role_constraints` for a role '%s' not contained in the set of roles", e.role)
}

func newOfferConstraints(c *schedulerpb.OfferConstraints, roles []string, maxProgramSize int) (*OfferConstraints, error) {
	if c == nil || len(c.GetRoleConstraints()) == 0 {
		return nil, nil
	}
	if maxProgramSize <= 0 {
		maxProgramSize = DefaultRegexMaxProgramSize
	}
	valid := map[string]bool{}
	for _, r := range roles {
		valid[r] = true
	}
	names := make([]string, 0, len(c.GetRoleConstraints()))
	for r := range c.GetRoleConstraints() {
		names = append(names, r)
	}
	sort.Strings(names) // the first error is the same every time
	for _, role := range names {
		if !valid[role] {
			return nil, &roleError{role}
		}
	}
	out := &OfferConstraints{roles: map[string][]constraintGroup{}}
	for _, role := range names {
		groups := c.GetRoleConstraints()[role].GetGroups()
		if len(groups) == 0 {
			return nil, fmt.Errorf("'OfferConstraints::role_constraints' has an empty 'RoleConstraints::groups' for role %s", role)
		}
		for _, g := range groups {
			if len(g.GetAttributeConstraints()) == 0 {
				return nil, fmt.Errorf("'OfferConstraints::RoleConstraints::groups' for role %s contains an empty RoleConstraints::Group", role)
			}
			var group constraintGroup
			for _, ac := range g.GetAttributeConstraints() {
				x, err := compileConstraint(ac, maxProgramSize)
				if err != nil {
					return nil, fmt.Errorf("A role %s has an invalid 'AttributeConstraint': %v", role, err)
				}
				group = append(group, x)
			}
			out.roles[role] = append(out.roles[role], group)
		}
	}
	return out, nil
}

func compileConstraint(ac *schedulerpb.AttributeConstraint, maxProgramSize int) (attributeConstraint, error) {
	var x attributeConstraint
	sel := ac.GetSelector()
	switch s := sel.GetSelector().(type) {
	case *schedulerpb.AttributeConstraint_Selector_AttributeName:
		x.name = s.AttributeName // "" is accepted, as by Mesos: it never exists
	case *schedulerpb.AttributeConstraint_Selector_PseudoattributeType_:
		switch s.PseudoattributeType {
		case schedulerpb.AttributeConstraint_Selector_HOSTNAME, schedulerpb.AttributeConstraint_Selector_REGION,
			schedulerpb.AttributeConstraint_Selector_ZONE:
			x.pseudo = s.PseudoattributeType
		default:
			return x, errors.New("Unknown pseudoattribute type")
		}
	default:
		return x, errors.New("Exactly one of 'AttributeConstraint::Selector::name' or 'AttributeConstraint::Selector::pseudoattribute_type' must be set")
	}
	p := ac.GetPredicate()
	var err error
	switch v := p.GetPredicate().(type) {
	case *schedulerpb.AttributeConstraint_Predicate_Exists_:
		x.pred.kind = predExists
	case *schedulerpb.AttributeConstraint_Predicate_NotExists_:
		x.pred.kind = predNotExists
	case *schedulerpb.AttributeConstraint_Predicate_TextEquals_:
		x.pred = predicate{kind: predTextEquals, text: v.TextEquals.GetValue()}
	case *schedulerpb.AttributeConstraint_Predicate_TextNotEquals_:
		x.pred = predicate{kind: predTextNotEquals, text: v.TextNotEquals.GetValue()}
	case *schedulerpb.AttributeConstraint_Predicate_TextMatches_:
		x.pred.kind = predTextMatches
		x.pred.re, err = compileRegex(v.TextMatches.GetRegex(), maxProgramSize)
	case *schedulerpb.AttributeConstraint_Predicate_TextNotMatches_:
		x.pred.kind = predTextNotMatches
		x.pred.re, err = compileRegex(v.TextNotMatches.GetRegex(), maxProgramSize)
	default:
		return x, errors.New("Unknown predicate type")
	}
	return x, err
}

// compileRegex compiles a constraint's regex, anchored (RE2::FullMatch),
// refusing programs larger than max instructions: Mesos bounds the cost
// of the regexes a framework makes the allocator run (RE2's program size;
// Go's regexp is also RE2 syntax, its program is counted here).
func compileRegex(expr string, max int) (*regexp.Regexp, error) {
	full := `^(?:` + expr + `)$`
	re, err := syntax.Parse(full, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("Failed to construct regex from pattern '%s': %v", expr, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("Failed to construct regex from pattern '%s': %v", expr, err)
	}
	if n := len(prog.Inst); n > max {
		return nil, fmt.Errorf("Regex '%s' is too complex: program size of %d is larger than maximum of %d allowed", expr, n, max)
	}
	return regexp.Compile(full)
}

// excludes reports whether the constraints keep agent info from being
// offered to role: the role has constraints and no group holds entirely.
func (oc *OfferConstraints) excludes(role string, info *mesos.AgentInfo) bool {
	if oc == nil {
		return false
	}
	groups, ok := oc.roles[role]
	return ok && !groupsAdmit(groups, info)
}

// groupsAdmit reports whether at least one group holds on the agent.
func groupsAdmit(groups []constraintGroup, info *mesos.AgentInfo) bool {
	for _, g := range groups {
		if g.holds(info) {
			return true
		}
	}
	return false
}

func (g constraintGroup) holds(info *mesos.AgentInfo) bool {
	for i := range g {
		if !g[i].holds(info) {
			return false
		}
	}
	return true
}

func (x *attributeConstraint) holds(info *mesos.AgentInfo) bool {
	if x.pseudo == schedulerpb.AttributeConstraint_Selector_UNKNOWN {
		for _, a := range info.GetAttributes() {
			if a.GetName() == x.name {
				if a.GetType() != mesos.Value_TEXT {
					// Mesos: text predicates hold on non-TEXT attributes.
					return x.pred.kind != predNotExists
				}
				return x.pred.apply(a.GetText().GetValue(), true)
			}
		}
		return x.pred.apply("", false)
	}
	fd := info.GetDomain().GetFaultDomain()
	switch x.pseudo {
	case schedulerpb.AttributeConstraint_Selector_HOSTNAME:
		return x.pred.apply(info.GetHostname(), true)
	case schedulerpb.AttributeConstraint_Selector_REGION:
		return x.pred.apply(fd.GetRegion().GetName(), fd != nil)
	case schedulerpb.AttributeConstraint_Selector_ZONE:
		return x.pred.apply(fd.GetZone().GetName(), fd != nil)
	}
	return false
}

// apply evaluates the predicate on a (pseudo)attribute's text value, or
// on its absence (present false).
func (p *predicate) apply(v string, present bool) bool {
	switch p.kind {
	case predExists:
		return present
	case predNotExists:
		return !present
	case predTextEquals:
		return present && v == p.text
	case predTextNotEquals:
		return !present || v != p.text
	case predTextMatches:
		return present && p.re.MatchString(v)
	case predTextNotMatches:
		return !present || !p.re.MatchString(v)
	}
	return false
}
