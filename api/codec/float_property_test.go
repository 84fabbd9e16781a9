package codec_test

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"mezzo/api/codec"
)

// stoutDouble is the naive oracle: what stout's JSON writer does, literally
// (printf "%#.15g", trim trailing '0's, re-add one after a bare '.').
func stoutDouble(v float64) string {
	s := strings.TrimRight(fmt.Sprintf("%#.15g", v), "0")
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	return s
}

// TestAppendFloatMatchesStout: in fixed notation the output is byte for
// byte stout's; in exponent notation (where stout's trimming can eat an
// exponent's zero, e.g. 1e20 -> "1.00000000000000e+2") it is the same
// 15-digit number.
func TestAppendFloatMatchesStout(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var v float64
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			v = rapid.Float64().Draw(t, "any")
		case 1: // resource-like: three decimals
			v = float64(rapid.Int64Range(-1e12, 1e12).Draw(t, "milli")) / 1000
		default: // timestamp-like
			v = rapid.Float64Range(1e9, 2e9).Draw(t, "ts")
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		got := string(codec.AppendFloat(nil, v))
		want := stoutDouble(v)
		if !strings.ContainsAny(want, "eE") {
			if got != want {
				t.Fatalf("AppendFloat(%v) = %s, stout writes %s", v, got, want)
			}
			return
		}
		// (Near MaxFloat64 the 15-digit rounding overflows to ±Inf on
		// reading back, in Mesos as here.)
		g, err := strconv.ParseFloat(got, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			t.Fatalf("AppendFloat(%v) = %s: not a number", v, got)
		}
		w, _ := strconv.ParseFloat(fmt.Sprintf("%.14e", v), 64)
		if g != w {
			t.Fatalf("AppendFloat(%v) = %s (%v), want %v", v, got, g, w)
		}
	})
}
