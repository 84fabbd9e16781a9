package resources

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// item is one normalized entry of a Resources value: an identity and the
// quantity held of it. Items are immutable once built and are shared freely
// between Resources values.
type item struct {
	// key orders items and decides which entries merge: name, type, the
	// identity fields, and for atomic items the value as well.
	key  string
	name string
	typ  mesos.Value_Type
	// meta holds only the identity fields (provider_id, allocation_info,
	// reservations, disk, revocable, shared) in post-refinement format; nil
	// when none is set. Never mutated.
	meta *mesos.Resource

	role      string // role of the last reservation; "" when unreserved
	allocRole string // allocation_info.role; "" when none
	hasAlloc  bool
	revocable bool
	throttle  bool // revocable with throttle_info: an estimator's slack
	shared    bool
	// atomic items (shared resources, persistent volumes, MOUNT/BLOCK/RAW
	// disks) are indivisible: Mesos never merges them, so we count copies.
	atomic bool
	count  int64 // copies held; always 1 for non-atomic items

	scalar int64    // thousandths, SCALAR only
	ranges []span   // normalized, RANGES only
	set    []string // sorted, unique, SET only
}

// empty reports whether the item holds nothing (and so must be dropped).
func (it *item) empty() bool {
	if it.count <= 0 {
		return true
	}
	switch it.typ {
	case mesos.Value_SCALAR:
		return it.scalar <= 0
	case mesos.Value_RANGES:
		return len(it.ranges) == 0
	case mesos.Value_SET:
		return len(it.set) == 0
	}
	return true
}

