package resources

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// Offer operations that change resources (RESERVE, UNRESERVE, CREATE,
// DESTROY, GROW_VOLUME, SHRINK_VOLUME) are conversions, as in Mesos's
// ResourceConversion: some resources are consumed and replaced by others of
// the same quantity. Apply performs them on an agent's total or on offered
// resources; Conversion tells the allocator what moved. Both are pure and
// check only what keeps the result well formed (quantities are preserved,
// no unreserved volume is made); who may do what is ValidateOperation's job.

// NotAvailableError is the error of Apply when an operation consumes
// resources that are not there (Mesos answers 409 Conflict on the operator
// endpoints for it; a malformed operation is a plain error, 400).
type NotAvailableError struct {
	Field     string    // the operation field that asked, e.g. "reserve.resources[0]"
	Wanted    Resources // what the step consumes
	Available Resources // what was left when it was applied
}

func (e *NotAvailableError) Error() string {
	return fmt.Sprintf("%s: resources %s are not available in %s", e.Field, e.Wanted, e.Available)
}

// step is one conversion of an operation.
type step struct {
	field               string
	consumed, converted Resources
	// after, if set, checks the result of the step.
	after func(Resources) error
}

// Apply returns r with the operation applied, as Mesos's Resources::apply:
//
//   - RESERVE: each resource, with its last reservation popped, is replaced
//     by the resource (one reservation pushed). With reserve.source set
//     (reservation update, Mesos 1.10), source is replaced by resources as a
//     whole; both must hold the same unreserved quantities.
//   - UNRESERVE: the inverse, each resource is replaced by itself with its
//     last (dynamic) reservation popped.
//   - CREATE: each volume's disk (without persistence, volume and sharing)
//     is replaced by the volume.
//   - DESTROY: the inverse; a shared volume must not be left with copies.
//   - GROW_VOLUME: the volume and addition (disk matching the volume's) are
//     replaced by the volume grown by the addition.
//   - SHRINK_VOLUME: the volume is replaced by the volume shrunk by subtract
//     and subtract's worth of its disk.
//   - LAUNCH, LAUNCH_GROUP: r unchanged (the master accounts for launches).
//
// Steps are applied one resource at a time, in order. Operations that are
// malformed, of unknown type or not supported (CREATE_DISK, DESTROY_DISK:
// there are no resource providers) are errors, and so are resources that
// are not available (a *NotAvailableError naming the field); on error r is
// returned unchanged.
func (r Resources) Apply(op *mesos.Offer_Operation) (Resources, error) {
	steps, err := conversions(op)
	if err != nil {
		return r, err
	}
	out := r
	for _, s := range steps {
		if !out.Contains(s.consumed) {
			return r, &NotAvailableError{Field: s.field, Wanted: s.consumed, Available: out}
		}
		out = out.Subtract(s.consumed).Add(s.converted)
		if s.after != nil {
			if err := s.after(out); err != nil {
				return r, err
			}
		}
	}
	return out, nil
}

// Conversion returns the net effect of the operation: what it consumes and
// what it produces in their place, so that r.Apply(op) equals
// r.Subtract(consumed).Add(converted) whenever Apply succeeds. A step that
// consumes what an earlier step of the same operation produced (a RESERVE
// that reserves and refines in one go) cancels out. The allocator's
// UpdateAllocation moves consumed to converted in an allocation without
// recovering it. LAUNCH and LAUNCH_GROUP convert nothing. The errors are
// Apply's for malformed operations; availability is not checked here.
func Conversion(op *mesos.Offer_Operation) (consumed, converted Resources, err error) {
	steps, err := conversions(op)
	if err != nil {
		return Resources{}, Resources{}, err
	}
	for _, s := range steps {
		// The part of this step's input that earlier steps produced.
		fromEarlier := s.consumed.Subtract(s.consumed.Subtract(converted))
		consumed = consumed.Add(s.consumed.Subtract(fromEarlier))
		converted = converted.Subtract(fromEarlier).Add(s.converted)
	}
	return consumed, converted, nil
}

