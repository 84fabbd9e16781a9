//go:build !linux

// Package cputime reads the CPU time of the calling OS thread, for the
// allocator's benchmarks; outside Linux it is not measured.
package cputime

import "time"

// Thread returns 0: not measured outside Linux.
func Thread() time.Duration { return 0 }
