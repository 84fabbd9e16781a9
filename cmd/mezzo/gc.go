package main

import (
	"os"
	"runtime/debug"
	"syscall"
)

// Garbage collection of a master. A master's heap grows with the cluster
// (about 15 KB live per agent) and grows fastest exactly when time
// matters: after a failover, when the new leader's heap goes from a
// follower's few megabytes to the whole cluster's state in seconds while
// every agent re-registers. Go's default (GOGC=100) collects at each
// doubling on the way up; on a 2-core machine with 40,000 agents the
// collector took about a sixth of the new leader's CPU. A master therefore
// runs at GOGC=400, trading memory for CPU, and bounds that trade with a
// soft memory limit of half the machine's memory, past which the collector
// works harder instead of letting the heap grow. GOGC and GOMEMLIMIT in
// the environment win over both.
const (
	masterGCPercent       = 400
	masterMemoryLimitPart = 2 // of the machine's memory
)

// tuneMasterGC applies the master's collector settings (see above).
func tuneMasterGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(masterGCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		var si syscall.Sysinfo_t
		if err := syscall.Sysinfo(&si); err == nil && si.Totalram > 0 {
			debug.SetMemoryLimit(int64(uint64(si.Totalram) * uint64(si.Unit) / masterMemoryLimitPart))
		}
	}
}