// isAtomic reports whether Mesos treats resources with these identity fields
// as indivisible (its addable/subtractable rules).
func isAtomic(meta *mesos.Resource) bool {
	if meta == nil {
		return false
	}
	if meta.Shared != nil {
		return true
	}
	if d := meta.Disk; d != nil {
		if d.Persistence != nil {
			return true
		}
		if s := d.Source; s != nil {
			switch s.GetType() {
			case mesos.Resource_DiskInfo_Source_MOUNT, mesos.Resource_DiskInfo_Source_BLOCK:
				return true
			case mesos.Resource_DiskInfo_Source_RAW:
				// RAW disks are exclusive only once they have an identity.
				return s.Id != nil
			}
		}
	}
	return false
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// appendIdentity appends an unambiguous encoding of the identity fields to
// b. The common fields are encoded by hand (this runs on every AllocatedTo);
// the rare, deep ones (disk info, labels) through deterministic proto
// encoding. Every variable-length part is length-prefixed.
func appendIdentity(b []byte, m *mesos.Resource) []byte {
	if m == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	str := func(b []byte, present bool, s string) []byte {
		if !present {
			return append(b, 0)
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	msg := func(b []byte, x proto.Message, present bool) []byte {
		if !present {
			return append(b, 0)
		}
		mb, err := deterministic.Marshal(x)
		if err != nil {
			// Cannot happen for messages built from decoded fields; the
			// text form still keeps distinct values distinct.
			mb = []byte(fmt.Sprint(x))
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(mb)))
		return append(b, mb...)
	}
	a := m.AllocationInfo
	b = str(b, a != nil, "")
	if a != nil {
		b = str(b, a.Role != nil, a.GetRole())
	}
	b = binary.AppendUvarint(b, uint64(len(m.Reservations)))
	for _, r := range m.Reservations {
		b = append(b, byte(r.GetType()))
		b = str(b, r.Role != nil, r.GetRole())
		b = str(b, r.Principal != nil, r.GetPrincipal())
		b = appendLabels(b, r.Labels)
	}
	b = str(b, m.ProviderId != nil, m.GetProviderId().GetValue())
	b = msg(b, m.Disk, m.Disk != nil)
	var flags byte
	if m.Revocable != nil {
		flags |= 1
	}
	if m.Shared != nil {
		flags |= 2
	}
	if m.Revocable.GetThrottleInfo() != nil {
		flags |= 4 // throttle-able slack never merges with a lent reservation
	}
	return append(b, flags)
}

// newItem builds an item from a validated resource whose reservation stack
// is given in post-refinement form (role and reservation are ignored).
// The resource is not retained.
func newItem(r *mesos.Resource, reservations []*mesos.Resource_ReservationInfo) *item {
	it := &item{name: r.GetName(), typ: r.GetType(), count: 1}
	if r.ProviderId != nil || r.AllocationInfo != nil || len(reservations) > 0 ||
		r.Disk != nil || r.Revocable != nil || r.Shared != nil {
		m := &mesos.Resource{
			ProviderId:     r.ProviderId,
			AllocationInfo: r.AllocationInfo,
			Reservations:   reservations,
			Disk:           r.Disk,
			Revocable:      r.Revocable,
			Shared:         r.Shared,
		}
		it.meta = cloneMeta(m) // by hand for the common fields: every launch converts its task's resources
	}
	switch it.typ {
	case mesos.Value_SCALAR:
		it.scalar = toFixed(r.GetScalar().GetValue())
	case mesos.Value_RANGES:
		rs := r.GetRanges().GetRange()
		s := make([]span, len(rs))
		for i, x := range rs {
			s[i] = span{x.GetBegin(), x.GetEnd()}
		}
		it.ranges = normalizeSpans(s)
	case mesos.Value_SET:
		s := slices.Clone(r.GetSet().GetItem())
		slices.Sort(s)
		it.set = slices.Compact(s)
	}
	it.finish()
	return it
}

// finish derives the cached fields and the key from name, typ, meta and the
// value.
func (it *item) finish() {
	m := it.meta
	it.role, it.allocRole, it.hasAlloc, it.revocable, it.throttle, it.shared = "", "", false, false, false, false
	if m != nil {
		if n := len(m.Reservations); n > 0 {
			it.role = m.Reservations[n-1].GetRole()
		}
		if m.AllocationInfo != nil {
			it.hasAlloc = true
			it.allocRole = m.AllocationInfo.GetRole()
		}
		it.revocable = m.Revocable != nil
		it.throttle = m.Revocable.GetThrottleInfo() != nil
		it.shared = m.Shared != nil
	}
	it.atomic = isAtomic(m)
	if !it.atomic {
		it.count = 1
	}

	b := make([]byte, 0, 32)
	b = append(b, it.name...)
	b = append(b, 0, byte(it.typ))
	// The role makes unreserved entries sort first and reserved ones by
	// role, so String() reads naturally; roles contain no NUL.
	b = append(b, it.role...)
	b = append(b, 0)
	b = appendIdentity(b, m)
	if it.atomic {
		b = it.appendValue(b)
	}
	it.key = string(b)
}

// appendLabels encodes labels as a sorted list: Mesos compares Labels
// irrespective of order.
func appendLabels(b []byte, l *mesos.Labels) []byte {
	if l == nil {
		return append(b, 0)
	}
	ls := slices.Clone(l.GetLabels())
	enc := make([]string, 0, len(ls))
	for _, x := range ls {
		var e []byte
		e = binary.AppendUvarint(e, uint64(len(x.GetKey())))
		e = append(e, x.GetKey()...)
		if x.Value != nil {
			e = append(e, 1)
			e = binary.AppendUvarint(e, uint64(len(x.GetValue())))
			e = append(e, x.GetValue()...)
		} else {
			e = append(e, 0)
		}
		enc = append(enc, string(e))
	}
	slices.Sort(enc)
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(len(enc)))
	for _, e := range enc {
		b = append(b, e...)
	}
	return b
}

// appendValue appends an unambiguous encoding of the value to b.
func (it *item) appendValue(b []byte) []byte {
	switch it.typ {
	case mesos.Value_SCALAR:
		b = binary.BigEndian.AppendUint64(b, uint64(it.scalar))
	case mesos.Value_RANGES:
		for _, s := range it.ranges {
			b = binary.BigEndian.AppendUint64(b, s.b)
			b = binary.BigEndian.AppendUint64(b, s.e)
		}
	case mesos.Value_SET:
		for _, s := range it.set {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

// withMeta returns a copy of it whose identity fields are edited by f. f
// receives a shallow copy of meta (never nil): it may replace fields but
// must not modify the sub-messages, which are shared with it.
func (it *item) withMeta(f func(m *mesos.Resource)) *item {
	c := *it
	m := &mesos.Resource{}
	if o := it.meta; o != nil {
		m.ProviderId = o.ProviderId
		m.AllocationInfo = o.AllocationInfo
		m.Reservations = o.Reservations
		m.Disk = o.Disk
		m.Revocable = o.Revocable
		m.Shared = o.Shared
	}
	f(m)
	if m.ProviderId == nil && m.AllocationInfo == nil && len(m.Reservations) == 0 &&
		m.Disk == nil && m.Revocable == nil && m.Shared == nil {
		m = nil
	}
	c.meta = m
	c.finish()
	return &c
}

// combine returns a+b for two items with the same key.
func combine(a, b *item) *item {
	c := *a
	if a.atomic {
		c.count = a.count + b.count
		return &c
	}
	switch a.typ {
	case mesos.Value_SCALAR:
		c.scalar = addFixed(a.scalar, b.scalar)
	case mesos.Value_RANGES:
		c.ranges = unionSpans(a.ranges, b.ranges)
	case mesos.Value_SET:
		c.set = unionSets(a.set, b.set)
	}
	return &c
}

// minus returns a-b for two items with the same key, or nil when nothing
// is left.
func minus(a, b *item) *item {
	c := *a
	if a.atomic {
		c.count = a.count - b.count
	} else {
		switch a.typ {
		case mesos.Value_SCALAR:
			c.scalar = a.scalar - b.scalar
		case mesos.Value_RANGES:
			c.ranges = subtractSpans(a.ranges, b.ranges)
		case mesos.Value_SET:
			c.set = subtractSets(a.set, b.set)
		}
	}
	if c.empty() {
		return nil
	}
	return &c
}

// covers reports whether a holds at least b (same key).
func covers(a, b *item) bool {
	if a.atomic {
		return a.count >= b.count
	}
	switch a.typ {
	case mesos.Value_SCALAR:
		return a.scalar >= b.scalar
	case mesos.Value_RANGES:
		return subsetSpans(b.ranges, a.ranges)
	case mesos.Value_SET:
		return subsetSets(b.set, a.set)
	}
	return false
}

// sameValue reports whether two items with the same key hold the same amount.
func sameValue(a, b *item) bool {
	if a.count != b.count {
		return false
	}
	switch a.typ {
	case mesos.Value_SCALAR:
		return a.scalar == b.scalar
	case mesos.Value_RANGES:
		return slices.Equal(a.ranges, b.ranges)
	case mesos.Value_SET:
		return slices.Equal(a.set, b.set)
	}
	return true
}

// scalarTotal is the scalar amount the item contributes to sums: shared
// resources count once however many copies are held (as in Mesos).
func (it *item) scalarTotal() int64 {
	if it.typ != mesos.Value_SCALAR {
		return 0
	}
	if it.atomic && !it.shared {
		return it.scalar * it.count
	}
	return it.scalar
}

// protoOne returns a fresh proto of one copy of the item.
func (it *item) protoOne() *mesos.Resource {
	p := cloneMeta(it.meta)
	p.Name = proto.String(it.name)
	p.Type = it.typ.Enum()
	switch it.typ {
	case mesos.Value_SCALAR:
		p.Scalar = &mesos.Value_Scalar{Value: proto.Float64(fromFixed(it.scalar))}
	case mesos.Value_RANGES:
		rs := make([]*mesos.Value_Range, len(it.ranges))
		for i, s := range it.ranges {
			rs[i] = &mesos.Value_Range{Begin: proto.Uint64(s.b), End: proto.Uint64(s.e)}
		}
		p.Ranges = &mesos.Value_Ranges{Range: rs}
	case mesos.Value_SET:
		p.Set = &mesos.Value_Set{Item: slices.Clone(it.set)}
	}
	return p
}

// cloneMeta deep-copies an item's identity fields into a new Resource
// (empty if meta is nil). The fields every offer and allocation carries
// (allocation_info, reservations, revocable) are copied by hand:
// reflection-based proto.Clone was a third of the cost of converting
// resources to protos, which a master does for every offer. Rarer fields,
// and any message carrying unknown fields, go through proto.Clone.
func cloneMeta(m *mesos.Resource) *mesos.Resource {
	if m == nil {
		return &mesos.Resource{}
	}
	if len(m.ProtoReflect().GetUnknown()) > 0 {
		return proto.Clone(m).(*mesos.Resource)
	}
	p := &mesos.Resource{}
	if a := m.AllocationInfo; a != nil {
		if len(a.ProtoReflect().GetUnknown()) > 0 {
			p.AllocationInfo = proto.Clone(a).(*mesos.Resource_AllocationInfo)
		} else {
			p.AllocationInfo = &mesos.Resource_AllocationInfo{Role: cloneString(a.Role)}
		}
	}
	if len(m.Reservations) > 0 {
		p.Reservations = make([]*mesos.Resource_ReservationInfo, len(m.Reservations))
		for i, r := range m.Reservations {
			p.Reservations[i] = cloneReservation(r)
		}
	}
	if m.Revocable != nil {
		p.Revocable = &mesos.Resource_RevocableInfo{}
		if m.Revocable.ThrottleInfo != nil || len(m.Revocable.ProtoReflect().GetUnknown()) > 0 {
			p.Revocable = proto.Clone(m.Revocable).(*mesos.Resource_RevocableInfo)
		}
	}
	if m.ProviderId != nil {
		p.ProviderId = proto.Clone(m.ProviderId).(*mesos.ResourceProviderID)
	}
	if m.Disk != nil {
		p.Disk = proto.Clone(m.Disk).(*mesos.Resource_DiskInfo)
	}
	if m.Shared != nil {
		p.Shared = proto.Clone(m.Shared).(*mesos.Resource_SharedInfo)
	}
	return p
}

func cloneReservation(r *mesos.Resource_ReservationInfo) *mesos.Resource_ReservationInfo {
	if r == nil || len(r.ProtoReflect().GetUnknown()) > 0 {
		if r == nil {
			return nil
		}
		return proto.Clone(r).(*mesos.Resource_ReservationInfo)
	}
	c := &mesos.Resource_ReservationInfo{Role: cloneString(r.Role), Principal: cloneString(r.Principal)}
	if r.Type != nil {
		c.Type = r.Type.Enum()
	}
	if r.Labels != nil {
		c.Labels = proto.Clone(r.Labels).(*mesos.Labels)
	}
	return c
}

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	return proto.String(*s)
}

// copies is how many protos the item expands to: shared resources appear
// once (Mesos keeps a share count), other atomic items once per copy.
func (it *item) copies() int {
	if it.atomic && !it.shared {
		return int(it.count)
	}
	return 1
}

func compareItems(a, b *item) int { return strings.Compare(a.key, b.key) }
