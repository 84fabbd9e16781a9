package agent

import (
	"testing"

	"pgregory.net/rapid"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"2GB", 2 << 30, false},
		{"512MB", 512 << 20, false},
		{"1.5GB", 3 << 29, false},
		{"100B", 100, false},
		{"0B", 0, false},
		{" 4KB ", 4096, false},
		{"1TB", 1 << 40, false},
		{"", 0, true},
		{"GB", 0, true},
		{"12", 0, true},
		{"12gb", 0, true},
		{"1..2MB", 0, true},
		{"-1MB", 0, true},
		{"99999999999TB", 0, true},
	} {
		got, err := ParseBytes(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestFormatParseBytesRoundTrip: what FormatBytes renders parses back.
func TestFormatParseBytesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.Int64Range(0, 1<<50).Draw(t, "n")
		s := FormatBytes(n)
		got, err := ParseBytes(s)
		if err != nil || got != n {
			t.Fatalf("ParseBytes(FormatBytes(%d)=%q) = %d, %v", n, s, got, err)
		}
	})
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"2GB", "512MB", "1.5KB", "", "x", "1e9B", "..B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseBytes(%q) = %d < 0", s, n)
		}
	})
}
