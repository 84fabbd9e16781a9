package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Revocable resources (docs/oversubscription.md).
//
// A framework that subscribes with Config.Revocable (the
// REVOCABLE_RESOURCES capability) is offered revocable resources besides
// regular ones: tasks on them may be killed at any time. mezzo's master
// sends each kind in offers of its own:
//
//   - regular resources (unreserved, and reserved to the framework's role);
//   - throttle-able revocable resources (Resource.revocable.throttle_info
//     set): an agent's estimated slack, which its QoS controller may
//     throttle or take back by killing the task;
//   - lent revocable resources (revocable without throttle_info): another
//     role's idle reservation, evicted when that role takes it back.
//
// One ACCEPT may combine the offers of one agent (and one role), so a task
// can run on revocable cpus with regular memory: group an event's offers
// with ByAgent, take each task's resources with Take, and accept the
// group's IDs:
//
//	for _, g := range scheduler.ByAgent(ev.GetOffers().GetOffers()) {
//		got, _, ok := scheduler.Take(g.Resources, scheduler.Need{
//			Scalars:   map[string]float64{"cpus": 1, "mem": 128},
//			Revocable: []string{"cpus"},
//		})
//		if !ok {
//			client.Decline(ctx, g.IDs(), nil)
//			continue
//		}
//		task.AgentId, task.Resources = g.Offers[0].GetAgentId(), got.Proto()
//		client.Launch(ctx, g.IDs(), []*mesos.TaskInfo{task}, nil)
//	}
//
// Mesos lets a task use revocable resources of one name with regular
// resources of another, never both kinds of one name; Take keeps to that.

// AgentOffers is the offers of one agent for one role, which one ACCEPT
// may combine.
type AgentOffers struct {
	AgentID string
	// Role is the offers' allocation role ("" unless the framework is
	// MULTI_ROLE: offers to different roles cannot be combined).
	Role   string
	Offers []*mesos.Offer
	// Resources is everything the offers hold, without allocation info
	// (as a task of a framework with one role carries them).
	Resources resources.Resources
}

// IDs lists the group's offer IDs, for Launch, Accept or Decline.
func (g AgentOffers) IDs() []*mesos.OfferID {
	ids := make([]*mesos.OfferID, len(g.Offers))
	for i, o := range g.Offers {
		ids[i] = o.GetId()
	}
	return ids
}

// ByAgent groups offers by agent and allocation role, in the order each
// group's first offer appears. An offer whose resources do not parse (a
// master does not send one) is in its group but adds no resources, so it
// is still declined or accepted with the others.
func ByAgent(offers []*mesos.Offer) []AgentOffers {
	var out []AgentOffers
	index := map[string]int{}
	for _, o := range offers {
		r, err := resources.FromProto(o.GetResources())
		if err != nil {
			r = resources.Resources{}
		}
		role := o.GetAllocationInfo().GetRole()
		key := o.GetAgentId().GetValue() + "\x00" + role
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, AgentOffers{AgentID: o.GetAgentId().GetValue(), Role: role})
		}
		out[i].Offers = append(out[i].Offers, o)
		out[i].Resources = out[i].Resources.Add(r.WithoutAllocationInfo())
	}
	return out
}

// RevocableKind says which revocable resources may serve a Need.
type RevocableKind int

const (
	// AnyRevocable takes throttle-able slack and lent reservations alike.
	AnyRevocable RevocableKind = iota
	// ThrottleableOnly takes only throttle-able slack (throttle_info set).
	ThrottleableOnly
	// LentOnly takes only lent reservations (no throttle_info).
	LentOnly
)

// Need is what one task takes from an agent's offers.
type Need struct {
	// Scalars are the quantities by resource name ("cpus", "mem", …).
	Scalars map[string]float64
	// Revocable names the resources taken from revocable resources only
	// (typically "cpus"); the others come from regular resources only.
	Revocable []string
	// Kind narrows which revocable resources serve (default any).
	Kind RevocableKind
}

// ParseNeed reads scalar quantities in Mesos text form ("cpus:1;mem:128")
// with the names in revocable to be taken from revocable resources.
func ParseNeed(text string, revocable ...string) (Need, error) {
	n := Need{Scalars: map[string]float64{}, Revocable: revocable}
	for _, tok := range strings.Split(text, ";") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		name, v, ok := strings.Cut(tok, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, "(){}[]") {
			return Need{}, fmt.Errorf("%q: expecting name:quantity (unreserved scalar quantities)", tok)
		}
		var q float64
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%g", &q); err != nil || !(q > 0) || math.IsInf(q, 0) {
			return Need{}, fmt.Errorf("%q: the quantity must be a positive number", tok)
		}
		n.Scalars[name] += q
	}
	if len(n.Scalars) == 0 {
		return Need{}, errors.New("no resources given")
	}
	for _, name := range revocable {
		if n.Scalars[name] == 0 {
			return Need{}, fmt.Errorf("revocable %q: the need has no %s", name, name)
		}
	}
	return n, nil
}