// conversions decodes an operation into its steps.
func conversions(op *mesos.Offer_Operation) ([]step, error) {
	if op == nil {
		return nil, fmt.Errorf("operation is null")
	}
	switch t := op.GetType(); t {
	case mesos.Offer_Operation_LAUNCH, mesos.Offer_Operation_LAUNCH_GROUP:
		return nil, nil
	case mesos.Offer_Operation_RESERVE:
		if op.Reserve == nil {
			return nil, fmt.Errorf("reserve: must be set for a RESERVE operation")
		}
		return reserveSteps(op.Reserve)
	case mesos.Offer_Operation_UNRESERVE:
		if op.Unreserve == nil {
			return nil, fmt.Errorf("unreserve: must be set for an UNRESERVE operation")
		}
		return unreserveSteps(op.Unreserve.Resources)
	case mesos.Offer_Operation_CREATE:
		if op.Create == nil {
			return nil, fmt.Errorf("create: must be set for a CREATE operation")
		}
		return volumeSteps("create.volumes", op.Create.Volumes, false)
	case mesos.Offer_Operation_DESTROY:
		if op.Destroy == nil {
			return nil, fmt.Errorf("destroy: must be set for a DESTROY operation")
		}
		return volumeSteps("destroy.volumes", op.Destroy.Volumes, true)
	case mesos.Offer_Operation_GROW_VOLUME:
		if op.GrowVolume == nil {
			return nil, fmt.Errorf("grow_volume: must be set for a GROW_VOLUME operation")
		}
		return growSteps(op.GrowVolume)
	case mesos.Offer_Operation_SHRINK_VOLUME:
		if op.ShrinkVolume == nil {
			return nil, fmt.Errorf("shrink_volume: must be set for a SHRINK_VOLUME operation")
		}
		return shrinkSteps(op.ShrinkVolume)
	case mesos.Offer_Operation_CREATE_DISK, mesos.Offer_Operation_DESTROY_DISK:
		return nil, fmt.Errorf("type: %s is not supported (there are no resource providers)", t)
	default:
		return nil, fmt.Errorf("type: unknown offer operation type %s", t)
	}
}

// one decodes a single resource of an operation into its item; zero
// quantities are refused (they would make the step a silent no-op).
func one(field string, p *mesos.Resource) (*item, error) {
	if err := validateOne(p); err != nil {
		return nil, fmt.Errorf("%s %q: %w", field, p.GetName(), err)
	}
	r := build([]*item{newItem(p, reservationStack(p))})
	if len(r.items) != 1 {
		return nil, fmt.Errorf("%s %q: must not be empty", field, p.GetName())
	}
	return r.items[0], nil
}

// dynamicTop reports whether the item's last reservation is dynamic.
func (it *item) dynamicTop() bool {
	if it.meta == nil || len(it.meta.Reservations) == 0 {
		return false
	}
	return it.meta.Reservations[len(it.meta.Reservations)-1].GetType() == mesos.Resource_ReservationInfo_DYNAMIC
}

func (it *item) isVolume() bool { return it.meta.GetDisk().GetPersistence() != nil }

func reserveSteps(rv *mesos.Offer_Operation_Reserve) ([]step, error) {
	if len(rv.Source) > 0 {
		source, err := FromProto(rv.Source)
		if err != nil {
			return nil, fmt.Errorf("reserve.source: %w", err)
		}
		target, err := FromProto(rv.Resources)
		if err != nil {
			return nil, fmt.Errorf("reserve.resources: %w", err)
		}
		if !source.ToUnreserved().Equal(target.ToUnreserved()) {
			return nil, fmt.Errorf("reserve.source: %s and reserve.resources %s must hold the same quantities",
				source, target)
		}
		return []step{{field: "reserve.source", consumed: source, converted: target}}, nil
	}
	steps := make([]step, 0, len(rv.Resources))
	for i, p := range rv.Resources {
		field := fmt.Sprintf("reserve.resources[%d]", i)
		it, err := one(field, p)
		if err != nil {
			return nil, err
		}
		if !it.dynamicTop() {
			return nil, fmt.Errorf("%s: %s is not dynamically reserved", field, single(it))
		}
		r := single(it)
		steps = append(steps, step{field: field, consumed: r.PopReservation(), converted: r})
	}
	return steps, nil
}

