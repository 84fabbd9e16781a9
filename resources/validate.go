package resources

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// Validate checks resources as Mesos does before accepting them, in either
// the pre-refinement (role + reservation) or post-refinement
// (reservations[]) format. The error names the offending entry by index and
// name, e.g. `resources[1] "cpus": scalar value -1 is negative`.
func Validate(rs []*mesos.Resource) error {
	for i, r := range rs {
		if err := validateOne(r); err != nil {
			return fmt.Errorf("resources[%d] %q: %w", i, r.GetName(), err)
		}
	}
	return nil
}

// ValidateRole checks a role name as Mesos does: "*" or a '/'-separated
// path of non-empty components, none of which is ".", ".." or "*", starts
// with '-', or contains whitespace or control characters.
func ValidateRole(role string) error {
	if role == "*" {
		return nil
	}
	if role == "" {
		return fmt.Errorf("empty role name is invalid")
	}
	if strings.HasPrefix(role, "/") {
		return fmt.Errorf("role %q cannot start with a slash", role)
	}
	if strings.HasSuffix(role, "/") {
		return fmt.Errorf("role %q cannot end with a slash", role)
	}
	for _, c := range strings.Split(role, "/") {
		switch {
		case c == "":
			return fmt.Errorf("role %q cannot contain two adjacent slashes", role)
		case c == ".":
			return fmt.Errorf("role %q cannot contain '.' as a component", role)
		case c == "..":
			return fmt.Errorf("role %q cannot contain '..' as a component", role)
		case c == "*":
			return fmt.Errorf("role %q cannot contain '*' as a component", role)
		case c[0] == '-':
			return fmt.Errorf("role %q is invalid because component %q starts with a dash", role, c)
		}
		for _, ch := range c {
			if ch <= ' ' || ch == 0x7f {
				return fmt.Errorf("role %q is invalid because it contains whitespace or control characters", role)
			}
		}
	}
	return nil
}

// IsStrictSubroleOf reports whether role is a strict descendant of ancestor
// in the role hierarchy ("eng/web" of "eng").
func IsStrictSubroleOf(role, ancestor string) bool {
	return len(role) > len(ancestor) && role[len(ancestor)] == '/' && strings.HasPrefix(role, ancestor)
}

func validateOne(r *mesos.Resource) error {
	if r == nil {
		return fmt.Errorf("resource is null")
	}
	if r.Name == nil || r.GetName() == "" {
		return fmt.Errorf("empty resource name")
	}
	if strings.IndexByte(r.GetName(), 0) >= 0 {
		return fmt.Errorf("resource name contains a NUL byte")
	}
	if r.Type == nil {
		return fmt.Errorf("'type' must be set")
	}
	if err := validateValue(r); err != nil {
		return err
	}
	if err := validateReservations(r); err != nil {
		return err
	}
	if err := validateDisk(r); err != nil {
		return err
	}
	if r.Shared != nil {
		if r.GetName() != "disk" {
			return fmt.Errorf("resource %q cannot be shared", r.GetName())
		}
		if r.Disk == nil || r.Disk.Persistence == nil {
			return fmt.Errorf("only persistent volumes can be shared")
		}
	}
	if a := r.AllocationInfo; a != nil && a.Role != nil {
		if err := ValidateRole(a.GetRole()); err != nil {
			return fmt.Errorf("allocation_info.role: %w", err)
		}
	}
	return nil
}

func validateDisk(r *mesos.Resource) error {
	d := r.Disk
	if d == nil {
		return nil
	}
	if r.GetName() != "disk" {
		return fmt.Errorf("DiskInfo should not be set for %q resource", r.GetName())
	}
	src := d.Source
	if src == nil {
		return nil
	}
	switch t := src.GetType(); t {
	case mesos.Resource_DiskInfo_Source_PATH, mesos.Resource_DiskInfo_Source_MOUNT:
	case mesos.Resource_DiskInfo_Source_BLOCK, mesos.Resource_DiskInfo_Source_RAW:
		if src.Mount != nil {
			return fmt.Errorf("disk.source.mount should not be set for %s disk source", t)
		}
		if src.Path != nil {
			return fmt.Errorf("disk.source.path should not be set for %s disk source", t)
		}
	default:
		return fmt.Errorf("unsupported disk.source.type %s", t)
	}
	return nil
}

