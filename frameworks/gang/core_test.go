package gang

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/frameworks/offers"
	"mezzo/resources"
)

var t0 = time.Unix(1_700_000_000, 0)

func offer(id, res string) *mesos.Offer {
	return &mesos.Offer{
		Id:          &mesos.OfferID{Value: proto.String(id)},
		FrameworkId: &mesos.FrameworkID{Value: proto.String("fw")},
		AgentId:     &mesos.AgentID{Value: proto.String("agent-" + id)},
		Hostname:    proto.String("host-" + id),
		Resources:   resources.MustParse(res).Proto(),
	}
}

func status(id string, s mesos.TaskState) *mesos.TaskStatus {
	return &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(id)}, State: s.Enum()}
}

func newTestCore(t interface{ Fatal(...any) }, jobs ...Job) *core {
	need, err := offers.ParseNeed("cpus:1;mem:10")
	if err != nil {
		t.Fatal(err)
	}
	c := newCore(jobs, need, 10*time.Second, 5*time.Second, 2)
	c.started(t0)
	c.submitDue(t0)
	return c
}

// render lists launches as "offer:task,task".
func render(ls []launch) string {
	var out []string
	for _, l := range ls {
		var ids []string
		for _, t := range l.tasks {
			ids = append(ids, t.id)
		}
		out = append(out, l.offer.GetId().GetValue()+":"+strings.Join(ids, ","))
	}
	return strings.Join(out, " ")
}

// All or nothing (paper §4.4, the MPI case): offers are held, unanswered,
// until together they have room for the whole gang, which then starts at
// once; an offer too small for one rank is declined straight away.
func TestGangWaitsForAllItsSlots(t *testing.T) {
	c := newTestCore(t, Job{Name: "mpi", Tasks: 4})
	if ls, dec := c.offered(offer("o1", "cpus:2;mem:100"), t0); ls != nil || dec != nil {
		t.Fatalf("launched %s / declined %d with 2 of 4 slots", render(ls), len(dec))
	}
	if _, dec := c.offered(offer("o2", "cpus:0.5;mem:100"), t0); len(dec) != 1 {
		t.Fatal("an offer without room for a rank was not declined")
	}
	if c.heldCPUs() != 2 {
		t.Fatalf("holding %g cpus, want 2", c.heldCPUs())
	}
	ls, dec := c.offered(offer("o3", "cpus:3;mem:100"), t0.Add(2*time.Second))
	if got, want := render(ls), "o1:mpi.1.0,mpi.1.1 o3:mpi.1.2,mpi.1.3"; got != want || dec != nil {
		t.Fatalf("launched %q (declined %d), want %q", got, len(dec), want)
	}
	// 2 cpus held for 2 s before the gang could start.
	if c.heldMilliSeconds/1000 != 4 || c.heldCPUs() != 0 {
		t.Fatalf("held cpu·s %g, holding %g", c.heldMilliSeconds/1000, c.heldCPUs())
	}
	if c.wantsOffers(t0) {
		t.Fatal("still wants offers with no job waiting")
	}
}

// A gang that cannot gather its slots within the bound gives every held
// offer back and asks for none during the back-off.
func TestHoldBoundGivesOffersBack(t *testing.T) {
	c := newTestCore(t, Job{Name: "mpi", Tasks: 4})
	c.offered(offer("o1", "cpus:1;mem:100"), t0)
	c.offered(offer("o2", "cpus:1;mem:100"), t0.Add(time.Second))
	if next := c.next(); !next.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("wake at %v, want the bound", next)
	}
	if back := c.wake(t0.Add(9 * time.Second)); back != nil {
		t.Fatal("gave offers back before the bound")
	}
	back := c.wake(t0.Add(10 * time.Second))
	if len(back) != 2 || c.giveUps != 1 || c.heldCPUs() != 0 {
		t.Fatalf("gave back %d offers (give-ups %d, still holding %g)", len(back), c.giveUps, c.heldCPUs())
	}
	if c.wantsOffers(t0.Add(12*time.Second)) || !c.wantsOffers(t0.Add(15*time.Second)) {
		t.Fatal("the back-off is not 5 s")
	}
	if _, dec := c.offered(offer("o3", "cpus:4;mem:100"), t0.Add(12*time.Second)); len(dec) != 1 {
		t.Fatal("an offer during the back-off was held")
	}
	c.wake(t0.Add(15 * time.Second))
	if ls, _ := c.offered(offer("o4", "cpus:4;mem:100"), t0.Add(16*time.Second)); render(ls) != "o4:mpi.1.0,mpi.1.1,mpi.1.2,mpi.1.3" {
		t.Fatalf("after the back-off: %s", render(ls))
	}
	// 1 cpu for 10 s and 1 for 9 s were held in vain.
	if c.heldMilliSeconds/1000 != 19 {
		t.Fatalf("held cpu·s %g, want 19", c.heldMilliSeconds/1000)
	}
}

