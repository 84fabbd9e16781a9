package allocator

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
)

// The allocator's offer filters and constraints against a naive oracle
// that reads the protos afresh for every question: after every allocation
// run, (1) no framework was offered an agent its constraints exclude, or
// less than its own minimum (the cluster's when it has none); (2) nothing
// is left free on an agent that some active framework admits (the
// filters only move offers to other frameworks, they never lose one).

type ofFramework struct {
	role string
	cons *schedulerpb.OfferConstraints // nil: none
	min  []map[string]float64          // nil: the cluster's minimum
	own  bool                          // min is the framework's own
}

var (
	ofRacks = []string{"r1", "r2", "r3"}
	ofExprs = []string{"rack?", "!rack?", "rack=r1", "rack!=r2", "rack~r[12]", "rack!~r1", "@hostname~a[0-4]", "@zone=z1", "@region?"}
	ofMins  = []string{"cpus:1", "cpus:2;mem:256", "mem:512", "cpus:0.5|mem:1024"}
)

func TestPropertyOfferFiltersAndConstraints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := newCore(Options{Interval: time.Second})
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		infos := map[string]*mesos.AgentInfo{}
		totals := map[string]resources.Resources{}
		for i := range rapid.IntRange(1, 10).Draw(t, "agents") {
			id := fmt.Sprintf("a%d", i)
			attrs := map[string]string{}
			if rapid.Bool().Draw(t, "hasRack") {
				attrs["rack"] = rapid.SampledFrom(ofRacks).Draw(t, "rack")
			}
			region, zone := "", ""
			if rapid.Bool().Draw(t, "hasDomain") {
				region, zone = "eu", rapid.SampledFrom([]string{"z1", "z2"}).Draw(t, "zone")
			}
			infos[id] = agentInfo(id, attrs, region, zone)
			totals[id] = resources.MustParse(fmt.Sprintf("cpus:%g;mem:%d",
				0.5*float64(rapid.IntRange(0, 8).Draw(t, "halfcpus")), 128*rapid.IntRange(0, 8).Draw(t, "mem128")))
			if totals[id].IsEmpty() {
				totals[id] = resources.MustParse("disk:10")
			}
			c.addAgent(id, infos[id], totals[id], nil)
		}
		fws := map[string]*ofFramework{}
		update := func(id string, f *ofFramework) {
			info := &mesos.FrameworkInfo{Role: proto.String(f.role)}
			if f.own {
				mar := &mesos.OfferFilters_MinAllocatableResources{}
				for _, set := range f.min {
					rq := &mesos.OfferFilters_ResourceQuantities{Quantities: map[string]*mesos.Value_Scalar{}}
					for n, v := range set {
						rq.Quantities[n] = &mesos.Value_Scalar{Value: proto.Float64(v)}
					}
					mar.Quantities = append(mar.Quantities, rq)
				}
				info.OfferFilters = map[string]*mesos.OfferFilters{f.role: {MinAllocatableResources: mar}}
			}
			oc, err := NewOfferConstraints(f.cons, []string{f.role}, 0)
			if err != nil {
				t.Fatalf("constraints: %v", err)
			}
			if _, ok := c.frameworks[id]; !ok {
				c.addFramework(id, info, nil, true, FrameworkOptions{OfferConstraints: oc})
			} else {
				c.updateFramework(id, info, FrameworkOptions{OfferConstraints: oc})
			}
			fws[id] = f
		}
		draw := func() *ofFramework {
			f := &ofFramework{role: rapid.SampledFrom([]string{"r", "s"}).Draw(t, "role")}
			if rapid.Bool().Draw(t, "constrained") {
				var groups []string
				for range rapid.IntRange(1, 3).Draw(t, "groups") {
					g := ""
					for j := range rapid.IntRange(1, 2).Draw(t, "conjuncts") {
						if j > 0 {
							g += "&"
						}
						g += rapid.SampledFrom(ofExprs).Draw(t, "expr")
					}
					groups = append(groups, g)
				}
				expr := f.role + "=" + groups[0]
				for _, g := range groups[1:] {
					expr += "|" + g
				}
				pb, err := parseConstraints([]string{expr})
				if err != nil {
					t.Fatal(err)
				}
				f.cons = pb
			}
			if rapid.Bool().Draw(t, "ownMin") {
				f.own = true
				if !rapid.Bool().Draw(t, "emptyMin") {
					spec := rapid.SampledFrom(ofMins).Draw(t, "min")
					for _, set := range splitSets(spec) {
						m, err := parseQuantities(set)
						if err != nil {
							t.Fatal(err)
						}
						f.min = append(f.min, m)
					}
				}
			}
			return f
		}
		for i := range rapid.IntRange(1, 5).Draw(t, "frameworks") {
			update(fmt.Sprintf("f%d", i), draw())
		}
		held := map[string]map[string]resources.Resources{} // agent → fw → offered
		for range rapid.IntRange(1, 12).Draw(t, "steps") {
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				res := c.allocate(now)
				checkOfferFilters(t, fws, infos, totals, held, res)
			case 1: // decline everything a framework holds on an agent
				for _, aid := range sortedKeys(held) {
					for _, fid := range sortedKeys(held[aid]) {
						if rapid.Bool().Draw(t, "decline") {
							c.recoverResources(fid, aid, held[aid][fid], nil, now)
							delete(held[aid], fid)
						}
					}
				}
			case 2: // UPDATE_FRAMEWORK with new filters and constraints
				id := fmt.Sprintf("f%d", rapid.IntRange(0, len(fws)-1).Draw(t, "which"))
				f := draw()
				f.role = fws[id].role // a role change would move its offers
				if f.cons != nil {
					// parseConstraints named the drawn role.
					for r, rc := range f.cons.RoleConstraints {
						delete(f.cons.RoleConstraints, r)
						f.cons.RoleConstraints[f.role] = rc
					}
				}
				update(id, f)
			}
		}
	})
}