// validateCommandLine applies the extra rules Mesos has for resources given
// on an agent's command line (--resources): no persistent volumes, revocable
// resources or dynamic reservations, and one type per name.
func validateCommandLine(rs []*mesos.Resource) error {
	types := map[string]mesos.Value_Type{}
	for i, r := range rs {
		fail := func(msg string) error { return fmt.Errorf("resources[%d] %q: %s", i, r.GetName(), msg) }
		stack := reservationStack(r)
		switch {
		case r.GetDisk().GetPersistence() != nil:
			return fail("persistent volumes cannot be specified at the command line")
		case r.Revocable != nil:
			return fail("revocable resources cannot be specified at the command line")
		case len(stack) > 0 && stack[len(stack)-1].GetType() == mesos.Resource_ReservationInfo_DYNAMIC:
			return fail("dynamic reservations cannot be specified at the command line")
		}
		if t, ok := types[r.GetName()]; ok && t != r.GetType() {
			return fail(fmt.Sprintf("resources with the same name but different types (%s, %s) are not allowed", t, r.GetType()))
		}
		types[r.GetName()] = r.GetType()
	}
	return nil
}

func validateValue(r *mesos.Resource) error {
	switch r.GetType() {
	case mesos.Value_SCALAR:
		if r.Scalar == nil || r.Ranges != nil || r.Set != nil {
			return fmt.Errorf("invalid scalar resource: 'scalar' (and only it) must be set")
		}
		v := r.Scalar.GetValue()
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("scalar value %v is not a finite number", v)
		case v < 0:
			return fmt.Errorf("scalar value %v is negative", v)
		case v != 0 && toFixed(v) == 0:
			// Mesos rejects values its fixed point would turn into zero.
			return fmt.Errorf("scalar value %v rounds to 0 (scalars have three decimal places)", v)
		case v > maxScalar:
			return fmt.Errorf("scalar value %v exceeds the maximum %v", v, maxScalar)
		}
	case mesos.Value_RANGES:
		if r.Ranges == nil || r.Scalar != nil || r.Set != nil {
			return fmt.Errorf("invalid ranges resource: 'ranges' (and only it) must be set")
		}
		rs := r.Ranges.GetRange()
		for i, x := range rs {
			if x.Begin == nil || x.End == nil {
				return fmt.Errorf("range %d: 'begin' and 'end' must be set", i)
			}
			if x.GetBegin() > x.GetEnd() {
				return fmt.Errorf("range [%d-%d]: begin > end", x.GetBegin(), x.GetEnd())
			}
		}
		// Overlap check on a sorted copy: linear-logarithmic, so a framework
		// cannot make us spin with a huge ranges list.
		s := make([]span, len(rs))
		for i, x := range rs {
			s[i] = span{x.GetBegin(), x.GetEnd()}
		}
		slices.SortFunc(s, func(x, y span) int { return cmp.Compare(x.b, y.b) })
		for i := 1; i < len(s); i++ {
			if s[i].b <= s[i-1].e {
				return fmt.Errorf("overlapping ranges [%d-%d] and [%d-%d]", s[i-1].b, s[i-1].e, s[i].b, s[i].e)
			}
		}
	case mesos.Value_SET:
		if r.Set == nil || r.Scalar != nil || r.Ranges != nil {
			return fmt.Errorf("invalid set resource: 'set' (and only it) must be set")
		}
		seen := make(map[string]struct{}, len(r.Set.GetItem()))
		for _, s := range r.Set.GetItem() {
			if _, dup := seen[s]; dup {
				return fmt.Errorf("duplicated element %q in set", s)
			}
			seen[s] = struct{}{}
		}
	default:
		return fmt.Errorf("unsupported resource type %s", r.GetType())
	}
	return nil
}

