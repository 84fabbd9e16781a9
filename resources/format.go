package resources

import (
	"strings"

	"mezzo/api/mesos"
)

// String renders r in Mesos's text form, entries separated by "; ".
// Unreserved and statically reserved resources use the --resources syntax
// ("cpus:1.5; mem(web):1024; ports:[31000-32000]; disks:{a, b}") and parse
// back to the same value. Other attributes are shown Mesos-style and are
// not parseable: "(allocated: r)", "(reservations: [(DYNAMIC,r,principal)])",
// "[disk info]", "{REV}" (revocable; "{REV:THROTTLE}" with throttle_info), "<SHARED>", and an " xN" suffix when N copies of an indivisible
// resource are held.
func (r Resources) String() string {
	var sb strings.Builder
	for i, it := range r.items {
		if i > 0 {
			sb.WriteString("; ")
		}
		it.writeText(&sb)
	}
	return sb.String()
}

func (it *item) writeText(sb *strings.Builder) {
	sb.WriteString(it.name)
	m := it.meta
	if m != nil {
		if m.AllocationInfo != nil {
			sb.WriteString("(allocated: ")
			sb.WriteString(m.AllocationInfo.GetRole())
			sb.WriteByte(')')
		}
		if allStatic(m.Reservations) && len(m.Reservations) == 1 {
			sb.WriteByte('(')
			sb.WriteString(it.role)
			sb.WriteByte(')')
		} else if len(m.Reservations) > 0 {
			sb.WriteString("(reservations: [")
			for i, res := range m.Reservations {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteByte('(')
				sb.WriteString(res.GetType().String())
				sb.WriteByte(',')
				sb.WriteString(res.GetRole())
				if res.Principal != nil {
					sb.WriteByte(',')
					sb.WriteString(res.GetPrincipal())
				}
				if res.Labels != nil {
					sb.WriteString(",{")
					for j, l := range res.Labels.GetLabels() {
						if j > 0 {
							sb.WriteString(", ")
						}
						sb.WriteString(l.GetKey())
						if l.Value != nil {
							sb.WriteString(": ")
							sb.WriteString(l.GetValue())
						}
					}
					sb.WriteByte('}')
				}
				sb.WriteByte(')')
			}
			sb.WriteString("])")
		}
		if d := m.Disk; d != nil {
			sb.WriteByte('[')
			writeDisk(sb, d)
			sb.WriteByte(']')
		}
		if m.Revocable != nil {
			if m.Revocable.ThrottleInfo != nil {
				sb.WriteString("{REV:THROTTLE}")
			} else {
				sb.WriteString("{REV}")
			}
		}
		if m.Shared != nil {
			sb.WriteString("<SHARED>")
		}
	}
	sb.WriteByte(':')
	sb.WriteString(it.valueText())
	if it.atomic && it.count > 1 {
		sb.WriteString(" x")
		sb.WriteString(formatFixed(it.count * 1000))
	}
}

func writeDisk(sb *strings.Builder, d *mesos.Resource_DiskInfo) {
	var parts []string
	if s := d.Source; s != nil {
		src := s.GetType().String()
		switch {
		case s.GetPath().GetRoot() != "":
			src += ":" + s.GetPath().GetRoot()
		case s.GetMount().GetRoot() != "":
			src += ":" + s.GetMount().GetRoot()
		}
		parts = append(parts, src)
	}
	if p := d.Persistence; p != nil {
		parts = append(parts, p.GetId())
	}
	if v := d.Volume; v != nil {
		parts = append(parts, v.GetContainerPath()+":"+v.GetMode().String())
	}
	sb.WriteString(strings.Join(parts, ","))
}

func allStatic(rs []*mesos.Resource_ReservationInfo) bool {
	for _, r := range rs {
		if r.GetType() != mesos.Resource_ReservationInfo_STATIC || r.Principal != nil || r.Labels != nil {
			return false
		}
	}
	return true
}

// valueText renders the value as in the text syntax.
func (it *item) valueText() string {
	switch it.typ {
	case mesos.Value_SCALAR:
		return formatFixed(it.scalar)
	case mesos.Value_RANGES:
		return formatSpans(it.ranges)
	case mesos.Value_SET:
		return formatSet(it.set)
	}
	return ""
}

// Summary models r as Mesos's /master/state and /slave(1)/state do:
// "cpus", "gpus", "mem" and "disk" are always present (0 when absent);
// every non-revocable resource appears under its name and every revocable
// one under "<name>_revocable", summed across roles and reservations;
// scalars are numbers, ranges and sets their text ("[31000-32000]", "{a, b}").
func (r Resources) Summary() map[string]any {
	out := map[string]any{"cpus": 0.0, "gpus": 0.0, "mem": 0.0, "disk": 0.0}
	type acc struct {
		typ    mesos.Value_Type
		scalar int64
		ranges []span
		set    []string
	}
	sums := map[string]*acc{}
	var order []string
	for _, it := range r.items {
		name := it.name
		if it.revocable {
			name += "_revocable"
		}
		a := sums[name]
		if a == nil {
			a = &acc{typ: it.typ}
			sums[name] = a
			order = append(order, name)
		}
		if a.typ != it.typ {
			continue // same name, different type: Mesos reports the first
		}
		switch it.typ {
		case mesos.Value_SCALAR:
			a.scalar = addFixed(a.scalar, it.scalarTotal())
		case mesos.Value_RANGES:
			a.ranges = unionSpans(a.ranges, it.ranges)
		case mesos.Value_SET:
			a.set = unionSets(a.set, it.set)
		}
	}
	for _, name := range order {
		a := sums[name]
		switch a.typ {
		case mesos.Value_SCALAR:
			out[name] = fromFixed(a.scalar)
		case mesos.Value_RANGES:
			out[name] = formatSpans(a.ranges)
		case mesos.Value_SET:
			out[name] = formatSet(a.set)
		}
	}
	return out
}