func splitSets(spec string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(spec); i++ {
		if i == len(spec) || spec[i] == '|' {
			out = append(out, spec[start:i])
			start = i + 1
		}
	}
	return out
}

func checkOfferFilters(t *rapid.T, fws map[string]*ofFramework, infos map[string]*mesos.AgentInfo,
	totals map[string]resources.Resources, held map[string]map[string]resources.Resources, res runResult) {
	for fid, byRole := range res.offers {
		f := fws[fid]
		for role, byAgent := range byRole {
			for aid, r := range byAgent {
				if role != f.role {
					t.Fatalf("%s offered for role %s, subscribes to %s", fid, role, f.role)
				}
				if !naiveAdmits(f.cons, role, infos[aid]) {
					t.Fatalf("%s offered %s, which its constraints %v exclude", fid, aid, f.cons)
				}
				if !naiveMinOK(f, r) {
					t.Fatalf("%s offered %s on %s, below its minimum %v (own %v)", fid, r, aid, f.min, f.own)
				}
				if held[aid] == nil {
					held[aid] = map[string]resources.Resources{}
				}
				held[aid][fid] = held[aid][fid].Add(r)
			}
		}
	}
	for aid, total := range totals {
		free := total
		for _, r := range held[aid] {
			free = free.Subtract(r)
		}
		if free.IsEmpty() {
			continue
		}
		for _, fid := range sortedKeys(fws) {
			f := fws[fid]
			if naiveAdmits(f.cons, f.role, infos[aid]) && naiveMinOK(f, free) {
				t.Fatalf("%s left free on %s after a run, though %s admits it (constraints %v, min %v own %v)", free, aid, fid, f.cons, f.min, f.own)
			}
		}
	}
}

// naiveAdmits evaluates the constraints straight from the proto.
func naiveAdmits(c *schedulerpb.OfferConstraints, role string, info *mesos.AgentInfo) bool {
	rc, ok := c.GetRoleConstraints()[role]
	if !ok {
		return true
	}
	for _, g := range rc.GetGroups() {
		all := true
		for _, ac := range g.GetAttributeConstraints() {
			var value string
			var present, text bool
			switch ac.GetSelector().GetPseudoattributeType() {
			case schedulerpb.AttributeConstraint_Selector_HOSTNAME:
				value, present, text = info.GetHostname(), true, true
			case schedulerpb.AttributeConstraint_Selector_ZONE:
				value, present, text = info.GetDomain().GetFaultDomain().GetZone().GetName(), info.GetDomain().GetFaultDomain() != nil, true
			case schedulerpb.AttributeConstraint_Selector_REGION:
				value, present, text = info.GetDomain().GetFaultDomain().GetRegion().GetName(), info.GetDomain().GetFaultDomain() != nil, true
			default:
				for _, a := range info.GetAttributes() {
					if a.GetName() == ac.GetSelector().GetAttributeName() {
						value, present, text = a.GetText().GetValue(), true, a.GetType() == mesos.Value_TEXT
						break
					}
				}
			}
			p := ac.GetPredicate()
			var holds bool
			switch {
			case p.GetExists() != nil:
				holds = present
			case p.GetNotExists() != nil:
				holds = !present
			case present && !text:
				holds = true
			case p.GetTextEquals() != nil:
				holds = present && value == p.GetTextEquals().GetValue()
			case p.GetTextNotEquals() != nil:
				holds = !present || value != p.GetTextNotEquals().GetValue()
			case p.GetTextMatches() != nil:
				holds = present && regexp.MustCompile("^(?:"+p.GetTextMatches().GetRegex()+")$").MatchString(value)
			case p.GetTextNotMatches() != nil:
				holds = !present || !regexp.MustCompile("^(?:"+p.GetTextNotMatches().GetRegex()+")$").MatchString(value)
			}
			all = all && holds
		}
		if all {
			return true
		}
	}
	return false
}

// naiveMinOK: r holds one of the framework's own sets (any non-empty r
// for an empty own list), or of the cluster's default minimum.
func naiveMinOK(f *ofFramework, r resources.Resources) bool {
	sets := DefaultMinAllocatable
	if f.own {
		sets = f.min
		if len(sets) == 0 {
			return r.Scalar("cpus") > 0 || r.Scalar("mem") > 0 || r.Scalar("disk") > 0
		}
	}
	q := r.Quantities()
	for _, set := range sets {
		ok := true
		for n, v := range set {
			if q[n] < v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}