func unreserveSteps(ps []*mesos.Resource) ([]step, error) {
	steps := make([]step, 0, len(ps))
	for i, p := range ps {
		field := fmt.Sprintf("unreserve.resources[%d]", i)
		it, err := one(field, p)
		if err != nil {
			return nil, err
		}
		if !it.dynamicTop() {
			return nil, fmt.Errorf("%s: %s is not dynamically reserved", field, single(it))
		}
		if it.isVolume() {
			return nil, fmt.Errorf("%s: %s is a persistent volume: destroy it before unreserving its disk", field, single(it))
		}
		r := single(it)
		steps = append(steps, step{field: field, consumed: r, converted: r.PopReservation()})
	}
	return steps, nil
}

// volumeSteps builds CREATE steps (disk → volume) or, with destroy set,
// DESTROY steps (volume → disk).
func volumeSteps(field string, ps []*mesos.Resource, destroy bool) ([]step, error) {
	steps := make([]step, 0, len(ps))
	for i, p := range ps {
		f := fmt.Sprintf("%s[%d]", field, i)
		it, err := one(f, p)
		if err != nil {
			return nil, err
		}
		if !it.isVolume() {
			return nil, fmt.Errorf("%s: %s is not a persistent volume (disk.persistence is not set)", f, single(it))
		}
		vol, disk := single(it), single(it.diskOf())
		if !destroy {
			steps = append(steps, step{field: f, consumed: disk, converted: vol})
			continue
		}
		if !it.shared {
			steps = append(steps, step{field: f, consumed: vol, converted: disk})
			continue
		}
		steps = append(steps, step{field: f, consumed: vol, converted: disk, after: func(r Resources) error {
			// A shared volume is held once per user: destroying one copy
			// would leave the others pointing at nothing.
			if r.Contains(vol) {
				return fmt.Errorf("%s: persistent volume %s cannot be destroyed: other shared copies of it are in use", f, vol)
			}
			return nil
		}})
	}
	return steps, nil
}

// diskOf returns the disk a volume item was created from: persistence,
// volume and sharing removed, reservations kept.
func (it *item) diskOf() *item {
	return it.withMeta(func(m *mesos.Resource) {
		m.Disk = stripVolume(m.Disk)
		m.Shared = nil
	})
}

// withScalar returns a copy of a scalar item holding v thousandths.
func (it *item) withScalar(v int64) *item {
	c := *it
	c.scalar = v
	c.count = 1
	c.finish() // indivisible items have their value in the key
	return &c
}

func growSteps(g *mesos.Offer_Operation_GrowVolume) ([]step, error) {
	if g.Volume == nil {
		return nil, fmt.Errorf("grow_volume.volume: must be set")
	}
	if g.Addition == nil {
		return nil, fmt.Errorf("grow_volume.addition: must be set")
	}
	vol, err := one("grow_volume.volume", g.Volume)
	if err != nil {
		return nil, err
	}
	add, err := one("grow_volume.addition", g.Addition)
	if err != nil {
		return nil, err
	}
	if !vol.isVolume() || vol.typ != mesos.Value_SCALAR {
		return nil, fmt.Errorf("grow_volume.volume: %s is not a persistent volume", single(vol))
	}
	if vol.shared {
		return nil, fmt.Errorf("grow_volume.volume: growing a shared persistent volume is not supported")
	}
	// The addition must be the very disk the volume sits on: same
	// reservations, same source, not shared, not a volume.
	if disk := vol.diskOf(); disk.atomic || add.atomic || disk.key != add.key {
		return nil, fmt.Errorf("grow_volume.addition: %s is not the disk of volume %s", single(add), single(vol))
	}
	grown := vol.withScalar(addFixed(vol.scalar, add.scalar))
	return []step{{
		field:     "grow_volume",
		consumed:  single(vol).Add(single(add)),
		converted: single(grown),
	}}, nil
}

