package allocator

import (
	"sort"

	"mezzo/resources"
)

// allocation is what one framework holds in one role on one agent.
type allocation struct {
	fw   string
	role string
	res  resources.Resources
	q    qv // scalar quantities of res (nil: unknown, compute)
	uq   qv // of its unreserved part
	// tagged is res.AllocatedTo(role), the form in which the master
	// hands declined offers back, once computed (taggedOK) for this res.
	tagged   resources.Resources
	taggedOK bool
}

// taggedRes returns the entry's resources with allocation_info naming its
// role, computing them once per value of res: recognising a whole offer
// coming back then takes an Equal instead of stripping and intersecting.
func (e *allocation) taggedRes() resources.Resources {
	if !e.taggedOK {
		e.tagged, e.taggedOK = e.res.AllocatedTo(e.role), true
	}
	return e.tagged
}

// allocSet is an agent's allocations. Agents hold few, so a slice with
// linear search beats maps here, and truncating it on recovery keeps its
// storage for the next run (no garbage in the hot loop).
type allocSet []allocation

func (s allocSet) find(fw, role string) int {
	for i := range s {
		if s[i].fw == fw && s[i].role == role {
			return i
		}
	}
	return -1
}

func (s allocSet) get(fw, role string) resources.Resources {
	if i := s.find(fw, role); i >= 0 {
		return s[i].res
	}
	return resources.Resources{}
}

func (s allocSet) has(fw string) bool {
	for i := range s {
		if s[i].fw == fw {
			return true
		}
	}
	return false
}

// add adds res (quantities q, unreserved uq; nil if unknown) to fw's
// allocation in role; it reports whether that made a new entry.
func (s *allocSet) add(fw, role string, res resources.Resources, q, uq qv) bool {
	if i := s.find(fw, role); i >= 0 {
		e := &(*s)[i]
		e.res = e.res.Add(res)
		e.taggedOK = false
		if e.q != nil && q != nil {
			e.q = e.q.add(q)
			e.uq = e.uq.add(uq)
		} else {
			e.q, e.uq = nil, nil
		}
		return false
	}
	if n := len(*s); n < cap(*s) {
		// Reuse the vectors sub left in the spare slot: in steady state
		// (offer, decline, offer again) tracking allocates nothing.
		*s = (*s)[:n+1]
		e := &(*s)[n]
		e.fw, e.role, e.res = fw, role, res
		e.taggedOK = false
		e.q, e.uq = copyVec(e.q, q), copyVec(e.uq, uq)
		return true
	}
	*s = append(*s, allocation{fw: fw, role: role, res: res, q: q.clone(), uq: uq.clone()})
	return true
}

// copyVec copies src into dst's storage (nil stays nil: unknown).
func copyVec(dst, src qv) qv {
	if src == nil {
		return nil
	}
	return append(dst[:0], src...)
}

// sub removes res from fw's allocation in role; all says res is all of
// it. It reports whether the entry is gone.
func (s *allocSet) sub(fw, role string, res resources.Resources, all bool) bool {
	i := s.find(fw, role)
	if i < 0 {
		return false
	}
	if !all {
		left := (*s)[i].res.Subtract(res)
		if !left.IsEmpty() {
			(*s)[i].res = left
			(*s)[i].q, (*s)[i].uq = nil, nil
			(*s)[i].taggedOK = false
			return false
		}
	}
	last := len(*s) - 1
	gone := (*s)[i]
	(*s)[i] = (*s)[last]
	// The spare slot keeps only the vectors' storage, for add to reuse.
	// Their contents stay valid until the next add on this set (untrack
	// reads them after sub).
	(*s)[last] = allocation{q: gone.q[:0], uq: gone.uq[:0]}
	*s = (*s)[:last]
	return true
}

// byRole returns fw's allocations by role.
func (s allocSet) byRole(fw string) map[string]resources.Resources {
	var out map[string]resources.Resources
	for i := range s {
		if s[i].fw == fw {
			if out == nil {
				out = map[string]resources.Resources{}
			}
			out[s[i].role] = s[i].res
		}
	}
	return out
}

// frameworks lists the frameworks holding allocations, sorted.
func (s allocSet) frameworks() []string {
	seen := map[string]bool{}
	var out []string
	for i := range s {
		if !seen[s[i].fw] {
			seen[s[i].fw] = true
			out = append(out, s[i].fw)
		}
	}
	sort.Strings(out)
	return out
}

// sorted returns a copy ordered by framework then role.
func (s allocSet) sorted() allocSet {
	out := append(allocSet(nil), s...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].fw != out[j].fw {
			return out[i].fw < out[j].fw
		}
		return out[i].role < out[j].role
	})
	return out
}
