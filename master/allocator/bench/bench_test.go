package bench

import (
	"fmt"
	"testing"
	"time"
)

// The Go benchmarks mirror Mesos's allocator benchmarks
// (hierarchical_allocator_benchmarks.cpp): DeclineOffers, SuppressOffers,
// quota allocation, and sorter add/remove. Each op is one allocation run
// (or one sorter pass); setup and declines are not timed.

func benchDecline(b *testing.B, cfg Config) {
	cl, err := NewCluster(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, n := cl.Allocate()
		b.StopTimer()
		if n == 0 {
			cl.Clock.Advance(2 * time.Hour) // all filters expire
		}
		cl.DeclineAll(time.Hour)
		cl.Clock.Advance(time.Second)
		b.StartTimer()
	}
}

func BenchmarkDeclineOffers(b *testing.B) {
	for _, c := range []struct{ agents, fws int }{{1000, 100}, {10000, 1000}} {
		b.Run(fmt.Sprintf("agents=%d/frameworks=%d", c.agents, c.fws), func(b *testing.B) {
			benchDecline(b, Config{Agents: c.agents, Frameworks: c.fws})
		})
	}
}

func BenchmarkQuotaAllocation(b *testing.B) {
	for _, c := range []struct{ agents, roles int }{{1000, 1000}, {3000, 3000}} {
		b.Run(fmt.Sprintf("agents=%d/roles=%d", c.agents, c.roles), func(b *testing.B) {
			benchDecline(b, Config{Agents: c.agents, Frameworks: c.roles, Roles: c.roles, Quota: true})
		})
	}
}

// BenchmarkSuppressOffers: every framework suppresses after its first
// offers, so later runs find nobody to offer to (Mesos's SuppressOffers).
func BenchmarkSuppressOffers(b *testing.B) {
	cl, err := NewCluster(Config{Agents: 10000, Frameworks: 1000})
	if err != nil {
		b.Fatal(err)
	}
	cl.Allocate()
	for i := 0; i < 1000; i++ {
		cl.Alloc.SuppressOffers(FrameworkID(i), nil)
	}
	cl.DeclineAll(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, n := cl.Allocate(); n != 0 {
			b.Fatalf("suppressed frameworks got %d offers", n)
		}
	}
}

// BenchmarkIdle: a run when everything is already offered.
func BenchmarkIdle(b *testing.B) {
	cl, err := NewCluster(Config{Agents: 50000, Frameworks: 1000})
	if err != nil {
		b.Fatal(err)
	}
	cl.Allocate()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cl.Allocate()
	}
}

// BenchmarkRecoverAll: RecoverResources for every offer of 50,000 agents
// (end to end; BenchmarkSorterRemoveAll in package allocator is the sorter alone).
func BenchmarkRecoverAll(b *testing.B) {
	cl, err := NewCluster(Config{Agents: 50000, Frameworks: 1000})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cl.Allocate()
		offers := append([]offer(nil), cl.offers...)
		b.StartTimer()
		for _, o := range offers {
			cl.Alloc.RecoverResources(o.fw, o.agent, o.res, nil)
		}
	}
}
