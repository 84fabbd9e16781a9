package resources

import (
	"slices"

	"mezzo/api/mesos"
)

// New validates rs (either reservation format) and returns them normalized:
// equal identities merged, empty entries dropped. rs is not retained.
func New(rs ...*mesos.Resource) (Resources, error) { return FromProto(rs) }

// FromProto is New for a slice: it accepts the pre-refinement (role +
// reservation) and post-refinement (reservations[]) formats, upgrading the
// former, and rejects resources that mix them inconsistently.
func FromProto(rs []*mesos.Resource) (Resources, error) {
	if err := Validate(rs); err != nil {
		return Resources{}, err
	}
	items := make([]*item, 0, len(rs))
	for _, r := range rs {
		items = append(items, newItem(r, reservationStack(r)))
	}
	return build(items), nil
}

// build sorts items, merges equal keys and drops empty ones. It takes
// ownership of the slice.
func build(items []*item) Resources {
	slices.SortStableFunc(items, compareItems)
	out := items[:0]
	for _, it := range items {
		if n := len(out); n > 0 && out[n-1].key == it.key {
			out[n-1] = combine(out[n-1], it)
			continue
		}
		out = append(out, it)
	}
	kept := out[:0]
	for _, it := range out {
		if !it.empty() {
			kept = append(kept, it)
		}
	}
	if len(kept) == 0 {
		return Resources{}
	}
	return Resources{items: kept}
}

// Proto returns deep copies of the resources in the post-refinement format
// (reservations[]), sorted by name. Shared resources appear once; other
// indivisible resources (persistent volumes, MOUNT disks) once per copy.
func (r Resources) Proto() []*mesos.Resource {
	if len(r.items) == 0 {
		return nil
	}
	out := make([]*mesos.Resource, 0, len(r.items))
	for _, it := range r.items {
		for range it.copies() {
			out = append(out, it.protoOne())
		}
	}
	return out
}

// Add returns the sum r + o.
func (r Resources) Add(o Resources) Resources {
	if len(o.items) == 0 {
		return r
	}
	if len(r.items) == 0 {
		return o
	}
	a, b := r.items, o.items
	out := make([]*item, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := compareItems(a[i], b[j]); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, combine(a[i], b[j]))
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	out = append(out, b[j:]...)
	return Resources{items: out}
}

// Subtract returns r - o: whatever of o is present in r is removed (scalars
// saturate at zero, ranges are split, sets lose items); entries that become
// empty vanish. Parts of o not in r are ignored.
func (r Resources) Subtract(o Resources) Resources {
	if len(o.items) == 0 || len(r.items) == 0 {
		return r
	}
	a, b := r.items, o.items
	out := make([]*item, 0, len(a))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := compareItems(a[i], b[j]); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			j++
		default:
			if d := minus(a[i], b[j]); d != nil {
				out = append(out, d)
			}
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	if len(out) == 0 {
		return Resources{}
	}
	return Resources{items: out}
}

// Contains reports whether r holds at least o, identity by identity.
func (r Resources) Contains(o Resources) bool {
	a, b := r.items, o.items
	if len(b) > len(a) {
		return false
	}
	i := 0
	for _, want := range b {
		for i < len(a) && a[i].key < want.key {
			i++
		}
		if i >= len(a) || a[i].key != want.key || !covers(a[i], want) {
			return false
		}
		i++
	}
	return true
}

// Equal reports whether r and o hold exactly the same resources.
func (r Resources) Equal(o Resources) bool {
	if len(r.items) != len(o.items) {
		return false
	}
	for i, a := range r.items {
		b := o.items[i]
		if a != b && (a.key != b.key || !sameValue(a, b)) {
			return false
		}
	}
	return true
}

// IsEmpty reports whether r holds nothing.
func (r Resources) IsEmpty() bool { return len(r.items) == 0 }

// Len is the number of distinct entries (identities) in r.
func (r Resources) Len() int { return len(r.items) }

// Scalar returns the sum of the scalar resource name across all roles,
// reservations and revocability (0 when absent).
func (r Resources) Scalar(name string) float64 {
	var sum int64
	for _, it := range r.items {
		if it.name == name {
			sum = addFixed(sum, it.scalarTotal())
		}
	}
	return fromFixed(sum)
}

// Quantities returns the scalar sums by name (like Scalar for every name).
func (r Resources) Quantities() map[string]float64 {
	fixed := make(map[string]int64)
	for _, it := range r.items {
		if it.typ == mesos.Value_SCALAR {
			fixed[it.name] = addFixed(fixed[it.name], it.scalarTotal())
		}
	}
	out := make(map[string]float64, len(fixed))
	for k, v := range fixed {
		out[k] = fromFixed(v)
	}
	return out
}

// Names returns the distinct resource names in r, sorted.
func (r Resources) Names() []string {
	var out []string
	for _, it := range r.items {
		if n := len(out); n == 0 || out[n-1] != it.name {
			out = append(out, it.name)
		}
	}
	return out
}
