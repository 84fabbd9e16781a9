package resources

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Scalars are held as int64 thousandths, as Mesos does (it rounds every
// scalar to three decimal places), so that 0.1+0.2 is exactly 0.3 and sums
// never drift however many times resources are added and subtracted.

// maxScalar bounds a single scalar so that its fixed-point form and sums of
// many of them stay far from int64 overflow.
const maxScalar = 1e15

// toFixed converts a float to thousandths, rounding half away from zero
// (llround in Mesos).
func toFixed(v float64) int64 { return int64(math.Round(v * 1000)) }

// fromFixed converts thousandths back to the nearest float64.
func fromFixed(f int64) float64 { return float64(f) / 1000 }

// addFixed adds saturating at the int64 bounds.
func addFixed(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	return s
}

// formatFixed renders thousandths exactly, without trailing zeros: 1500 → "1.5".
func formatFixed(f int64) string {
	neg := f < 0
	u := uint64(f)
	if neg {
		u = uint64(-f)
	}
	s := strconv.FormatUint(u/1000, 10)
	if frac := u % 1000; frac != 0 {
		fs := strconv.FormatUint(frac+1000, 10)[1:] // zero-padded to 3 digits
		s += "." + strings.TrimRight(fs, "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// span is an inclusive range [b, e] of a RANGES value.
type span struct{ b, e uint64 }

// normalizeSpans sorts spans and coalesces overlapping and adjacent ones.
// It reuses s.
func normalizeSpans(s []span) []span {
	if len(s) <= 1 {
		return s
	}
	slices.SortFunc(s, func(x, y span) int { return cmp.Compare(x.b, y.b) })
	out := s[:1]
	for _, c := range s[1:] {
		last := &out[len(out)-1]
		if last.e == math.MaxUint64 || c.b <= last.e+1 {
			if c.e > last.e {
				last.e = c.e
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// unionSpans returns the union of two normalized span lists.
func unionSpans(a, b []span) []span {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]span, 0, len(a)+len(b))
	i, j := 0, 0
	push := func(c span) {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.e == math.MaxUint64 || c.b <= last.e+1 {
				if c.e > last.e {
					last.e = c.e
				}
				return
			}
		}
		out = append(out, c)
	}
	for i < len(a) || j < len(b) {
		if j >= len(b) || (i < len(a) && a[i].b <= b[j].b) {
			push(a[i])
			i++
		} else {
			push(b[j])
			j++
		}
	}
	return out
}

// subtractSpans returns a minus b for normalized span lists.
func subtractSpans(a, b []span) []span {
	if len(a) == 0 || len(b) == 0 {
		return a
	}
	out := make([]span, 0, len(a)+1)
	j := 0
	for _, cur := range a {
		// Skip b spans entirely before cur.
		for j < len(b) && b[j].e < cur.b {
			j++
		}
		k := j
		for k < len(b) && b[k].b <= cur.e {
			r := b[k]
			if r.b > cur.b {
				out = append(out, span{cur.b, r.b - 1})
			}
			if r.e >= cur.e {
				cur.b, cur.e = 1, 0 // consumed; marks empty
				break
			}
			cur.b = r.e + 1
			k++
		}
		if cur.b <= cur.e {
			out = append(out, cur)
		}
	}
	return out
}

// subsetSpans reports whether every point of a is in b (both normalized).
func subsetSpans(a, b []span) bool {
	j := 0
	for _, cur := range a {
		for j < len(b) && b[j].e < cur.b {
			j++
		}
		// b is coalesced, so a single b span must cover cur.
		if j >= len(b) || b[j].b > cur.b || b[j].e < cur.e {
			return false
		}
	}
	return true
}

// spanCount is the number of integers in the spans, saturating.
func spanCount(s []span) uint64 {
	var n uint64
	for _, c := range s {
		w := c.e - c.b + 1
		if w == 0 || n+w < n { // full uint64 domain or overflow
			return math.MaxUint64
		}
		n += w
	}
	return n
}

// unionSets merges two sorted, duplicate-free string lists.
func unionSets(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// subtractSets returns a minus b for sorted, duplicate-free lists.
func subtractSets(a, b []string) []string {
	if len(a) == 0 || len(b) == 0 {
		return a
	}
	out := make([]string, 0, len(a))
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			continue
		}
		out = append(out, x)
	}
	return out
}

// subsetSets reports whether a ⊆ b for sorted, duplicate-free lists.
func subsetSets(a, b []string) bool {
	if len(a) > len(b) {
		return false
	}
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j >= len(b) || b[j] != x {
			return false
		}
		j++
	}
	return true
}

// formatSpans renders ranges as Mesos does: "[31000-32000, 40000-40010]".
func formatSpans(s []span) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, c := range s {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.FormatUint(c.b, 10))
		sb.WriteByte('-')
		sb.WriteString(strconv.FormatUint(c.e, 10))
	}
	sb.WriteByte(']')
	return sb.String()
}

// formatSet renders a set as Mesos does: "{a, b}".
func formatSet(s []string) string {
	return "{" + strings.Join(s, ", ") + "}"
}