func validateReservations(r *mesos.Resource) error {
	if len(r.Reservations) == 0 {
		// Pre-refinement format (or unreserved).
		if err := ValidateRole(r.GetRole()); err != nil {
			return fmt.Errorf("role: %w", err)
		}
		if res := r.Reservation; res != nil {
			if res.Type != nil {
				return fmt.Errorf("'reservation.type' must not be set for the 'Resource.reservation' field")
			}
			if res.Role != nil {
				return fmt.Errorf("'reservation.role' must not be set for the 'Resource.reservation' field")
			}
			if r.GetRole() == "*" {
				return fmt.Errorf("invalid reservation: role \"*\" cannot be dynamically reserved")
			}
		}
		return nil
	}
	for i, res := range r.Reservations {
		if res == nil {
			return fmt.Errorf("reservations[%d] is null", i)
		}
		if res.Type == nil {
			return fmt.Errorf("reservations[%d]: 'type' must be set", i)
		}
		switch res.GetType() {
		case mesos.Resource_ReservationInfo_STATIC, mesos.Resource_ReservationInfo_DYNAMIC:
		default:
			return fmt.Errorf("reservations[%d]: unsupported type %s", i, res.GetType())
		}
		if res.Role == nil {
			return fmt.Errorf("reservations[%d]: 'role' must be set", i)
		}
		if res.GetRole() == "*" {
			return fmt.Errorf("reservations[%d]: role \"*\" cannot be reserved", i)
		}
		if err := ValidateRole(res.GetRole()); err != nil {
			return fmt.Errorf("reservations[%d].role: %w", i, err)
		}
		if i > 0 {
			if res.GetType() == mesos.Resource_ReservationInfo_STATIC {
				return fmt.Errorf("reservations[%d]: a refined reservation cannot be STATIC", i)
			}
			if prev := r.Reservations[i-1].GetRole(); !IsStrictSubroleOf(res.GetRole(), prev) {
				return fmt.Errorf("reservations[%d]: role %q is not a refinement of %q", i, res.GetRole(), prev)
			}
		}
	}
	if len(r.Reservations) > 1 {
		if r.Role != nil {
			return fmt.Errorf("'role' must not be set if there is more than one reservation in 'reservations'")
		}
		if r.Reservation != nil {
			return fmt.Errorf("'reservation' must not be set if there is more than one reservation in 'reservations'")
		}
		return nil
	}
	// One reservation: the pre-refinement fields may accompany it (the
	// "endpoint" format) but must agree with it.
	res := r.Reservations[0]
	if r.Role != nil && r.GetRole() != res.GetRole() {
		return fmt.Errorf("'role' %q does not match the role %q in 'reservations'", r.GetRole(), res.GetRole())
	}
	switch res.GetType() {
	case mesos.Resource_ReservationInfo_STATIC:
		if r.Reservation != nil {
			return fmt.Errorf("'reservation' must not be set if the single reservation in 'reservations' is STATIC")
		}
	case mesos.Resource_ReservationInfo_DYNAMIC:
		if (r.Role != nil) != (r.Reservation != nil) {
			return fmt.Errorf("'role' and 'reservation' must be both set or both unset if the single reservation in 'reservations' is DYNAMIC")
		}
		if r.Reservation != nil {
			if r.Reservation.GetPrincipal() != res.GetPrincipal() {
				return fmt.Errorf("'reservation.principal' %q does not match the principal %q in 'reservations'",
					r.Reservation.GetPrincipal(), res.GetPrincipal())
			}
			if !proto.Equal(r.Reservation.GetLabels(), res.GetLabels()) {
				return fmt.Errorf("'reservation.labels' do not match the labels in 'reservations'")
			}
		}
	}
	return nil
}
