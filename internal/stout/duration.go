// Package stout parses and formats durations in the text form Mesos uses on
// the wire and in flags (stout's Duration): a non-negative decimal number
// followed by one of the units ns, us, ms, secs, mins, hrs, days, weeks, for
// example "5secs", "2.5mins" or "15mins".
//
// The agent writes executor environment variables with FormatDuration
// (MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD, MESOS_RECOVERY_TIMEOUT, ...), the
// executor library reads them with ParseDuration, and the master and agent use
// both for flags that keep Mesos's names. Go's own "5s" is not accepted:
// mesos-go and Mesos executors would reject it.
package stout

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// units lists the stout units, largest first, with their length.
var units = []struct {
	name string
	d    time.Duration
}{
	{"weeks", 7 * 24 * time.Hour},
	{"days", 24 * time.Hour},
	{"hrs", time.Hour},
	{"mins", time.Minute},
	{"secs", time.Second},
	{"ms", time.Millisecond},
	{"us", time.Microsecond},
	{"ns", time.Nanosecond},
}

func unitFactor(name string) (time.Duration, bool) {
	for _, u := range units {
		if u.name == name {
			return u.d, true
		}
	}
	return 0, false
}

// ErrEmpty is returned by ParseDuration for an empty string.
var ErrEmpty = errors.New("empty duration")

// ParseDuration parses a stout duration such as "5secs" or "2.5mins".
//
// As in stout, the number is the longest prefix of digits and dots, it must be
// a valid non-negative decimal, and the rest of the string must be exactly one
// unit. Fractions are truncated towards zero at nanosecond precision. Values
// that do not fit in an int64 count of nanoseconds are an error.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, ErrEmpty
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == len(s) {
		return 0, fmt.Errorf("invalid duration %q: missing unit (one of ns, us, ms, secs, mins, hrs, days, weeks)", s)
	}
	num, unit := s[:i], s[i:]
	if num == "" {
		return 0, fmt.Errorf("invalid duration %q: missing number before unit", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: bad number %q", s, num)
	}
	factor, ok := unitFactor(unit)
	if !ok {
		return 0, fmt.Errorf("invalid duration %q: unknown unit %q; supported units are 'ns', 'us', 'ms', 'secs', 'mins', 'hrs', 'days', and 'weeks'", s, unit)
	}
	nanos := v * float64(factor)
	// float64(math.MaxInt64) rounds up to 2^63, which does not fit.
	if math.IsInf(nanos, 0) || math.IsNaN(nanos) || nanos >= float64(math.MaxInt64) {
		return 0, fmt.Errorf("invalid duration %q: out of the range a duration can represent", s)
	}
	return time.Duration(int64(nanos)), nil
}

// FormatDuration renders d as stout does: in the largest unit the duration
// reaches, unless the next smaller unit gives a whole number where the larger
// one would not (90s is "90secs", not "1.5mins"; 1.5s is "1500ms"). Numbers
// carry up to 15 significant digits. Negative durations get a leading '-'
// (ParseDuration does not accept them, like stout).
func FormatDuration(d time.Duration) string {
	if d < 0 {
		if d == math.MinInt64 {
			// -MinInt64 overflows; stout prints the maximum instead.
			return "-" + FormatDuration(math.MaxInt64)
		}
		return "-" + FormatDuration(-d)
	}
	if d < time.Microsecond {
		return strconv.FormatInt(int64(d), 10) + "ns"
	}
	// units[k] is the bucket d falls in: the largest unit not above d.
	k := 0
	for units[k].d > d {
		k++
	}
	u, smaller := units[k], units[k+1]
	if d%u.d != 0 && d%smaller.d == 0 {
		u = smaller
	}
	if u.name == "ns" {
		return strconv.FormatInt(int64(d), 10) + "ns"
	}
	return formatFloat(float64(d)/float64(u.d)) + u.name
}

// formatFloat prints v like a C++ ostream with precision 15 and the default
// float field: %g with 15 significant digits and trailing zeros dropped.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', 15, 64)
}
