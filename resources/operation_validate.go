package resources

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// OperationContext is what ValidateOperation needs to know about the caller
// and the agent. The zero value is an operator call with no principal on an
// agent without volumes.
type OperationContext struct {
	// Principal is the caller's principal, "" when there is none: for a
	// framework its FrameworkInfo.principal (as Mesos's master passes it,
	// whether or not it was authenticated), for an operator the
	// authenticated one. When set, reservations and volumes made must
	// carry it, and only its own reservations and volumes may be removed.
	Principal string
	// FrameworkRoles are the roles of the framework that sent the operation
	// in an ACCEPT; nil for operator API calls. A framework may reserve only
	// to its own roles; an operator only unallocated resources.
	FrameworkRoles []string
	// RefinementCapable is the framework's RESERVATION_REFINEMENT
	// capability; without it refined (multi-level) reservations are refused
	// (the framework was never offered any). Ignored for operators.
	RefinementCapable bool
	// SharedResourcesCapable is the framework's SHARED_RESOURCES
	// capability, needed to create shared volumes. Ignored for operators.
	SharedResourcesCapable bool
	// Volumes are the persistent volumes already on the agent (its
	// checkpointed resources will do: other entries are ignored), for the
	// persistence-ID uniqueness check and DESTROY / GROW / SHRINK.
	Volumes Resources
	// InUse are the resources the agent's tasks and executors use: a volume
	// in use cannot be destroyed.
	InUse Resources
}

func (c OperationContext) framework() bool { return c.FrameworkRoles != nil }

// ValidateOperation checks an offer operation (from an ACCEPT, or built
// from an operator call) as Mesos's master does before applying it. It
// judges the operation on its own; whether the resources are available is
// Apply's business. Every error names the offending field, e.g.
// `reserve.resources[0].reservations[0].role: ...`.
//
// LAUNCH and LAUNCH_GROUP pass: the master validates tasks elsewhere.
// CREATE_DISK and DESTROY_DISK are refused (no resource providers).
//
// Differences from Mesos: mezzo's agents all support hierarchical roles,
// refinement and volume resizing, so the agent capabilities are not checked;
// when the caller has a principal it may UNRESERVE and DESTROY only what it
// reserved or created (Mesos leaves that to its ACLs); persistence IDs must
// be non-empty and container paths relative without "..".
func ValidateOperation(op *mesos.Offer_Operation, c OperationContext) error {
	if op == nil {
		return fmt.Errorf("operation: must be set")
	}
	switch t := op.GetType(); t {
	case mesos.Offer_Operation_LAUNCH:
		if op.Launch == nil {
			return fmt.Errorf("launch: must be set for a LAUNCH operation")
		}
		return nil
	case mesos.Offer_Operation_LAUNCH_GROUP:
		if op.LaunchGroup == nil {
			return fmt.Errorf("launch_group: must be set for a LAUNCH_GROUP operation")
		}
		return nil
	case mesos.Offer_Operation_RESERVE:
		if op.Reserve == nil {
			return fmt.Errorf("reserve: must be set for a RESERVE operation")
		}
		return validateReserve(op.Reserve, c)
	case mesos.Offer_Operation_UNRESERVE:
		if op.Unreserve == nil {
			return fmt.Errorf("unreserve: must be set for an UNRESERVE operation")
		}
		return validateUnreserve(op.Unreserve, c)
	case mesos.Offer_Operation_CREATE:
		if op.Create == nil {
			return fmt.Errorf("create: must be set for a CREATE operation")
		}
		return validateCreate(op.Create, c)
	case mesos.Offer_Operation_DESTROY:
		if op.Destroy == nil {
			return fmt.Errorf("destroy: must be set for a DESTROY operation")
		}
		return validateDestroy(op.Destroy, c)
	case mesos.Offer_Operation_GROW_VOLUME:
		if op.GrowVolume == nil {
			return fmt.Errorf("grow_volume: must be set for a GROW_VOLUME operation")
		}
		return validateGrow(op.GrowVolume, c)
	case mesos.Offer_Operation_SHRINK_VOLUME:
		if op.ShrinkVolume == nil {
			return fmt.Errorf("shrink_volume: must be set for a SHRINK_VOLUME operation")
		}
		return validateShrink(op.ShrinkVolume, c)
	case mesos.Offer_Operation_CREATE_DISK, mesos.Offer_Operation_DESTROY_DISK:
		return fmt.Errorf("type: %s is not supported (there are no resource providers)", t)
	default:
		return fmt.Errorf("type: unknown offer operation type %s", t)
	}
}

