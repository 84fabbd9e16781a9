package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/oversub"
	"mezzo/api/mesos"

	"pgregory.net/rapid"
)

// Pure tests of the agent-side eviction of lent reservations' tenants
// (lending.go). Seed: oversubscription-for-reservation, "total >= occupied
// + occupiedRev + evicting", "Prefer to #1 [the agent calculates how many
// resources to evict, chooses which executor to evict and then does
// eviction]", and its cases 1 and 2 of over-eviction.

// lendingAgent: 4 cpus, nothing else (the arithmetic is per resource).
func lendingAgent(t *testing.T) *ovsAgent {
	return newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{})
}

// tenant runs a task on lent cpus, started d after the fake clock's start.
func (o *ovsAgent) tenant(fid, tid, cpus string, after time.Duration) *executor {
	o.clk.Advance(after)
	return o.running(fwInfo(fid, mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES),
		withResources(pureCustomTask(tid, "E"+tid), "cpus:"+cpus, "lent"))
}

func (o *ovsAgent) regular(fid, tid, cpus string) *executor {
	return o.running(fwInfo(fid), withResources(pureCustomTask(tid, "E"+tid), "cpus:"+cpus, "regular"))
}

// launchRegular sends RUN_TASK of a regular task and returns the transcript.
func (o *ovsAgent) launchRegular(fid, tid, cpus string) []string {
	o.runTask(runTaskEv(fwInfo(fid), withResources(pureCustomTask(tid, "E"+tid), "cpus:"+cpus, "regular")))
	return o.take()
}

func started(lines []string, eid string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "start "+eid+" ") {
			return true
		}
	}
	return false
}

// A launch on a lent reservation evicts the fewest tenants, newest first,
// never a regular container nor estimator slack, and starts once the
// evicted containers have ended.
func TestPureLentEvictionFewestNewest(t *testing.T) {
	o := lendingAgent(t)
	o.regular("FR", "R1", "1")
	o.running(fwInfo("FS", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES),
		withResources(pureCustomTask("S1", "ES1"), "cpus:1", "slack")) // estimator slack: not PlanEviction's
	o.tenant("FT", "A", "1", time.Second)
	o.tenant("FT", "B", "1", time.Second)
	o.tenant("FT", "C", "1", time.Second)
	got := o.launchRegular("FL", "L1", "2")
	want := []string{"checkpoint framework FL", "destroy EC grace=0s", "destroy EB grace=0s"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("launch:\n got %q\nwant %q", got, want)
	}
	o.exited("FT", "EB", &containerizer.Termination{Status: 9, Destroyed: true})
	got = o.take()
	if started(got, "EL1") || got[0] != "update B TASK_LOST SOURCE_AGENT REASON_CONTAINER_PREEMPTED" {
		t.Fatalf("after B ended: %q (C still holds what the launch needs)", got)
	}
	if msg := o.status("FT", "B").GetMessage(); !strings.Contains(msg, "reclaimed") {
		t.Errorf("message %q does not say the owner reclaimed the reservation", msg)
	}
	o.exited("FT", "EC", &containerizer.Termination{Status: 9, Destroyed: true})
	if got = o.take(); !started(got, "EL1") {
		t.Fatalf("after C ended the launch did not start: %q", got)
	}
	for _, eid := range []string{"ER1", "ES1", "EA"} {
		if e := o.executor(map[string]string{"ER1": "FR", "ES1": "FS", "EA": "FT"}[eid], eid); e.phase != phaseRunning {
			t.Errorf("%s is %v, want RUNNING", eid, e.phase)
		}
	}
	if m := o.metricsSnapshot(); m["slave/lent_evictions"] != 2 || m["slave/executors_preempted"] != 2 {
		t.Errorf("metrics: lent_evictions %v executors_preempted %v", m["slave/lent_evictions"], m["slave/executors_preempted"])
	}
}

// Case 1 of the design: a regular launch arrives while a tenant is already
// terminating. What it returns is counted: no other tenant is evicted, and
// the launch starts when the terminating one has ended.
func TestPureLentEvictionCase1(t *testing.T) {
	o := lendingAgent(t)
	o.regular("FR", "R1", "2")
	o.tenant("FT", "A", "1", time.Second)
	b := o.tenant("FT", "B", "1", time.Second)
	o.shutdownExecutor(b) // ending on its own (e.g. its framework asked)
	o.take()
	got := o.launchRegular("FL", "L1", "1")
	if len(got) != 1 || got[0] != "checkpoint framework FL" {
		t.Fatalf("launch while B ends: %q; want no eviction and no start yet", got)
	}
	o.exited("FT", "EB", &containerizer.Termination{Status: 0})
	if got = o.take(); !started(got, "EL1") {
		t.Fatalf("after B ended: %q", got)
	}
	if e := o.executor("FT", "EA"); e.phase != phaseRunning {
		t.Fatalf("tenant A was evicted (%v): over-eviction", e.phase)
	}
}

