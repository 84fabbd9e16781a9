// Package offers holds what the frameworks shipped with mezzo (batch,
// gang, elastic) do with a resource offer before deciding: take one task's
// resources out of what an offer still has, preferring resources reserved
// to the framework's role and choosing whether revocable ones may serve,
// and read the offer's attributes. It is pure: no calls, no clock.
//
// A framework keeps, per offer it is filling, the Resources not yet
// given to a task, and calls Take once per task:
//
//	avail := offers.Available(offer)
//	for {
//		got, rest, ok := offers.Take(avail, need, offers.NoRevocable)
//		if !ok { break }
//		launch(task, got)
//		avail = rest
//	}
package offers

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/resources"
	"mezzo/scheduler"
)

// Need is what one task asks for: scalar quantities by name ("cpus",
// "mem", "disk", …) and a number of ports.
type Need struct {
	Scalars map[string]float64
	Ports   int
}

// ParseNeed reads a task's resources in Mesos text form, e.g.
// "cpus:1;mem:256;ports:1" (ports is a count here, not ranges), with the
// SDK's parser (scheduler.ParseNeed).
func ParseNeed(text string) (Need, error) {
	sn, err := scheduler.ParseNeed(text)
	if err != nil {
		return Need{}, err
	}
	n := Need{Scalars: sn.Scalars}
	if q, ok := n.Scalars["ports"]; ok {
		if q != math.Trunc(q) {
			return Need{}, fmt.Errorf("\"ports:%g\": ports is a whole number of ports", q)
		}
		n.Ports = int(q)
		delete(n.Scalars, "ports")
	}
	return n, nil
}

// String renders the need as ParseNeed reads it: the scalars as the
// scheduler's Need renders them (names sorted), then the ports.
func (n Need) String() string {
	s := scheduler.Need{Scalars: n.Scalars}.String()
	if n.Ports > 0 {
		if s != "" {
			s += ";"
		}
		s += fmt.Sprintf("ports:%d", n.Ports)
	}
	return s
}

// Scalar is the need's quantity of name (0 if it asks for none).
func (n Need) Scalar(name string) float64 { return n.Scalars[name] }

// Revocability says whether revocable resources may serve a need.
type Revocability int

const (
	// NoRevocable takes only non-revocable resources.
	NoRevocable Revocability = iota
	// PreferRevocable takes, per resource name, revocable resources if
	// they cover the need and non-revocable ones otherwise, never both
	// (Mesos refuses a task that mixes the two kinds in one name); a
	// best-effort task takes the cheaper capacity first.
	PreferRevocable
)

// Available is what an offer holds, without allocation info (the
// frameworks here subscribe in one role, so their tasks carry none).
func Available(o *mesos.Offer) resources.Resources {
	r, err := resources.FromProto(o.GetResources())
	if err != nil {
		// The master validated what it offers; an offer we cannot read is
		// one we cannot use.
		return resources.Resources{}
	}
	return r.WithoutAllocationInfo()
}

// Take takes need out of avail: for each scalar, resources reserved to a
// role first (a framework is offered only its own role's reservations),
// then unreserved ones, revocable ones (of a name, only if they cover it)
// or never as rev says; and
// the lowest free ports. It returns what was taken (a task's resources),
// what remains, and false (with avail unchanged) if avail cannot cover
// need.
func Take(avail resources.Resources, need Need, rev Revocability) (taken, rest resources.Resources, ok bool) {
	items := avail.Proto()
	slices.SortStableFunc(items, func(a, b *mesos.Resource) int {
		return cmp.Or(cmp.Compare(rank(a, rev), rank(b, rev)), strings.Compare(a.GetName(), b.GetName()))
	})
	var out []*mesos.Resource
	for _, name := range sortedNames(need.Scalars) {
		left := milli(need.Scalars[name])
		// Mesos refuses a task using revocable and non-revocable
		// resources of one name: revocable ones serve a name only if
		// they cover it alone, else regular ones do.
		revOnly := rev == PreferRevocable && scalarSum(items, name, true) >= left
		for _, r := range items {
			if left == 0 {
				break
			}
			if r.GetName() != name || r.GetType() != mesos.Value_SCALAR || !usable(r, rev) || (r.GetRevocable() != nil) != revOnly {
				continue
			}
			have := milli(r.GetScalar().GetValue())
			if have == 0 {
				continue
			}
			n := min(have, left)
			part := proto.CloneOf(r)
			part.Scalar = &mesos.Value_Scalar{Value: proto.Float64(float64(n) / 1000)}
			// Take it from the copy too, so a later need of the same name
			// (none today) would not count it twice.
			r.Scalar = &mesos.Value_Scalar{Value: proto.Float64(float64(have-n) / 1000)}
			out = append(out, part)
			left -= n
		}
		if left > 0 {
			return resources.Resources{}, avail, false
		}
	}
	if need.Ports > 0 {
		ports, ok := takePorts(items, need.Ports, rev)
		if !ok {
			return resources.Resources{}, avail, false
		}
		out = append(out, ports...)
	}
	taken, err := resources.FromProto(out)
	if err != nil || !avail.Contains(taken) {
		// Only a bug gets here: every part came out of avail.
		return resources.Resources{}, avail, false
	}
	return taken, avail.Subtract(taken), true
}

