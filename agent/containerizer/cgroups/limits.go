package cgroups

import (
	"fmt"
	"math"

	"mezzo/api/mesos"
)

// Limits are what a container's cgroups enforce, derived from its resources.
type Limits struct {
	// CPUs is the sum of the container's "cpus" resources.
	CPUs float64
	// MemBytes is the sum of the container's "mem" resources, in bytes.
	MemBytes uint64
	// RevocableCPUs: some of the cpus are revocable (oversubscribed or
	// lent); with Config.RevocableCPULowPriority the container gets
	// SharesPerCPURevocable per cpu instead of SharesPerCPU.
	RevocableCPUs bool
}

// LimitsOf sums the scalar "cpus" and "mem" (MB) resources of a container
// across roles and reservations. Negative, NaN or infinite values are an
// error naming the resource.
func LimitsOf(rs []*mesos.Resource) (Limits, error) {
	var l Limits
	var memMB float64
	for _, r := range rs {
		name := r.GetName()
		if name != "cpus" && name != "mem" {
			continue
		}
		if r.GetType() != mesos.Value_SCALAR || r.GetScalar() == nil {
			return Limits{}, fmt.Errorf("resource %q: not a scalar", name)
		}
		v := r.GetScalar().GetValue()
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return Limits{}, fmt.Errorf("resource %q: invalid value %v", name, v)
		}
		if name == "cpus" {
			l.CPUs += v
			l.RevocableCPUs = l.RevocableCPUs || r.Revocable != nil
		} else {
			memMB += v
		}
	}
	if memMB*(1<<20) >= math.MaxUint64/2 {
		return Limits{}, fmt.Errorf("resource \"mem\": %v MB is too large", memMB)
	}
	l.MemBytes = uint64(memMB * (1 << 20))
	return l, nil
}

// CPUShares is cpu.shares for cpus: 1024 per cpu, at least 2 (as Mesos,
// truncating the fraction).
func CPUShares(cpus float64) uint64 {
	s := uint64(cpus * SharesPerCPU)
	if s < MinShares {
		return MinShares
	}
	return s
}

// SharesFor is cpu.shares for a container's limits: CPUShares, or for a
// container holding revocable cpus when lowPriority is set (the agent's
// --revocable_cpu_low_priority), 16 per cpu, at least 2, as Mesos's cgroups
// cpu isolator does, so that a regular container always wins the CPU.
func SharesFor(lim Limits, lowPriority bool) uint64 {
	if lowPriority && lim.RevocableCPUs {
		return max(uint64(lim.CPUs*SharesPerCPURevocable), MinShares)
	}
	return CPUShares(lim.CPUs)
}

// CFSQuotaUs is the CFS quota for cpus with the period CFSPeriodUs:
// cpus × period, at least 1ms (as Mesos).
func CFSQuotaUs(cpus float64) int64 {
	q := int64(cpus * CFSPeriodUs)
	if q < MinCFSQuotaUs {
		return MinCFSQuotaUs
	}
	return q
}

// MemLimitBytes is the hard (and soft) memory limit for a request of
// memBytes: the request, at least 32MB (as Mesos).
func MemLimitBytes(memBytes uint64) uint64 {
	if memBytes < MinMemoryBytes {
		return MinMemoryBytes
	}
	return memBytes
}

// CPUWeight converts cpu.shares to the v2 cpu.weight (1..10000) as the OCI
// runtimes do, so a container gets the same relative share on both
// versions: 2 shares map to 1, 262144 to 10000, 1024 to 39.
func CPUWeight(shares uint64) uint64 {
	if shares < 2 {
		shares = 2
	}
	if shares > 262144 {
		shares = 262144
	}
	return 1 + ((shares-2)*9999)/262142
}