// validateOpResource applies the checks every resource of an operation
// gets (Mesos's resource::validate): well formed, no resource provider,
// whole GPUs, a sensible disk info, no dynamic reservation of revocable
// resources, and the caller's capabilities.
func validateOpResource(field string, r *mesos.Resource, c OperationContext) error {
	if err := validateOne(r); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	stack := reservationStack(r)
	if newItem(r, stack).empty() {
		return fmt.Errorf("%s: resource %q must not be empty", field, r.GetName())
	}
	if r.ProviderId != nil {
		return fmt.Errorf("%s.provider_id: resource providers are not supported", field)
	}
	if r.GetName() == "gpus" && r.GetType() == mesos.Value_SCALAR && toFixed(r.GetScalar().GetValue())%1000 != 0 {
		return fmt.Errorf("%s.scalar: gpus must be a whole number, not %v", field, r.GetScalar().GetValue())
	}
	if d := r.Disk; d != nil {
		switch {
		case d.Persistence != nil:
			if r.Revocable != nil {
				return fmt.Errorf("%s.revocable: persistent volumes cannot be created from revocable resources", field)
			}
			if len(stack) == 0 {
				return fmt.Errorf("%s.reservations: persistent volumes cannot be created from unreserved resources", field)
			}
			if d.Volume == nil {
				return fmt.Errorf("%s.disk.volume: must be set for a persistent volume", field)
			}
			if d.Volume.HostPath != nil {
				return fmt.Errorf("%s.disk.volume.host_path: must not be set for a persistent volume", field)
			}
			if err := validatePersistenceID(d.Persistence.GetId()); err != nil {
				return fmt.Errorf("%s.disk.persistence.id: %w", field, err)
			}
		case d.Volume != nil:
			return fmt.Errorf("%s.disk.volume: non-persistent volumes are not supported", field)
		case d.Source == nil:
			return fmt.Errorf("%s.disk: is set but empty", field)
		}
	}
	if n := len(stack); n > 0 && stack[n-1].GetType() == mesos.Resource_ReservationInfo_DYNAMIC && r.Revocable != nil {
		return fmt.Errorf("%s.revocable: revocable resources cannot be dynamically reserved", field)
	}
	if c.framework() && !c.RefinementCapable && len(stack) > 1 {
		return fmt.Errorf("%s.reservations: refined reservations need the RESERVATION_REFINEMENT capability", field)
	}
	return nil
}

// validatePersistenceID refuses IDs that cannot name a directory: the
// volume lives under volumes/roles/<role>/<id> on the agent.
func validatePersistenceID(id string) error {
	if id == "" {
		return fmt.Errorf("must not be empty")
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%q is not a valid persistence ID", id)
	}
	for _, ch := range id {
		if ch < ' ' || ch == 0x7f || ch == '/' || ch == '\\' {
			return fmt.Errorf("persistence ID %q contains invalid characters", id)
		}
	}
	return nil
}

// reservationRole is the role of the resource's last reservation ("" when
// unreserved).
func reservationRole(r *mesos.Resource) string {
	stack := reservationStack(r)
	if len(stack) == 0 {
		return ""
	}
	return stack[len(stack)-1].GetRole()
}

// roleField and principalField name the role and principal of r's last
// reservation, in whichever format r uses.
func roleField(field string, r *mesos.Resource) string {
	if n := len(r.Reservations); n > 0 {
		return fmt.Sprintf("%s.reservations[%d].role", field, n-1)
	}
	return field + ".role"
}

func principalField(field string, r *mesos.Resource) string {
	if n := len(r.Reservations); n > 0 {
		return fmt.Sprintf("%s.reservations[%d].principal", field, n-1)
	}
	return field + ".reservation.principal"
}

