package main

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneMasterGC: a master runs at GOGC=400 under a memory limit, unless
// the environment says otherwise.
func TestTuneMasterGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	tuneMasterGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, GC percent changed to %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set, memory limit changed to %d", got)
	}

	// Unset (t.Setenv restores them afterwards).
	os.Unsetenv("GOGC")
	os.Unsetenv("GOMEMLIMIT")
	tuneMasterGC()
	if got := debug.SetGCPercent(100); got != masterGCPercent {
		t.Errorf("GC percent %d, want %d", got, masterGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got <= 0 || got == math.MaxInt64 {
		t.Errorf("memory limit %d, want half the machine's memory", got)
	}
}
