package stout

import (
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"5secs", 5 * time.Second, ""},
		{"2.5mins", 150 * time.Second, ""},
		{"15mins", 15 * time.Minute, ""},
		{"2secs", 2 * time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"10us", 10 * time.Microsecond, ""},
		{"7ns", 7, ""},
		{"1hrs", time.Hour, ""},
		{"3days", 72 * time.Hour, ""},
		{"1weeks", 7 * 24 * time.Hour, ""},
		{"0ns", 0, ""},
		{".5secs", 500 * time.Millisecond, ""},
		{"1.secs", time.Second, ""},
		{"0.1secs", 100 * time.Millisecond, ""},
		{"1.0000005secs", 1000000500, ""},
		{"", 0, "empty"},
		{"5", 0, "missing unit"},
		{"5s", 0, "unknown unit \"s\""},
		{"5 secs", 0, "unknown unit \" secs\""},
		{"secs", 0, "missing number"},
		{"-5secs", 0, "missing number"},
		{".secs", 0, "bad number"},
		{"1.2.3secs", 0, "bad number"},
		{"5SECS", 0, "unknown unit"},
		{"100000weeks", 0, "out of the range"},
		{"9223372036854775807ns", 0, "out of the range"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseDuration(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0ns"},
		{1, "1ns"},
		{999, "999ns"},
		{1500, "1500ns"},
		{2 * time.Microsecond, "2us"},
		{1500 * time.Microsecond, "1500us"},
		{250 * time.Millisecond, "250ms"},
		{5 * time.Second, "5secs"},
		{1500 * time.Millisecond, "1500ms"},
		{1000000500, "1.0000005secs"},
		{90 * time.Second, "90secs"},
		{15 * time.Minute, "15mins"},
		{90 * time.Minute, "90mins"},
		{time.Hour, "1hrs"},
		{36 * time.Hour, "36hrs"},
		{10 * 24 * time.Hour, "10days"},
		{14 * 24 * time.Hour, "2weeks"},
		{-5 * time.Second, "-5secs"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.in); got != tt.want {
			t.Errorf("FormatDuration(%d) = %q; want %q", int64(tt.in), got, tt.want)
		}
	}
	// Extremes must not panic.
	_ = FormatDuration(math.MaxInt64)
	_ = FormatDuration(math.MinInt64)
}

// TestRoundTrip checks Parse(Format(d)) against d: exact when the chosen unit
// divides d, else within the 15 significant digits stout prints.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.Int64Range(0, math.MaxInt64/2).Draw(t, "d"))
		s := FormatDuration(d)
		back, err := ParseDuration(s)
		if err != nil {
			t.Fatalf("ParseDuration(FormatDuration(%d) = %q): %v", int64(d), s, err)
		}
		diff := math.Abs(float64(back - d))
		if diff > float64(d)*1e-14+1 {
			t.Fatalf("round trip %d -> %q -> %d", int64(d), s, int64(back))
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"5secs", "2.5mins", "", "1.2.3ms", "99999999999weeks", ".ns", "0.000001ns", "1e5secs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %d < 0", s, int64(d))
		}
		// Whatever parses formats to something that parses to about the same.
		back, err := ParseDuration(FormatDuration(d))
		if err != nil {
			t.Fatalf("reparse of %q (%d): %v", FormatDuration(d), int64(d), err)
		}
		if diff := math.Abs(float64(back - d)); diff > float64(d)*1e-14+1 {
			t.Fatalf("%q -> %d -> %q -> %d", s, int64(d), FormatDuration(d), int64(back))
		}
	})
}