// Case 2 of the design: two regular launches, the second while the first
// one's victim is still being evicted. The victim's resources cover both:
// the second launch evicts nobody else, and both start once it has ended.
func TestPureLentEvictionCase2(t *testing.T) {
	o := lendingAgent(t)
	o.regular("FR", "R1", "1")
	o.tenant("FT", "A", "1", time.Second)
	o.tenant("FT", "B", "2", time.Second)
	got := o.launchRegular("FL", "L1", "1")
	want := []string{"checkpoint framework FL", "destroy EB grace=0s"} // one tenant (fewest), the newest
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first launch:\n got %q\nwant %q", got, want)
	}
	got = o.launchRegular("FL", "L2", "1")
	if len(got) != 0 {
		t.Fatalf("second launch while B is evicting: %q; want nothing (B's 2 cpus cover both)", got)
	}
	o.exited("FT", "EB", &containerizer.Termination{Status: 9, Destroyed: true})
	got = o.take()
	if !started(got, "EL1") || !started(got, "EL2") {
		t.Fatalf("after B ended: %q; want both launches started", got)
	}
	if e := o.executor("FT", "EA"); e.phase != phaseRunning {
		t.Fatalf("tenant A was evicted (%v): over-eviction", e.phase)
	}
	// A third launch needs A's cpu now: A goes.
	got = o.launchRegular("FL", "L3", "1")
	if len(got) != 1 || got[0] != "destroy EA grace=0s" {
		t.Fatalf("third launch: %q", got)
	}
}

// A waiting launch killed by its framework ends TASK_KILLED and never
// starts; one whose evicted tenants do not die starts after
// lendingWaitLimit anyway.
func TestPureLentEvictionWaitingLaunch(t *testing.T) {
	o := lendingAgent(t)
	o.regular("FR", "R1", "2")
	o.tenant("FT", "A", "2", time.Second)
	o.launchRegular("FL", "L1", "1")
	o.killTask(killTaskEv("FL", "L1", 0))
	o.want("update L1 TASK_KILLED SOURCE_AGENT REASON_TASK_KILLED_DURING_LAUNCH", "forget framework FL")
	o.launchRegular("FL", "L2", "1")
	o.advance(lendingWaitLimit - time.Millisecond)
	if got := o.take(); started(got, "EL2") {
		t.Fatalf("started early: %q", got)
	}
	o.advance(time.Millisecond)
	if got := o.take(); !started(got, "EL2") {
		t.Fatalf("not started after the wait limit: %q", got)
	}
	o.exited("FT", "EA", &containerizer.Termination{Status: 9, Destroyed: true})
	if got := o.take(); started(got, "EL1") {
		t.Fatalf("the killed launch started: %q", got)
	}
}

// A revocable launch evicts nobody, and without tenants on lent resources
// a regular launch starts as it always has.
func TestPureLentEvictionOnlyForRegularLaunches(t *testing.T) {
	o := lendingAgent(t)
	o.regular("FR", "R1", "3")
	o.tenant("FT", "A", "1", time.Second)
	o.runTask(runTaskEv(fwInfo("FT", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES),
		withResources(pureCustomTask("B", "EB"), "cpus:1", "lent")))
	if got := o.take(); !started(got, "EB") {
		t.Fatalf("revocable launch: %q", got)
	}
	p := lendingAgent(t)
	p.regular("FR", "R1", "4")
	if got := p.launchRegular("FL", "L1", "1"); !started(got, "EL1") {
		t.Fatalf("launch without tenants: %q", got)
	}
}

