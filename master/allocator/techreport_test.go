package allocator

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// TestTechReportDRFExample replays the DRF example of the Mesos tech
// report: 100 CPUs and 100 GB in total; framework 1 runs tasks of
// ⟨4 CPU, 1 GB⟩, framework 2 tasks of ⟨1 CPU, 8 GB⟩. Each offer's
// receiver launches one task and declines the rest; DRF equalizes the
// dominant shares (CPU for F1, memory for F2) at 20 and 10 tasks.
func TestTechReportDRFExample(t *testing.T) {
	c := newCore(Options{Interval: time.Second})
	// Ten agents of 10 CPUs and 10 GB.
	for i := 0; i < 10; i++ {
		c.addAgent(fmt.Sprintf("a%d", i), nil, resources.MustParse("cpus:10;mem:10240"), nil)
	}
	task := map[string]resources.Resources{
		"f1": resources.MustParse("cpus:4;mem:1024"),
		"f2": resources.MustParse("cpus:1;mem:8192"),
	}
	for id := range task {
		c.addFramework(id, &mesos.FrameworkInfo{Role: proto.String(id)}, nil, true, FrameworkOptions{})
	}
	tasks := map[string]int{}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := 0; round < 200; round++ {
		res := c.allocate(now)
		launched := false
		for _, fid := range sortedKeys(res.offers) {
			for _, byAgent := range res.offers[fid] {
				for _, aid := range sortedKeys(byAgent) {
					offer := byAgent[aid]
					if offer.Contains(task[fid]) && !launched {
						// One task per allocation run, so the two
						// frameworks alternate by DRF order.
						tasks[fid]++
						launched = true
						c.recoverResources(fid, aid, offer.Subtract(task[fid]), nil, now)
						continue
					}
					c.recoverResources(fid, aid, offer, &mesos.Filters{RefuseSeconds: proto.Float64(1)}, now)
				}
			}
		}
		now = now.Add(time.Second)
		if !launched && round > 0 {
			break
		}
	}
	if tasks["f1"] != 20 || tasks["f2"] != 10 {
		t.Fatalf("tasks = %v, want f1:20 f2:10", tasks)
	}
	s1 := dominant(c.tree["f1"].alloc, c.totalQ)
	s2 := dominant(c.tree["f2"].alloc, c.totalQ)
	if s1 < 0.79 || s2 < 0.79 {
		t.Errorf("dominant shares %.2f, %.2f; want both 0.80", s1, s2)
	}
}