func shrinkSteps(s *mesos.Offer_Operation_ShrinkVolume) ([]step, error) {
	if s.Volume == nil {
		return nil, fmt.Errorf("shrink_volume.volume: must be set")
	}
	if s.Subtract == nil || s.Subtract.Value == nil {
		return nil, fmt.Errorf("shrink_volume.subtract: must be set")
	}
	vol, err := one("shrink_volume.volume", s.Volume)
	if err != nil {
		return nil, err
	}
	if !vol.isVolume() || vol.typ != mesos.Value_SCALAR {
		return nil, fmt.Errorf("shrink_volume.volume: %s is not a persistent volume", single(vol))
	}
	if vol.shared {
		return nil, fmt.Errorf("shrink_volume.volume: shrinking a shared persistent volume is not supported")
	}
	if vol.meta.GetDisk().GetSource().GetType() == mesos.Resource_DiskInfo_Source_MOUNT {
		return nil, fmt.Errorf("shrink_volume.volume: shrinking a volume on a MOUNT disk is not supported")
	}
	v := s.Subtract.GetValue()
	if math.IsNaN(v) || math.IsInf(v, 0) || toFixed(v) <= 0 {
		return nil, fmt.Errorf("shrink_volume.subtract: %v must be greater than zero", v)
	}
	sub := toFixed(v)
	if sub >= vol.scalar {
		return nil, fmt.Errorf("shrink_volume.subtract: %v must be smaller than the volume's size %s",
			v, formatFixed(vol.scalar))
	}
	shrunk := vol.withScalar(vol.scalar - sub)
	freed := vol.diskOf().withScalar(sub)
	return []step{{
		field:     "shrink_volume",
		consumed:  single(vol),
		converted: single(shrunk).Add(single(freed)),
	}}, nil
}

// WithAllocationRole returns a deep copy of op whose resources (those of
// RESERVE, UNRESERVE, CREATE, DESTROY, GROW_VOLUME and SHRINK_VOLUME; launch
// operations are returned as copied) carry allocation_info for role where
// they carry none, as Mesos's master injects the offers' allocation role into
// a framework's operations before validating and applying them to offered
// resources. With role "" it clears allocation_info instead, for applying
// the operation to an agent's (unallocated) total.
func WithAllocationRole(op *mesos.Offer_Operation, role string) *mesos.Offer_Operation {
	if op == nil {
		return nil
	}
	c := proto.Clone(op).(*mesos.Offer_Operation)
	set := func(rs ...*mesos.Resource) {
		for _, r := range rs {
			switch {
			case r == nil:
			case role == "":
				r.AllocationInfo = nil
			case r.AllocationInfo == nil:
				r.AllocationInfo = &mesos.Resource_AllocationInfo{Role: proto.String(role)}
			}
		}
	}
	if x := c.Reserve; x != nil {
		set(x.Resources...)
		set(x.Source...)
	}
	if x := c.Unreserve; x != nil {
		set(x.Resources...)
	}
	if x := c.Create; x != nil {
		set(x.Volumes...)
	}
	if x := c.Destroy; x != nil {
		set(x.Volumes...)
	}
	if x := c.GrowVolume; x != nil {
		set(x.Volume, x.Addition)
	}
	if x := c.ShrinkVolume; x != nil {
		set(x.Volume)
	}
	return c
}
