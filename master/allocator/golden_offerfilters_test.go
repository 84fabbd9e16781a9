package allocator

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

// Golden-transcript commands for a framework's own offer filters and
// offer constraints (as an UPDATE_FRAMEWORK brings them):
//
//	offer-filters FW ROLE=QSET|QSET ...   FrameworkInfo.offer_filters: per
//	                                      role, minimum allocatable quantity
//	                                      sets ("cpus:1;mem:64"); ROLE= with
//	                                      nothing: any non-empty resources
//	constraints FW ROLE=EXPR ...          offer constraints, see parseConstraints
//	constraints FW none                   none
//
// Agents get attributes from add-agent's attr=NAME:VALUE (text),
// region=R and zone=Z (fault domain); their hostname is their ID.

func (h *harness) execOfferFilters(cmd string, args []string) (bool, error) {
	switch cmd {
	case "offer-filters", "constraints":
	default:
		return false, nil
	}
	if len(args) < 1 {
		return true, fmt.Errorf("%s: want FW ...", cmd)
	}
	f := h.c.frameworks[args[0]]
	if f == nil || !f.known {
		return true, fmt.Errorf("%s: unknown framework %s", cmd, args[0])
	}
	info := proto.CloneOf(f.info)
	opts := FrameworkOptions{SuppressedRoles: sortedKeys(f.suppressed), OfferConstraints: f.constraints}
	switch cmd {
	case "offer-filters":
		info.OfferFilters = map[string]*mesos.OfferFilters{}
		for _, a := range args[1:] {
			role, sets, _ := strings.Cut(a, "=")
			mar := &mesos.OfferFilters_MinAllocatableResources{}
			for _, set := range strings.Split(sets, "|") {
				if set == "" {
					continue
				}
				m, err := parseQuantities(set)
				if err != nil {
					return true, err
				}
				rq := &mesos.OfferFilters_ResourceQuantities{Quantities: map[string]*mesos.Value_Scalar{}}
				for n, v := range m {
					rq.Quantities[n] = &mesos.Value_Scalar{Value: proto.Float64(v)}
				}
				mar.Quantities = append(mar.Quantities, rq)
			}
			info.OfferFilters[role] = &mesos.OfferFilters{MinAllocatableResources: mar}
		}
	case "constraints":
		var pb *schedulerpb.OfferConstraints
		if len(args) < 2 || args[1] != "none" {
			var err error
			if pb, err = parseConstraints(args[1:]); err != nil {
				return true, err
			}
		}
		oc, err := NewOfferConstraints(pb, f.roles, 0)
		if err != nil {
			h.say("invalid: %v", err)
			return true, nil
		}
		opts.OfferConstraints = oc
	}
	h.c.updateFramework(args[0], info, opts)
	return true, nil
}

// parseConstraints reads offer constraints from ROLE=EXPR arguments. EXPR
// is groups separated by '|', each constraints separated by '&': SEL?
// (exists), !SEL? (not exists), SEL=V, SEL!=V, SEL~RE (matches), SEL!~RE;
// SEL is an attribute name or @hostname, @region, @zone.
func parseConstraints(args []string) (*schedulerpb.OfferConstraints, error) {
	out := &schedulerpb.OfferConstraints{RoleConstraints: map[string]*schedulerpb.OfferConstraints_RoleConstraints{}}
	for _, a := range args {
		role, expr, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("constraints: %q is not ROLE=EXPR", a)
		}
		rc := &schedulerpb.OfferConstraints_RoleConstraints{}
		for _, g := range strings.Split(expr, "|") {
			grp := &schedulerpb.OfferConstraints_RoleConstraints_Group{}
			for _, c := range strings.Split(g, "&") {
				if c == "" {
					continue
				}
				ac, err := parseConstraint(c)
				if err != nil {
					return nil, err
				}
				grp.AttributeConstraints = append(grp.AttributeConstraints, ac)
			}
			rc.Groups = append(rc.Groups, grp)
		}
		out.RoleConstraints[role] = rc
	}
	return out, nil
}

func parseConstraint(c string) (*schedulerpb.AttributeConstraint, error) {
	sel := func(name string) *schedulerpb.AttributeConstraint_Selector {
		pseudo := map[string]schedulerpb.AttributeConstraint_Selector_PseudoattributeType{
			"@hostname": schedulerpb.AttributeConstraint_Selector_HOSTNAME,
			"@region":   schedulerpb.AttributeConstraint_Selector_REGION,
			"@zone":     schedulerpb.AttributeConstraint_Selector_ZONE,
		}
		if t, ok := pseudo[name]; ok {
			return selPseudo(t)
		}
		return selName(name)
	}
	p := &schedulerpb.AttributeConstraint_Predicate{}
	var name string
	switch {
	case strings.HasPrefix(c, "!") && strings.HasSuffix(c, "?"):
		name = c[1 : len(c)-1]
		p.Predicate = &schedulerpb.AttributeConstraint_Predicate_NotExists_{NotExists: &schedulerpb.AttributeConstraint_Predicate_NotExists{}}
	case strings.HasSuffix(c, "?"):
		name = c[:len(c)-1]
		p.Predicate = &schedulerpb.AttributeConstraint_Predicate_Exists_{Exists: &schedulerpb.AttributeConstraint_Predicate_Exists{}}
	case strings.Contains(c, "!~"):
		n, v, _ := strings.Cut(c, "!~")
		name = n
		p.Predicate = &schedulerpb.AttributeConstraint_Predicate_TextNotMatches_{
			TextNotMatches: &schedulerpb.AttributeConstraint_Predicate_TextNotMatches{Regex: proto.String(v)}}
	case strings.Contains(c, "~"):
		n, v, _ := strings.Cut(c, "~")
		name = n
		p.Predicate = &schedulerpb.AttributeConstraint_Predicate_TextMatches_{
			TextMatches: &schedulerpb.AttributeConstraint_Predicate_TextMatches{Regex: proto.String(v)}}
	case strings.Contains(c, "!="):
		n, v, _ := strings.Cut(c, "!=")
		name = n
		p.Predicate = &schedulerpb.AttributeConstraint_Predicate_TextNotEquals_{
			TextNotEquals: &schedulerpb.AttributeConstraint_Predicate_TextNotEquals{Value: proto.String(v)}}
	case strings.Contains(c, "="):
		n, v, _ := strings.Cut(c, "=")
		name = n
		p.Predicate = &schedulerpb.AttributeConstraint_Predicate_TextEquals_{
			TextEquals: &schedulerpb.AttributeConstraint_Predicate_TextEquals{Value: proto.String(v)}}
	default:
		return nil, fmt.Errorf("constraints: cannot read %q", c)
	}
	return &schedulerpb.AttributeConstraint{Selector: sel(name), Predicate: p}, nil
}
