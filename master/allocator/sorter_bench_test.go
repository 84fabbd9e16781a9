package allocator

import (
	"fmt"
	"testing"
)

// BenchmarkSorterRemoveAll mirrors Mesos's sorter benchmark: 1,000
// clients hold the allocations of 50,000 agents; one op removes all of
// them (the sorter work of recovering a whole cluster).
func BenchmarkSorterRemoveAll(b *testing.B) {
	const agents, clients = 50000, 1000
	names := newNameTable()
	agentQ := names.vecOfMap(map[string]float64{"cpus": 24, "mem": 4096, "disk": 4096})
	var total qv
	for i := 0; i < agents; i++ {
		total = total.add(agentQ)
	}
	root := &drfNode{weight: 1}
	nodes := make([]*drfNode, clients)
	for i := range nodes {
		nodes[i] = &drfNode{name: fmt.Sprintf("framework-%05d", i), weight: 1}
		root.insertKid(nodes[i])
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := 0; j < agents; j++ {
			nodes[j%clients].change(agentQ, +1, total)
		}
		b.StartTimer()
		for j := 0; j < agents; j++ {
			nodes[j%clients].change(agentQ, -1, total)
		}
	}
}

// BenchmarkSorterAdd is the other half: allocating 50,000 agents to 1,000
// clients, each allocation repositioning its client.
func BenchmarkSorterAdd(b *testing.B) {
	const agents, clients = 50000, 1000
	names := newNameTable()
	agentQ := names.vecOfMap(map[string]float64{"cpus": 24, "mem": 4096, "disk": 4096})
	var total qv
	for i := 0; i < agents; i++ {
		total = total.add(agentQ)
	}
	root := &drfNode{weight: 1}
	nodes := make([]*drfNode, clients)
	for i := range nodes {
		nodes[i] = &drfNode{name: fmt.Sprintf("framework-%05d", i), weight: 1}
		root.insertKid(nodes[i])
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for j := 0; j < agents; j++ {
			nodes[j%clients].change(agentQ, +1, total)
		}
		b.StopTimer()
		for j := 0; j < agents; j++ {
			nodes[j%clients].change(agentQ, -1, total)
		}
		b.StartTimer()
	}
}
