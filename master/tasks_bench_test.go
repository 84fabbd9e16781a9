package master

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// The master's own work per task, without HTTP: an offer of a whole agent,
// an ACCEPT of 80 tasks, then each task's TASK_STARTING and TASK_RUNNING
// from the agent and their acknowledgements, on the state directly
// (`mezzo bench cluster` measures the same through the real process).
// The work is per task (b.N tasks); cpu-ns/task is the process's CPU time
// per task, steadier than ns/op on a shared machine.

// benchLaunchSetup is a harness with an agent per 80 tasks and one
// framework.
func benchLaunchSetup(b *testing.B, agents int) (*harness, []*fakeAgent, *fakeFramework) {
	h := newHarness(&testing.T{})
	var as []*fakeAgent
	for i := range agents {
		as = append(as, h.addAgent(fmt.Sprintf("a%d", i), "cpus:8;mem:16384;disk:102400;ports:[31000-32000]"))
	}
	f := h.subscribe(fwInfo("bench"))
	return h, as, f
}

func simTask(id, agent string) *mesos.TaskInfo {
	return &mesos.TaskInfo{
		Name:      proto.String(id),
		TaskId:    &mesos.TaskID{Value: proto.String(id)},
		AgentId:   agentID(agent),
		Resources: resources.MustParse("cpus:0.1;mem:32").Proto(),
		Command:   &mesos.CommandInfo{Shell: proto.Bool(true), Value: proto.String("true")},
		Labels:    &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String("sim_duration"), Value: proto.String("never")}}},
	}
}

// launchAll offers every agent to f and launches 80 tasks on each.
func launchAll(b *testing.B, h *harness, as []*fakeAgent, f *fakeFramework, seq *int) []string {
	var ids []string
	for _, a := range as {
		o := h.offer(f, a, "*", "cpus:8;mem:16384;disk:102400;ports:[31000-32000]")
		var tasks []*mesos.TaskInfo
		for range 80 {
			*seq++
			id := fmt.Sprintf("t%d", *seq)
			ids = append(ids, a.id+"/"+id)
			tasks = append(tasks, simTask(id, a.id))
		}
		if err := f.call(acceptCall([]*mesos.Offer{o}, launch(tasks...))); err != nil {
			b.Fatal(err)
		}
		a.drain()
	}
	return ids
}

// cpuNow is this process's user+system CPU time: on a shared machine it
// varies much less than wall time (GC workers included).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkLaunch(b *testing.B) {
	agents := max(1, b.N/80)
	h, as, f := benchLaunchSetup(b, agents)
	seq := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNow()
	launchAll(b, h, as, f, &seq)
	b.StopTimer()
	b.ReportMetric(float64((cpuNow()-cpu).Nanoseconds())/float64(agents*80), "cpu-ns/task")
}

// BenchmarkStatusRoundTrips: per task, STARTING and RUNNING from the
// agent, each forwarded to the framework and acknowledged.
func BenchmarkStatusRoundTrips(b *testing.B) {
	agents := max(1, b.N/80)
	h, as, f := benchLaunchSetup(b, agents)
	seq := 0
	ids := launchAll(b, h, as, f, &seq)
	byID := map[string]*fakeAgent{}
	for _, a := range as {
		byID[a.id] = a
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNow()
	for _, state := range []mesos.TaskState{mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING} {
		for _, key := range ids {
			aid, tid, _ := strings.Cut(key, "/")
			a := byID[aid]
			u := a.update(f.id, tid, state, true)
			f.drain()
			if err := f.call(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
				AgentId: agentID(aid), TaskId: &mesos.TaskID{Value: proto.String(tid)}, Uuid: u}}); err != nil {
				b.Fatal(err)
			}
			if evs := a.drain(); len(evs) != 1 || evs[0].GetType() != protocol.AgentEvent_ACKNOWLEDGE {
				b.Fatalf("agent got %v", eventTypes(evs))
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuNow()-cpu).Nanoseconds())/float64(len(ids)), "cpu-ns/task")
}

// BenchmarkOfferDecline: offers of whole agents made to a framework (one
// OFFERS event per 100) and declined by it (one DECLINE per event), per
// offer: what the offers a framework does not need cost the master.
func BenchmarkOfferDecline(b *testing.B) {
	h, as, f := benchLaunchSetup(b, 100)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNow()
	for done := 0; done < b.N; done += len(as) {
		offers := allocator.Offers{"*": {}}
		for _, a := range as {
			offers["*"][a.id] = resources.MustParse("cpus:8;mem:16384;disk:102400;ports:[31000-32000]")
		}
		h.s.allocated(f.id, offers, h.now)
		var ids []*mesos.OfferID
		for _, o := range f.offers() {
			ids = append(ids, o.GetId())
		}
		if err := f.call(&schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(), Decline: &schedulerpb.Call_Decline{OfferIds: ids}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuNow()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/offer")
}