// validateAllocation checks who may touch the resources: a framework only
// what was offered to one of its roles, all to the same role; an operator
// only unallocated resources. allocRole carries the first allocation role
// seen across the operation's resources.
func validateAllocation(field string, r *mesos.Resource, c OperationContext, allocRole *string) error {
	if !c.framework() {
		if r.AllocationInfo != nil {
			return fmt.Errorf("%s.allocation_info: the operator API only operates on unallocated resources", field)
		}
		return nil
	}
	a := r.AllocationInfo
	if a == nil {
		// The master injects the offer's allocation role before validating,
		// as Mesos does; resources without one were not offered.
		return nil
	}
	if *allocRole == "" {
		*allocRole = a.GetRole()
	} else if a.GetRole() != *allocRole {
		return fmt.Errorf("%s.allocation_info.role: resources of one operation must be allocated to one role, not %q and %q",
			field, *allocRole, a.GetRole())
	}
	return nil
}

func validateReserve(rv *mesos.Offer_Operation_Reserve, c OperationContext) error {
	if len(rv.Resources) == 0 {
		return fmt.Errorf("reserve.resources: must not be empty")
	}
	var allocRole string
	for i, r := range rv.Resources {
		field := fmt.Sprintf("reserve.resources[%d]", i)
		if err := validateOpResource(field, r, c); err != nil {
			return err
		}
		stack := reservationStack(r)
		if len(stack) == 0 || stack[len(stack)-1].GetType() != mesos.Resource_ReservationInfo_DYNAMIC {
			return fmt.Errorf("%s: resource %s is not dynamically reserved", field, describe(r))
		}
		if r.GetDisk().GetPersistence() != nil {
			return fmt.Errorf("%s.disk.persistence: persistent volumes cannot be reserved; reserve the disk, then CREATE the volume", field)
		}
		top := stack[len(stack)-1]
		if c.Principal != "" {
			if top.Principal == nil {
				return fmt.Errorf("%s: must be set to the caller's principal %q", principalField(field, r), c.Principal)
			}
			if top.GetPrincipal() != c.Principal {
				return fmt.Errorf("%s: %q does not match the caller's principal %q",
					principalField(field, r), top.GetPrincipal(), c.Principal)
			}
		}
		role := top.GetRole()
		if c.framework() {
			if !slices.Contains(c.FrameworkRoles, role) {
				return fmt.Errorf("%s: role %q is not one of the framework's roles %v", roleField(field, r), role, c.FrameworkRoles)
			}
			if a := r.AllocationInfo; a != nil && a.GetRole() != role {
				return fmt.Errorf("%s.allocation_info.role: the resource is allocated to role %q, not to the reservation's role %q",
					field, a.GetRole(), role)
			}
		}
		if err := validateAllocation(field, r, c, &allocRole); err != nil {
			return err
		}
	}
	if len(rv.Source) > 0 {
		return validateReserveSource(rv, c)
	}
	return nil
}

// validateReserveSource checks a reservation update (Mesos 1.10): source
// and resources each carry one reservation stack, and the same quantities.
func validateReserveSource(rv *mesos.Offer_Operation_Reserve, c OperationContext) error {
	var allocRole string
	for i, r := range rv.Source {
		field := fmt.Sprintf("reserve.source[%d]", i)
		if err := validateOpResource(field, r, c); err != nil {
			return err
		}
		if err := validateAllocation(field, r, c, &allocRole); err != nil {
			return err
		}
	}
	for _, part := range []struct {
		field string
		rs    []*mesos.Resource
	}{{"reserve.source", rv.Source}, {"reserve.resources", rv.Resources}} {
		first := reservationStack(part.rs[0])
		for i, r := range part.rs[1:] {
			if !slices.EqualFunc(reservationStack(r), first, func(a, b *mesos.Resource_ReservationInfo) bool {
				return proto.Equal(a, b)
			}) {
				return fmt.Errorf("%s[%d].reservations: all resources must have the same reservations as %s[0]", part.field, i+1, part.field)
			}
		}
	}
	source, _ := FromProto(rv.Source)
	target, _ := FromProto(rv.Resources)
	if !source.ToUnreserved().Equal(target.ToUnreserved()) {
		return fmt.Errorf("reserve.source: %s must hold the same quantities as reserve.resources %s",
			source.ToUnreserved(), target.ToUnreserved())
	}
	return nil
}

