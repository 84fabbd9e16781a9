package cputime

import (
	"runtime"
	"testing"
)

// TestThreadAdvances: busy work on a locked thread shows up as CPU time.
func TestThreadAdvances(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("measured on Linux only")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := Thread()
	if start <= 0 {
		t.Fatalf("Thread() = %v, want > 0", start)
	}
	x := 0
	for i := 0; i < 20_000_000; i++ {
		x += i ^ (x >> 3)
	}
	if d := Thread() - start; d <= 0 {
		t.Fatalf("no CPU time after busy work (%d): %v", x, d)
	}
}
