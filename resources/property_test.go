package resources

import (
	"fmt"
	"maps"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
)

// The oracle is a deliberately naive model of a Resources value: a map from
// identity to quantity where scalars are integer thousandths, ranges are
// explicit sets of integers (small domain) and sets are string sets.
// Persistent volumes are indivisible and counted by copies.

type okey struct {
	name  string
	stack string // "*", "a", "c" (static) or "a/b" (static a refined to dynamic a/b)
	rev   bool
	vol   string // persistence id for volumes, with size in scalar
	size  int64  // volume size (thousandths), part of the identity
}

type oval struct {
	scalar int64
	ints   map[uint64]bool
	items  map[string]bool
	count  int64
}

type oracle map[okey]*oval

func (v *oval) empty() bool {
	return v.scalar == 0 && len(v.ints) == 0 && len(v.items) == 0 && v.count == 0
}

func (o oracle) add(k okey, v *oval) {
	cur := o[k]
	if cur == nil {
		cur = &oval{ints: map[uint64]bool{}, items: map[string]bool{}}
		o[k] = cur
	}
	cur.scalar += v.scalar
	cur.count += v.count
	maps.Copy(cur.ints, v.ints)
	maps.Copy(cur.items, v.items)
	if cur.empty() {
		delete(o, k)
	}
}

func (o oracle) clone() oracle {
	c := oracle{}
	for k, v := range o {
		c.add(k, v)
	}
	return c
}

func (o oracle) plus(p oracle) oracle {
	c := o.clone()
	for k, v := range p {
		c.add(k, v)
	}
	return c
}

func (o oracle) minus(p oracle) oracle {
	c := oracle{}
	for k, v := range o {
		w := p[k]
		if w == nil {
			c.add(k, v)
			continue
		}
		d := &oval{scalar: max(0, v.scalar-w.scalar), count: max(0, v.count-w.count),
			ints: map[uint64]bool{}, items: map[string]bool{}}
		for i := range v.ints {
			if !w.ints[i] {
				d.ints[i] = true
			}
		}
		for s := range v.items {
			if !w.items[s] {
				d.items[s] = true
			}
		}
		c.add(k, d)
	}
	return c
}

func (o oracle) contains(p oracle) bool {
	for k, w := range p {
		v := o[k]
		if v == nil || v.scalar < w.scalar || v.count < w.count {
			return false
		}
		for i := range w.ints {
			if !v.ints[i] {
				return false
			}
		}
		for s := range w.items {
			if !v.items[s] {
				return false
			}
		}
	}
	return true
}

func (o oracle) equal(p oracle) bool { return o.contains(p) && p.contains(o) }

func (o oracle) String() string {
	s := ""
	for k, v := range o {
		s += fmt.Sprintf("%+v=%d/%v/%v/%d ", k, v.scalar, v.ints, v.items, v.count)
	}
	return s
}

// stacks maps the oracle's stack names to reservation stacks.
func stack(name string) []*mesos.Resource_ReservationInfo {
	static := func(r string) *mesos.Resource_ReservationInfo {
		return &mesos.Resource_ReservationInfo{Type: mesos.Resource_ReservationInfo_STATIC.Enum(), Role: proto.String(r)}
	}
	switch name {
	case "*":
		return nil
	case "a/b":
		return []*mesos.Resource_ReservationInfo{static("a"), dynamic("a/b", "p")}
	case "db":
		return []*mesos.Resource_ReservationInfo{dynamic("db", "p")}
	}
	return []*mesos.Resource_ReservationInfo{static(name)}
}

func stackName(rs []*mesos.Resource_ReservationInfo) string {
	if len(rs) == 0 {
		return "*"
	}
	return rs[len(rs)-1].GetRole()
}

// toOracle models a Resources value through its public proto form.
func toOracle(t *rapid.T, r Resources) oracle {
	o := oracle{}
	for _, p := range r.Proto() {
		k := okey{name: p.GetName(), stack: stackName(p.Reservations), rev: p.Revocable != nil}
		v := &oval{ints: map[uint64]bool{}, items: map[string]bool{}}
		switch p.GetType() {
		case mesos.Value_SCALAR:
			v.scalar = toFixed(p.GetScalar().GetValue())
			if float64(v.scalar)/1000 != p.GetScalar().GetValue() {
				t.Fatalf("scalar %v is not a whole number of thousandths", p.GetScalar().GetValue())
			}
		case mesos.Value_RANGES:
			for _, x := range p.GetRanges().GetRange() {
				for i := x.GetBegin(); i <= x.GetEnd(); i++ {
					v.ints[i] = true
				}
			}
		case mesos.Value_SET:
			for _, s := range p.GetSet().GetItem() {
				v.items[s] = true
			}
		}
		if id := p.GetDisk().GetPersistence().GetId(); id != "" {
			k.vol, k.size = id, v.scalar
			v.scalar, v.count = 0, 1
		}
		o.add(k, v)
	}
	return o
}