// Count is how many times need fits in avail.
func Count(avail resources.Resources, need Need, rev Revocability) int {
	n := 0
	for {
		_, rest, ok := Take(avail, need, rev)
		if !ok {
			return n
		}
		n++
		avail = rest
	}
}

// scalarSum is, in thousandths, what items hold of the scalar name, of
// the revocable or of the regular kind.
func scalarSum(items []*mesos.Resource, name string, revocable bool) int64 {
	var n int64
	for _, r := range items {
		if r.GetName() == name && r.GetType() == mesos.Value_SCALAR && (r.GetRevocable() != nil) == revocable {
			n += milli(r.GetScalar().GetValue())
		}
	}
	return n
}

// IsRevocable reports whether any of a task's resources are revocable
// (Mesos: such a task may be killed when the estimate shrinks).
func IsRevocable(r resources.Resources) bool { return !r.Revocable().IsEmpty() }

// rank orders resources for taking: reserved before unreserved, and
// revocable before non-revocable when rev prefers them.
func rank(r *mesos.Resource, rev Revocability) int {
	k := 2
	if len(r.GetReservations()) > 0 || (r.GetRole() != "" && r.GetRole() != "*") {
		k = 0
	}
	if rev == PreferRevocable && r.GetRevocable() != nil {
		k--
	}
	return k
}

func usable(r *mesos.Resource, rev Revocability) bool {
	return rev == PreferRevocable || r.GetRevocable() == nil
}

// takePorts takes the n lowest ports of the usable port ranges.
func takePorts(items []*mesos.Resource, n int, rev Revocability) ([]*mesos.Resource, bool) {
	var out []*mesos.Resource
	for _, r := range items {
		if r.GetName() != "ports" || r.GetType() != mesos.Value_RANGES || !usable(r, rev) {
			continue
		}
		var got []*mesos.Value_Range
		for _, rg := range r.GetRanges().GetRange() {
			for p := rg.GetBegin(); p <= rg.GetEnd() && n > 0; p++ {
				got = append(got, &mesos.Value_Range{Begin: proto.Uint64(p), End: proto.Uint64(p)})
				n--
			}
		}
		if len(got) > 0 {
			part := proto.CloneOf(r)
			part.Ranges = &mesos.Value_Ranges{Range: got}
			out = append(out, part)
		}
		if n == 0 {
			return out, true
		}
	}
	return nil, false
}

// Ports lists the ports of a task's resources, lowest first.
func Ports(r resources.Resources) []uint64 {
	var out []uint64
	for _, p := range r.Named("ports").Proto() {
		for _, rg := range p.GetRanges().GetRange() {
			for v := rg.GetBegin(); v <= rg.GetEnd(); v++ {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Attribute returns the text (or scalar, formatted) value of the offer's
// attribute name.
func Attribute(o *mesos.Offer, name string) (string, bool) {
	for _, a := range o.GetAttributes() {
		if a.GetName() != name {
			continue
		}
		switch a.GetType() {
		case mesos.Value_TEXT:
			return a.GetText().GetValue(), true
		case mesos.Value_SCALAR:
			return fmt.Sprintf("%g", a.GetScalar().GetValue()), true
		}
	}
	return "", false
}

func milli(v float64) int64 { return int64(math.Round(v * 1000)) }

func sortedNames(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