func validateUnreserve(u *mesos.Offer_Operation_Unreserve, c OperationContext) error {
	if len(u.Resources) == 0 {
		return fmt.Errorf("unreserve.resources: must not be empty")
	}
	var allocRole string
	for i, r := range u.Resources {
		field := fmt.Sprintf("unreserve.resources[%d]", i)
		if err := validateOpResource(field, r, c); err != nil {
			return err
		}
		stack := reservationStack(r)
		if len(stack) == 0 || stack[len(stack)-1].GetType() != mesos.Resource_ReservationInfo_DYNAMIC {
			return fmt.Errorf("%s: resource %s is not dynamically reserved", field, describe(r))
		}
		if r.GetDisk().GetPersistence() != nil {
			return fmt.Errorf("%s.disk.persistence: a persistent volume cannot be unreserved; DESTROY it first, then unreserve its disk", field)
		}
		if top := stack[len(stack)-1]; c.Principal != "" && top.GetPrincipal() != c.Principal {
			return fmt.Errorf("%s: the reservation was made by principal %q; %q cannot unreserve it",
				principalField(field, r), top.GetPrincipal(), c.Principal)
		}
		if err := validateAllocation(field, r, c, &allocRole); err != nil {
			return err
		}
	}
	return nil
}

// validateVolume checks that r is a persistent volume one may create:
// disk, with persistence and a read-write volume at a relative path.
func validateVolume(field string, r *mesos.Resource) error {
	if r.GetName() != "disk" || r.Disk == nil {
		return fmt.Errorf("%s.disk: resource %s is not a persistent volume (no disk info)", field, describe(r))
	}
	if r.Disk.Persistence == nil {
		return fmt.Errorf("%s.disk.persistence: must be set for a persistent volume", field)
	}
	v := r.Disk.Volume
	if v == nil {
		return fmt.Errorf("%s.disk.volume: must be set for a persistent volume", field)
	}
	if v.GetMode() != mesos.Volume_RW {
		return fmt.Errorf("%s.disk.volume.mode: read-only persistent volumes are not supported", field)
	}
	p := v.GetContainerPath()
	switch {
	case p == "":
		return fmt.Errorf("%s.disk.volume.container_path: must not be empty", field)
	case path.IsAbs(p):
		return fmt.Errorf("%s.disk.volume.container_path: %q must be relative to the sandbox", field, p)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return fmt.Errorf("%s.disk.volume.container_path: %q must not leave the sandbox", field, p)
	}
	return nil
}

func validateCreate(cr *mesos.Offer_Operation_Create, c OperationContext) error {
	if len(cr.Volumes) == 0 {
		return fmt.Errorf("create.volumes: must not be empty")
	}
	// Persistence IDs are unique per role on an agent.
	used := map[[2]string]string{}
	for _, p := range c.Volumes.PersistentVolumes().Proto() {
		used[[2]string{reservationRole(p), p.GetDisk().GetPersistence().GetId()}] = "on the agent"
	}
	var allocRole string
	for i, r := range cr.Volumes {
		field := fmt.Sprintf("create.volumes[%d]", i)
		if err := validateOpResource(field, r, c); err != nil {
			return err
		}
		if err := validateVolume(field, r); err != nil {
			return err
		}
		if len(reservationStack(r)) == 0 {
			return fmt.Errorf("%s.reservations: persistent volumes need reserved disk; reserve it first", field)
		}
		role, id := reservationRole(r), r.Disk.Persistence.GetId()
		if where, dup := used[[2]string{role, id}]; dup {
			return fmt.Errorf("%s.disk.persistence.id: persistence ID %q of role %q is already used %s", field, id, role, where)
		}
		used[[2]string{role, id}] = "in this operation"
		if r.Shared != nil && c.framework() && !c.SharedResourcesCapable {
			return fmt.Errorf("%s.shared: shared volumes need the SHARED_RESOURCES capability", field)
		}
		if c.Principal != "" {
			pp := r.Disk.Persistence.Principal
			if pp == nil {
				return fmt.Errorf("%s.disk.persistence.principal: must be set to the caller's principal %q", field, c.Principal)
			}
			if *pp != c.Principal {
				return fmt.Errorf("%s.disk.persistence.principal: %q does not match the caller's principal %q", field, *pp, c.Principal)
			}
		}
		if err := validateAllocation(field, r, c, &allocRole); err != nil {
			return err
		}
	}
	return nil
}

// onAgent reports whether the volume r (allocated or not) is among vols.
func onAgent(vols Resources, r *mesos.Resource) bool {
	v, err := New(r)
	return err == nil && vols.WithoutAllocationInfo().Contains(v.WithoutAllocationInfo())
}

