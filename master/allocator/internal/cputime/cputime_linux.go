// Package cputime reads the CPU time of the calling OS thread, for the
// allocator's benchmarks (allocator.Sync and master/allocator/bench): on
// a machine shared with other work, wall times include waiting for a
// core, CPU times do not.
package cputime

import (
	"syscall"
	"time"
	"unsafe"
)

// Thread is the CPU time consumed by the calling OS thread
// (CLOCK_THREAD_CPUTIME_ID), 0 if it cannot be read. The caller must be
// locked to its thread (runtime.LockOSThread) between two readings.
func Thread() time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
