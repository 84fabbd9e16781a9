package agent

import (
	"strings"
	"testing"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/oversub"
	"mezzo/api/mesos"
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