// Properties of eviction on the agent's loop under random interleavings of
// tenant starts, regular launches (never more than the master guarantees:
// regular resources within the total) and containers ending: the agent
// destroys only tenants; it evicts only when the launch needs it; and once
// everything evicted has ended, every launch has started and regular
// containers plus live tenants fit the total (the design's inequality,
// evicting = 0).
func TestPureLentEvictionProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		const total = 8.0
		o := newOvsAgent(t, "cpus:8;mem:4096", oversub.Config{})
		tenant := map[string]bool{}
		fwOf := map[string]string{}
		n := 0
		// cpusOf sums cpus of live executors, by kind.
		sums := func() (regular, tenants, evicting float64) {
			for _, fw := range o.frameworks {
				for _, e := range fw.executors {
					c := e.accounted().Scalar("cpus")
					switch {
					case e.phase == phaseTerminated:
					case e.phase == phaseTerminating:
						evicting += c
					case tenant[e.id]:
						tenants += c
					default:
						regular += c
					}
				}
			}
			for _, d := range o.deferred {
				r, _ := launchResources(d.info, d.kind, true, d.item)
				regular += r.Scalar("cpus")
			}
			return
		}
		settle := func() {
			for _, fw := range o.frameworks {
				for _, e := range fw.executors {
					if e.launching {
						o.launched(e, containerizer.Container{ID: e.containerID, Pid: 1})
					}
				}
			}
			for _, l := range o.take() {
				if eid, ok := strings.CutPrefix(l, "destroy "); ok {
					eid, _, _ = strings.Cut(eid, " ")
					if !tenant[eid] {
						rt.Fatalf("destroyed %s, not a tenant", eid)
					}
				}
			}
		}
		endAll := func() {
			for {
				var ending []*executor
				for _, fw := range o.frameworks {
					for _, e := range fw.executors {
						if e.phase == phaseTerminating {
							ending = append(ending, e)
						}
					}
				}
				if len(ending) == 0 {
					return
				}
				for _, e := range ending {
					o.exited(fwOf[e.id], e.id, &containerizer.Termination{Status: 9, Destroyed: true})
					settle()
				}
			}
		}
		for range rapid.IntRange(1, 25).Draw(rt, "steps") {
			n++
			tid := fmt.Sprintf("t%d", n)
			k := float64(rapid.IntRange(1, 3).Draw(rt, "cpus"))
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0: // the master lends only what nobody holds
				if r, tn, ev := sums(); r+tn+ev+k <= total {
					tenant["E"+tid], fwOf["E"+tid] = true, "FT"
					o.clk.Advance(time.Second)
					o.runTask(runTaskEv(fwInfo("FT", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES),
						withResources(pureCustomTask(tid, "E"+tid), fmt.Sprintf("cpus:%g", k), "lent")))
				}
			case 1: // the master guarantees regular resources within the total
				r, tn, ev := sums()
				if r+k > total {
					break
				}
				before := len(o.ovs.evictedIDs(o))
				fwOf["E"+tid] = "FL"
				o.runTask(runTaskEv(fwInfo("FL"), withResources(pureCustomTask(tid, "E"+tid), fmt.Sprintf("cpus:%g", k), "regular")))
				if after := len(o.ovs.evictedIDs(o)); after > before && r+k+tn <= total {
					rt.Fatalf("evicted although regular %g + launch %g + tenants %g fit %g (evicting %g)", r, k, tn, total, ev)
				}
			case 2: // a live container ends by itself
				var live []*executor
				for _, fid := range o.fwOrder {
					for _, eid := range o.frameworks[fid].order {
						if e := o.frameworks[fid].executors[eid]; e != nil && e.phase != phaseTerminated {
							live = append(live, e)
						}
					}
				}
				if len(live) > 0 {
					e := live[rapid.IntRange(0, len(live)-1).Draw(rt, "which")]
					o.exited(fwOf[e.id], e.id, &containerizer.Termination{Status: 0})
				}
			case 3:
				endAll()
			}
			settle()
		}
		endAll()
		if len(o.deferred) != 0 {
			rt.Fatalf("%d launches still wait with nothing left to evict", len(o.deferred))
		}
		if r, tn, _ := sums(); r+tn > total {
			rt.Fatalf("regular %g + tenants %g exceed the total %g", r, tn, total)
		}
	})
}

// evictedIDs lists the executors being or having been preempted (tests).
func (s *oversubState) evictedIDs(o *ovsAgent) []string {
	var out []string
	for _, fw := range o.frameworks {
		for _, e := range fw.executors {
			if e.pending != nil && e.pending.reason == mesos.TaskStatus_REASON_CONTAINER_PREEMPTED {
				out = append(out, e.id)
			}
		}
	}
	return out
}
