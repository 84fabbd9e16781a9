package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestProcCPU: /proc's account of this process agrees with getrusage's
// (to the kernel's 10 ms tick) after some CPU work.
func TestProcCPU(t *testing.T) {
	deadline := time.Now().Add(30 * time.Second)
	for cpuTime(syscall.RUSAGE_SELF) < 200*time.Millisecond && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			_ = i * i
		}
	}
	before := cpuTime(syscall.RUSAGE_SELF)
	got, err := procCPU(os.Getpid())
	after := cpuTime(syscall.RUSAGE_SELF)
	if err != nil {
		t.Fatal(err)
	}
	const tick = 10 * time.Millisecond
	if got < before-2*tick || got > after+2*tick {
		t.Fatalf("procCPU = %v, getrusage says %v..%v", got, before, after)
	}
	if _, err := procCPU(-1); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
