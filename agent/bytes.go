package agent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseBytes parses a byte size in Mesos's (stout's Bytes) syntax: a
// non-negative number followed by one of the units B, KB, MB, GB or TB
// (powers of 1024), e.g. "2GB", "512MB", "1.5GB", "100B". Used for
// --fetcher_cache_size. The error names the bad part.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], t[i:]
	if num == "" {
		return 0, fmt.Errorf("bytes %q: expected a number followed by B, KB, MB, GB or TB", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("bytes %q: %q is not a number", s, num)
	}
	var mult float64
	switch unit {
	case "B":
		mult = 1
	case "KB":
		mult = 1 << 10
	case "MB":
		mult = 1 << 20
	case "GB":
		mult = 1 << 30
	case "TB":
		mult = 1 << 40
	default:
		return 0, fmt.Errorf("bytes %q: unknown unit %q (want B, KB, MB, GB or TB)", s, unit)
	}
	n := v * mult
	if n >= math.MaxInt64 || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, fmt.Errorf("bytes %q: too large", s)
	}
	return int64(n), nil
}

// FormatBytes renders n as stout's Bytes does: in the largest unit that
// loses nothing ("2GB", "1536KB", "1000B").
func FormatBytes(n int64) string {
	if n <= 0 || n%1024 != 0 {
		return strconv.FormatInt(n, 10) + "B"
	}
	n /= 1024
	for _, u := range []string{"KB", "MB", "GB"} {
		if n%1024 != 0 {
			return strconv.FormatInt(n, 10) + u
		}
		n /= 1024
	}
	return strconv.FormatInt(n, 10) + "TB"
}
