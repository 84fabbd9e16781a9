package resources

import "testing"

// A typical agent's total and a typical task, as the allocator sees them
// (allocation_info set on offered/used resources).
var (
	benchAgent = MustParse("cpus:32;mem:256000;disk:1000000;ports:[31000-32000];gpus:2;" +
		"cpus(web):8;mem(web):16384;ports(web):[40000-40100]")
	benchTask = MustParse("cpus:0.5;mem:512;ports:[31005-31005]")
)

func BenchmarkAdd(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = benchAgent.Add(benchTask)
	}
}

func BenchmarkSubtract(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = benchAgent.Subtract(benchTask)
	}
}

func BenchmarkContains(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = benchAgent.Contains(benchTask)
	}
}

func BenchmarkAllocatableTo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = benchAgent.AllocatableTo("web")
	}
}

func BenchmarkAllocatedTo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = benchTask.AllocatedTo("web")
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Parse("cpus:32;mem:256000;disk:1000000;ports:[31000-32000];cpus(web):8", "*")
	}
}