// String renders the need as ParseNeed reads it, names sorted, the
// revocable ones marked "{REV}".
func (n Need) String() string {
	names := make([]string, 0, len(n.Scalars))
	for k := range n.Scalars {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		rev := ""
		if slices.Contains(n.Revocable, k) {
			rev = "{REV}"
		}
		parts = append(parts, fmt.Sprintf("%s%s:%g", k, rev, n.Scalars[k]))
	}
	return strings.Join(parts, ";")
}

// usable reports whether r may serve the need's resource of its name.
func (n Need) usable(r *mesos.Resource) bool {
	if r.GetType() != mesos.Value_SCALAR {
		return false
	}
	if !slices.Contains(n.Revocable, r.GetName()) {
		return r.GetRevocable() == nil
	}
	switch rev := r.GetRevocable(); {
	case rev == nil:
		return false
	case n.Kind == ThrottleableOnly:
		return rev.GetThrottleInfo() != nil
	case n.Kind == LentOnly:
		return rev.GetThrottleInfo() == nil
	}
	return true
}

// Take takes need out of avail (an AgentOffers' Resources): each
// revocable name from revocable resources of the need's kind, every other
// name from regular resources, reserved ones before unreserved ones (a
// framework is offered only its own role's reservations). It returns the
// task's resources, what remains, and false (avail unchanged) if avail
// cannot cover need.
func Take(avail resources.Resources, need Need) (taken, rest resources.Resources, ok bool) {
	items := avail.Proto()
	slices.SortStableFunc(items, func(a, b *mesos.Resource) int {
		return cmp.Compare(reservedRank(a), reservedRank(b))
	})
	names := make([]string, 0, len(need.Scalars))
	for k := range need.Scalars {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []*mesos.Resource
	for _, name := range names {
		left := milli(need.Scalars[name])
		for _, r := range items {
			if left <= 0 {
				break
			}
			if r.GetName() != name || !need.usable(r) {
				continue
			}
			n := min(milli(r.GetScalar().GetValue()), left)
			if n <= 0 {
				continue
			}
			part := proto.CloneOf(r)
			part.Scalar = &mesos.Value_Scalar{Value: proto.Float64(float64(n) / 1000)}
			out = append(out, part)
			left -= n
		}
		if left > 0 {
			return resources.Resources{}, avail, false
		}
	}
	got, err := resources.FromProto(out)
	if err != nil || !avail.Contains(got) {
		return resources.Resources{}, avail, false
	}
	return got, avail.Subtract(got), true
}

// Shortfall says, for a need Take cannot cover, what is missing from
// avail, e.g. "cpus{REV}: 0.5 offered, 1 needed" (for a framework to tell its
// user what it waits for); "" if the need fits.
func Shortfall(avail resources.Resources, need Need) string {
	var parts []string
	names := make([]string, 0, len(need.Scalars))
	for k := range need.Scalars {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		var have int64
		for _, r := range avail.Named(name).Proto() {
			if need.usable(r) {
				have += milli(r.GetScalar().GetValue())
			}
		}
		if want := milli(need.Scalars[name]); have < want {
			rev := ""
			if slices.Contains(need.Revocable, name) {
				rev = "{REV}"
			}
			parts = append(parts, fmt.Sprintf("%s%s: %g offered, %g needed", name, rev, float64(have)/1000, need.Scalars[name]))
		}
	}
	return strings.Join(parts, ", ")
}

func reservedRank(r *mesos.Resource) int {
	if len(r.GetReservations()) > 0 || (r.GetRole() != "" && r.GetRole() != "*") {
		return 0
	}
	return 1
}

func milli(v float64) int64 { return int64(math.Round(v * 1000)) }

// withCapability returns info with capability t added if missing.
func withCapability(info *mesos.FrameworkInfo, t mesos.FrameworkInfo_Capability_Type) *mesos.FrameworkInfo {
	for _, c := range info.GetCapabilities() {
		if c.GetType() == t {
			return info
		}
	}
	info.Capabilities = append(info.Capabilities, &mesos.FrameworkInfo_Capability{Type: t.Enum()})
	return info
}