func validateDestroy(d *mesos.Offer_Operation_Destroy, c OperationContext) error {
	if len(d.Volumes) == 0 {
		return fmt.Errorf("destroy.volumes: must not be empty")
	}
	var allocRole string
	for i, r := range d.Volumes {
		field := fmt.Sprintf("destroy.volumes[%d]", i)
		if err := validateOpResource(field, r, c); err != nil {
			return err
		}
		if err := validateVolume(field, r); err != nil {
			return err
		}
		if !onAgent(c.Volumes, r) {
			return fmt.Errorf("%s: persistent volume %s does not exist on the agent", field, describe(r))
		}
		if onAgent(c.InUse, r) {
			return fmt.Errorf("%s: persistent volume %s is in use by a task or executor", field, describe(r))
		}
		if pp := r.Disk.Persistence.GetPrincipal(); c.Principal != "" && pp != c.Principal {
			return fmt.Errorf("%s.disk.persistence.principal: the volume was created by principal %q; %q cannot destroy it",
				field, pp, c.Principal)
		}
		if err := validateAllocation(field, r, c, &allocRole); err != nil {
			return err
		}
	}
	return nil
}

// validateResizable checks the volume of a GROW_VOLUME or SHRINK_VOLUME.
func validateResizable(field string, r *mesos.Resource, c OperationContext) error {
	if r == nil {
		return fmt.Errorf("%s: must be set", field)
	}
	if err := validateOpResource(field, r, c); err != nil {
		return err
	}
	if err := validateVolume(field, r); err != nil {
		return err
	}
	if r.Shared != nil {
		return fmt.Errorf("%s.shared: resizing a shared persistent volume is not supported", field)
	}
	if !onAgent(c.Volumes, r) {
		return fmt.Errorf("%s: persistent volume %s does not exist on the agent", field, describe(r))
	}
	var allocRole string
	return validateAllocation(field, r, c, &allocRole)
}

func validateGrow(g *mesos.Offer_Operation_GrowVolume, c OperationContext) error {
	if err := validateResizable("grow_volume.volume", g.Volume, c); err != nil {
		return err
	}
	if g.Addition == nil {
		return fmt.Errorf("grow_volume.addition: must be set")
	}
	if err := validateOpResource("grow_volume.addition", g.Addition, c); err != nil {
		return err
	}
	if g.Addition.GetType() != mesos.Value_SCALAR || toFixed(g.Addition.GetScalar().GetValue()) <= 0 {
		return fmt.Errorf("grow_volume.addition.scalar: the addition must be greater than zero")
	}
	vol, _ := one("grow_volume.volume", g.Volume)
	add, _ := one("grow_volume.addition", g.Addition)
	if disk := vol.diskOf(); disk.atomic || add.atomic || disk.key != add.key {
		return fmt.Errorf("grow_volume.addition: %s is not the same disk as the volume's %s", single(add), single(disk))
	}
	return nil
}

func validateShrink(s *mesos.Offer_Operation_ShrinkVolume, c OperationContext) error {
	if err := validateResizable("shrink_volume.volume", s.Volume, c); err != nil {
		return err
	}
	if s.Volume.GetDisk().GetSource().GetType() == mesos.Resource_DiskInfo_Source_MOUNT {
		return fmt.Errorf("shrink_volume.volume.disk.source: shrinking a volume on a MOUNT disk is not supported")
	}
	if s.Subtract == nil {
		return fmt.Errorf("shrink_volume.subtract: must be set")
	}
	v := s.Subtract.GetValue()
	if math.IsNaN(v) || math.IsInf(v, 0) || toFixed(v) <= 0 {
		return fmt.Errorf("shrink_volume.subtract: %v must be greater than zero", s.Subtract.GetValue())
	}
	if toFixed(v) >= toFixed(s.Volume.GetScalar().GetValue()) {
		return fmt.Errorf("shrink_volume.subtract: %v must be smaller than the volume's size %v",
			s.Subtract.GetValue(), s.Volume.GetScalar().GetValue())
	}
	return nil
}

// describe renders one valid resource for an error message.
func describe(r *mesos.Resource) string {
	rs, err := New(r)
	if err != nil || rs.IsEmpty() {
		return fmt.Sprintf("%q", r.GetName())
	}
	return rs.String()
}