// genEntry draws one resource and its oracle model.
func genEntry(t *rapid.T) (*mesos.Resource, okey, *oval) {
	kind := rapid.IntRange(0, 5).Draw(t, "kind")
	st := rapid.SampledFrom([]string{"*", "a", "a/b", "c"}).Draw(t, "stack")
	rev := rapid.Bool().Draw(t, "revocable")
	r := &mesos.Resource{Reservations: stack(st)}
	v := &oval{ints: map[uint64]bool{}, items: map[string]bool{}}
	switch kind {
	case 0, 1, 5:
		r.Name = proto.String([]string{"cpus", "mem", "cpus", "", "", "gpus"}[kind])
		r.Type = mesos.Value_SCALAR.Enum()
		// Either a whole number of thousandths, or a float that must round.
		v.scalar = rapid.Int64Range(0, 5000).Draw(t, "scalar")
		f := float64(v.scalar) / 1000
		if v.scalar > 0 && rapid.Bool().Draw(t, "jitter") {
			f += 0.0001 * float64(rapid.IntRange(-4, 4).Draw(t, "j"))
		}
		r.Scalar = &mesos.Value_Scalar{Value: proto.Float64(f)}
	case 2:
		r.Name = proto.String("ports")
		r.Type = mesos.Value_RANGES.Enum()
		n := rapid.IntRange(0, 4).Draw(t, "nranges")
		var rs []*mesos.Value_Range
		var lo uint64
		for range n {
			b := lo + uint64(rapid.IntRange(0, 6).Draw(t, "gap"))
			e := b + uint64(rapid.IntRange(0, 6).Draw(t, "width"))
			rs = append(rs, &mesos.Value_Range{Begin: proto.Uint64(b), End: proto.Uint64(e)})
			for i := b; i <= e; i++ {
				v.ints[i] = true
			}
			lo = e + 1 // no overlap (adjacent is allowed)
		}
		// Any order is valid input.
		rs = rapid.Permutation(rs).Draw(t, "order")
		r.Ranges = &mesos.Value_Ranges{Range: rs}
	case 3:
		r.Name = proto.String("disks")
		r.Type = mesos.Value_SET.Enum()
		items := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "c", "d", "e"}), 0, 5, rapid.ID).Draw(t, "items")
		for _, s := range items {
			v.items[s] = true
		}
		r.Set = &mesos.Value_Set{Item: items}
	case 4:
		// Persistent volume: indivisible, dynamically reserved, never revocable.
		id := rapid.SampledFrom([]string{"v1", "v2"}).Draw(t, "vol")
		size := int64(rapid.IntRange(1, 2).Draw(t, "size")) * 1000
		r = volume(id, float64(size)/1000, false)
		rev, st = false, "db"
		v.count = 1
		k := okey{name: "disk", stack: st, vol: id, size: size}
		return r, k, v
	}
	if rev {
		r.Revocable = &mesos.Resource_RevocableInfo{}
	}
	return r, okey{name: r.GetName(), stack: st, rev: rev}, v
}

func genResources(t *rapid.T, label string) (Resources, oracle) {
	n := rapid.IntRange(0, 8).Draw(t, label+"_n")
	var ps []*mesos.Resource
	o := oracle{}
	for range n {
		p, k, v := genEntry(t)
		ps = append(ps, p)
		o.add(k, v)
	}
	// Half the time, feed the pre-refinement format where it exists.
	if rapid.Bool().Draw(t, label+"_pre") {
		ps = ToPreRefinement(ps)
	}
	r, err := FromProto(ps)
	if err != nil {
		t.Fatalf("FromProto(%v): %v", ps, err)
	}
	return r, o
}

func checkModel(t *rapid.T, what string, r Resources, want oracle) {
	t.Helper()
	if got := toOracle(t, r); !got.equal(want) {
		t.Fatalf("%s = %v\n model: %v\n oracle: %v", what, r, got, want)
	}
}

func TestPropertyOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, oa := genResources(t, "a")
		b, ob := genResources(t, "b")
		checkModel(t, "a", a, oa)
		checkModel(t, "b", b, ob)
		checkModel(t, "a+b", a.Add(b), oa.plus(ob))
		checkModel(t, "a-b", a.Subtract(b), oa.minus(ob))
		if got, want := a.Contains(b), oa.contains(ob); got != want {
			t.Fatalf("(%v).Contains(%v) = %v, oracle %v", a, b, got, want)
		}
		if got, want := a.Equal(b), oa.equal(ob); got != want {
			t.Fatalf("(%v).Equal(%v) = %v, oracle %v", a, b, got, want)
		}
		for _, name := range []string{"cpus", "mem", "gpus", "disk"} {
			var want int64
			for k, v := range oa {
				if k.name == name {
					want += v.scalar + k.size*v.count
				}
			}
			if got := a.Scalar(name); got != fromFixed(want) {
				t.Fatalf("Scalar(%s) of %v = %v, oracle %v", name, a, got, fromFixed(want))
			}
		}
	})
}

func TestPropertyLaws(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, _ := genResources(t, "a")
		b, _ := genResources(t, "b")
		c, _ := genResources(t, "c")
		ab := a.Add(b)
		// Ranges and sets are sets, not multisets: a+b-b == a only holds
		// when b's ranges and set items are disjoint from a's.
		bd := b.Subtract(a.Filter(func(r *mesos.Resource) bool { return r.GetType() != mesos.Value_SCALAR }))
		if got := a.Add(bd).Subtract(bd); !got.Equal(a) {
			t.Fatalf("a+b-b != a: %v + %v - b = %v", a, bd, got)
		}
		if !ab.Equal(b.Add(a)) {
			t.Fatalf("a+b != b+a")
		}
		if !ab.Add(c).Equal(a.Add(b.Add(c))) {
			t.Fatalf("(a+b)+c != a+(b+c)")
		}
		if !ab.Contains(a) || !ab.Contains(b) || !a.Contains(a) || !a.Contains(Resources{}) {
			t.Fatalf("containment of parts")
		}
		if !a.Contains(a.Subtract(b)) {
			t.Fatalf("a does not contain a-b")
		}
		if !a.Subtract(a).IsEmpty() {
			t.Fatalf("a-a not empty")
		}
		if a.Contains(b) != a.Subtract(b).Add(b).Equal(a) {
			// a ⊇ b exactly when removing and re-adding b restores a.
			t.Fatalf("Contains disagrees with subtract/add on %v, %v", a, b)
		}
		if a.Contains(b) && b.Contains(a) && !a.Equal(b) {
			t.Fatalf("antisymmetry")
		}
		// Partitions.
		if !a.Unreserved().Add(a.Reserved()).Equal(a) || !a.Revocable().Add(a.NonRevocable()).Equal(a) {
			t.Fatalf("filters do not partition %v", a)
		}
		if !a.Contains(a.AllocatableTo("a/b")) || !a.AllocatableTo("a/b").Contains(a.AllocatableTo("a")) {
			t.Fatalf("AllocatableTo")
		}
		// Representations round-trip.
		if back, err := FromProto(a.Proto()); err != nil || !back.Equal(a) {
			t.Fatalf("FromProto(Proto()) = %v, %v; want %v", back, err, a)
		}
		if back, err := FromProto(ToPreRefinement(a.Proto())); err != nil || !back.Equal(a) {
			t.Fatalf("FromProto(ToPreRefinement()) = %v, %v; want %v", back, err, a)
		}
		if back, err := FromProto(ToEndpointFormat(a.Proto())); err != nil || !back.Equal(a) {
			t.Fatalf("FromProto(ToEndpointFormat()) = %v, %v; want %v", back, err, a)
		}
		text := a.Filter(isTextual)
		if back, err := Parse(text.String(), "*"); err != nil || !back.Equal(text) {
			t.Fatalf("Parse(%q) = %v, %v", text.String(), back, err)
		}
		if alloc := a.AllocatedTo("x"); !alloc.WithoutAllocationInfo().Equal(a) || alloc.Len() != a.Len() {
			t.Fatalf("allocation info round trip")
		}
	})
}

// isTextual reports whether r can be written in the --resources syntax.
func isTextual(r *mesos.Resource) bool {
	return r.Revocable == nil && r.Disk == nil && r.Shared == nil && r.AllocationInfo == nil &&
		r.ProviderId == nil && len(r.Reservations) <= 1 && allStatic(r.Reservations)
}
