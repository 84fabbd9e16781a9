package resources

import (
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// Mesos has two formats for reservations. Before hierarchical roles
// ("pre-refinement"), a resource carried `role` (default "*") and, when
// dynamically reserved, `reservation` (principal, labels). Since 1.4
// ("post-refinement") it carries a stack `reservations[]`, each entry with a
// type (STATIC/DYNAMIC) and role, later entries refining earlier ones to
// sub-roles. Internally we only keep the post-refinement form.

// reservationStack returns r's reservations in post-refinement form,
// upgrading the pre-refinement fields. r must be valid. The returned
// entries may alias r's and must not be modified.
func reservationStack(r *mesos.Resource) []*mesos.Resource_ReservationInfo {
	if len(r.Reservations) > 0 {
		return r.Reservations
	}
	role := r.GetRole()
	if role == "*" && r.Reservation == nil {
		return nil
	}
	if r.Reservation == nil {
		return []*mesos.Resource_ReservationInfo{{
			Type: mesos.Resource_ReservationInfo_STATIC.Enum(),
			Role: proto.String(role),
		}}
	}
	res := proto.Clone(r.Reservation).(*mesos.Resource_ReservationInfo)
	res.Type = mesos.Resource_ReservationInfo_DYNAMIC.Enum()
	res.Role = proto.String(role)
	return []*mesos.Resource_ReservationInfo{res}
}

// ToPostRefinement returns deep copies of rs in the post-refinement format
// (reservations[] only; role and reservation cleared). rs should be valid
// (see Validate); nil entries stay nil.
func ToPostRefinement(rs []*mesos.Resource) []*mesos.Resource {
	out := make([]*mesos.Resource, len(rs))
	for i, r := range rs {
		if r == nil {
			continue
		}
		c := proto.Clone(r).(*mesos.Resource)
		c.Reservations = reservationStack(c)
		c.Role = nil
		c.Reservation = nil
		out[i] = c
	}
	return out
}

// ToPreRefinement returns deep copies of rs in the pre-refinement format for
// frameworks without the RESERVATION_REFINEMENT capability: role "*" for
// unreserved resources; role plus, when dynamic, reservation {principal,
// labels} for a single reservation, with reservations[] cleared. Resources
// with refined (multi-level) reservations cannot be expressed in that format
// and are returned unchanged (still post-refinement); callers that must not
// send them should filter with HasRefinedReservations first.
func ToPreRefinement(rs []*mesos.Resource) []*mesos.Resource {
	out := make([]*mesos.Resource, len(rs))
	for i, r := range rs {
		if r != nil {
			out[i] = proto.Clone(r).(*mesos.Resource)
		}
	}
	return ToPreRefinementInPlace(out)
}

// ToPreRefinementInPlace is ToPreRefinement for protos the caller owns
// (fresh from Proto, say): it rewrites and returns them instead of copying.
func ToPreRefinementInPlace(rs []*mesos.Resource) []*mesos.Resource {
	for _, c := range rs {
		if c == nil {
			continue
		}
		stack := reservationStack(c)
		switch len(stack) {
		case 0:
			c.Role = proto.String("*")
			c.Reservation = nil
			c.Reservations = nil
		case 1:
			s := stack[0]
			c.Role = proto.String(s.GetRole())
			c.Reservation = nil
			if s.GetType() == mesos.Resource_ReservationInfo_DYNAMIC {
				res := &mesos.Resource_ReservationInfo{Principal: s.Principal}
				if s.Labels != nil {
					res.Labels = proto.Clone(s.Labels).(*mesos.Labels)
				}
				c.Reservation = res
			}
			c.Reservations = nil
		}
	}
	return rs
}

// ToEndpointFormat returns deep copies of rs in the format Mesos's HTTP
// endpoints (/master/state, /slave(1)/state) use: post-refinement
// reservations[] and, where a single reservation allows it, the
// pre-refinement role and reservation fields too, so old and new readers both
// understand them.
func ToEndpointFormat(rs []*mesos.Resource) []*mesos.Resource {
	out := ToPreRefinement(rs)
	for i, c := range out {
		if c == nil {
			continue
		}
		c.Reservations = reservationStack(rs[i])
		if len(c.Reservations) > 0 {
			c.Reservations = cloneReservations(c.Reservations)
		}
		if len(c.Reservations) > 1 {
			c.Role, c.Reservation = nil, nil
		}
	}
	return out
}

// HasRefinedReservations reports whether r has more than one reservation.
func HasRefinedReservations(r *mesos.Resource) bool { return len(r.GetReservations()) > 1 }

func cloneReservations(rs []*mesos.Resource_ReservationInfo) []*mesos.Resource_ReservationInfo {
	out := make([]*mesos.Resource_ReservationInfo, len(rs))
	for i, r := range rs {
		out[i] = proto.Clone(r).(*mesos.Resource_ReservationInfo)
	}
	return out
}