// A rescinded held offer no longer counts.
func TestRescindedOfferIsDropped(t *testing.T) {
	c := newTestCore(t, Job{Name: "mpi", Tasks: 2})
	c.offered(offer("o1", "cpus:1;mem:100"), t0)
	c.rescinded("o1", t0.Add(time.Second))
	if ls, _ := c.offered(offer("o2", "cpus:1;mem:100"), t0.Add(2*time.Second)); ls != nil {
		t.Fatalf("launched %s on a rescinded offer", render(ls))
	}
}

// When a rank fails, the rest of its gang is killed and the job queued
// again first in line; late updates of the old gang change nothing; after
// MaxAttempts the job fails.
func TestFailedRankRestartsTheGang(t *testing.T) {
	c := newTestCore(t, Job{Name: "mpi", Tasks: 2}, Job{Name: "next", Tasks: 1})
	c.offered(offer("o1", "cpus:2;mem:100"), t0)
	kill := c.update(status("mpi.1.0", mesos.TaskState_TASK_FAILED), t0)
	if len(kill) != 1 || kill[0].id != "mpi.1.1" {
		t.Fatalf("kill %v", kill)
	}
	if c.queue[0].spec.Name != "mpi" {
		t.Fatalf("queue head %s, want mpi again", c.queue[0].spec.Name)
	}
	if got := render(mustLaunch(c.offered(offer("o2", "cpus:2;mem:100"), t0))); got != "o2:mpi.2.0,mpi.2.1" {
		t.Fatalf("relaunch %q", got)
	}
	if k := c.update(status("mpi.1.1", mesos.TaskState_TASK_KILLED), t0); k != nil || c.queue[0].spec.Name != "next" {
		t.Fatalf("the old gang's kill changed the new one: kill %v, queue head %s", k, c.queue[0].spec.Name)
	}
	c.update(status("mpi.2.1", mesos.TaskState_TASK_LOST), t0.Add(time.Second))
	j := c.jobs[0]
	if !j.failed || j.finished.IsZero() {
		t.Fatalf("after two attempts: failed %v", j.failed)
	}
	if c.milli != 1000 { // mpi.2.0 runs until its kill is confirmed
		t.Fatalf("running cpus %d m", c.milli)
	}
}

func mustLaunch(ls []launch, _ []*mesos.Offer) []launch { return ls }

// Property: whatever offers come and go, a gang starts only whole (every
// rank, each on an offer it held, no offer used twice), and the cpu
// accounting matches the ranks running.
func TestAllOrNothingProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var jobs []Job
		for i := range rapid.IntRange(1, 4).Draw(rt, "jobs") {
			jobs = append(jobs, Job{Name: fmt.Sprint("j", i), Tasks: rapid.IntRange(1, 6).Draw(rt, "size")})
		}
		c := newTestCore(rt, jobs...)
		now := t0
		used := map[string]bool{}
		live := map[string]bool{}
		for step := range 200 {
			now = now.Add(time.Duration(rapid.IntRange(0, 4000).Draw(rt, "dt")) * time.Millisecond)
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				id := fmt.Sprint("o", step)
				ls, _ := c.offered(offer(id, fmt.Sprintf("cpus:%d;mem:100", rapid.IntRange(0, 3).Draw(rt, "cpus"))), now)
				ranks := map[*job]int{}
				for _, l := range ls {
					if used[l.offer.GetId().GetValue()] {
						rt.Fatalf("offer %s used twice", l.offer.GetId().GetValue())
					}
					used[l.offer.GetId().GetValue()] = true
					for _, t := range l.tasks {
						ranks[t.job]++
						live[t.id] = true
					}
				}
				for j, n := range ranks {
					if n != j.spec.Tasks {
						rt.Fatalf("job %s started %d of %d ranks", j.spec.Name, n, j.spec.Tasks)
					}
				}
			case 2:
				for _, o := range c.wake(now) {
					used[o.GetId().GetValue()] = true
				}
			case 3:
				for id := range live {
					state := mesos.TaskState_TASK_FINISHED
					if rapid.IntRange(0, 5).Draw(rt, "fail") == 0 {
						state = mesos.TaskState_TASK_FAILED
					}
					delete(live, id)
					for _, k := range c.update(status(id, state), now) {
						delete(live, k.id)
						c.update(status(k.id, mesos.TaskState_TASK_KILLED), now)
					}
					break
				}
			}
			if c.milli != int64(len(live))*1000 {
				rt.Fatalf("cpus %d m with %d ranks live", c.milli, len(live))
			}
		}
	})
}
