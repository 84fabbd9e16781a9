package batch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/frameworks/loop"
	"mezzo/frameworks/offers"
	"mezzo/resources"
)

var t0 = time.Unix(1_700_000_000, 0)

func offer(agent, res string, blocks ...string) *mesos.Offer {
	o := &mesos.Offer{
		Id:          &mesos.OfferID{Value: proto.String("o-" + agent)},
		FrameworkId: &mesos.FrameworkID{Value: proto.String("fw")},
		AgentId:     &mesos.AgentID{Value: proto.String(agent)},
		Hostname:    proto.String(agent),
		Resources:   resources.MustParse(res).Proto(),
	}
	if len(blocks) > 0 {
		o.Attributes = []*mesos.Attribute{{Name: proto.String("blocks"), Type: mesos.Value_TEXT.Enum(),
			Text: &mesos.Value_Text{Value: proto.String(strings.Join(blocks, ","))}}}
	}
	return o
}

func status(id string, s mesos.TaskState) *mesos.TaskStatus {
	return &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(id)}, State: s.Enum()}
}

func newTestCore(t *testing.T, delay time.Duration, jobs ...Job) *core {
	t.Helper()
	need, err := offers.ParseNeed("cpus:1;mem:10")
	if err != nil {
		t.Fatal(err)
	}
	c := newCore(jobs, need, delay, "blocks", 2)
	c.started(t0)
	c.submitDue(t0)
	return c
}

func scan(name string, blocks ...string) Job {
	j := Job{Name: name, Command: "true"}
	for _, b := range blocks {
		j.Tasks = append(j.Tasks, Task{Block: b})
	}
	return j
}

// ids renders launches as "task@local|remote".
func ids(ls []launch) string {
	var out []string
	for _, l := range ls {
		where := "remote"
		if l.task.local {
			where = "local"
		}
		out = append(out, l.task.id+"@"+where)
	}
	return strings.Join(out, " ")
}

// Delay scheduling, step by step (paper §5.1; Zaharia et al. 2010): a
// job skips agents without its blocks until it has waited the delay, a
// local launch ends the wait, and a skipped job leaves the slot to the
// next job in fair order.
func TestDelayScheduling(t *testing.T) {
	c := newTestCore(t, 5*time.Second, scan("a", "b1", "b2", "b3"))
	steps := []struct {
		at    time.Duration
		offer *mesos.Offer
		want  string
	}{
		{0, offer("s1", "cpus:1;mem:10", "b9"), ""},                          // no local block: wait starts
		{time.Second, offer("s1", "cpus:1;mem:10", "b9"), ""},                // still waiting
		{2 * time.Second, offer("s2", "cpus:1;mem:10", "b2"), "a.1.1@local"}, // local: the wait ends
		{3 * time.Second, offer("s1", "cpus:1;mem:10", "b9"), ""},            // waits anew
		{7 * time.Second, offer("s1", "cpus:1;mem:10", "b9"), ""},            // 4 s of 5
		{8 * time.Second, offer("s1", "cpus:1;mem:10", "b9"), "a.0.1@remote"},
		{8 * time.Second, offer("s3", "cpus:1;mem:10"), "a.2.1@remote"}, // still past its delay
	}
	for i, s := range steps {
		if got := ids(c.fill(s.offer, t0.Add(s.at))); got != s.want {
			t.Fatalf("step %d (t=%v, %s): launched %q, want %q", i, s.at, s.offer.GetHostname(), got, s.want)
		}
	}
	if c.pending() != 0 || c.running != 3 || c.cpus() != 3 {
		t.Fatalf("pending %d running %d cpus %g", c.pending(), c.running, c.cpus())
	}
}

// Without delay scheduling every slot is taken at once, local tasks
// first; an offer of four slots gets four tasks, the agent's blocks first.
func TestNoDelayFillsSlotsLocalFirst(t *testing.T) {
	c := newTestCore(t, 0, scan("a", "b1", "b2", "b3", "b4", "b5"))
	if got, want := ids(c.fill(offer("s1", "cpus:4;mem:100", "b3", "b5"), t0)), "a.2.1@local a.4.1@local a.0.1@remote a.1.1@remote"; got != want {
		t.Fatalf("launched %q, want %q", got, want)
	}
}

// Fair sharing between jobs: each slot goes to the job with the fewest
// running tasks; a job that waits for locality passes its turn on.
func TestFairOrderAndSkipping(t *testing.T) {
	c := newTestCore(t, 5*time.Second, scan("a", "b1", "b2", "b3"), scan("b", "b7", "b8"))
	if got, want := ids(c.fill(offer("s1", "cpus:3;mem:100", "b1", "b2", "b7"), t0)), "a.0.1@local b.0.1@local a.1.1@local"; got != want {
		t.Fatalf("launched %q, want %q", got, want)
	}
	// b has 1 running and a 2: b goes first but has no block here, so it
	// waits and a takes the slot.
	if got, want := ids(c.fill(offer("s2", "cpus:1;mem:10", "b3"), t0)), "a.2.1@local"; got != want {
		t.Fatalf("launched %q, want %q", got, want)
	}
	if c.jobs[1].waitingSince != t0 {
		t.Fatalf("job b waiting since %v, want %v", c.jobs[1].waitingSince, t0)
	}
}

// A failed task is tried again under a new ID; after MaxAttempts its job
// fails and its other running tasks are killed. Updates for an old
// attempt change nothing.
func TestRetriesThenJobFails(t *testing.T) {
	c := newTestCore(t, 0, scan("a", "b1", "b2"))
	c.fill(offer("s1", "cpus:2;mem:100"), t0)
	if kill := c.update(status("a.0.1", mesos.TaskState_TASK_FAILED), t0); kill != nil {
		t.Fatalf("first failure killed %v", kill)
	}
	if c.pending() != 1 {
		t.Fatalf("pending %d after a failure, want 1", c.pending())
	}
	if got := ids(c.fill(offer("s1", "cpus:1;mem:10"), t0)); got != "a.0.2@remote" {
		t.Fatalf("relaunched %q", got)
	}
	c.update(status("a.0.1", mesos.TaskState_TASK_RUNNING), t0) // stale attempt: ignored
	if c.tasks["a.0.2"].state != mesos.TaskState_TASK_STAGING {
		t.Fatalf("a stale update changed the new attempt: %v", c.tasks["a.0.2"].state)
	}
	kill := c.update(status("a.0.2", mesos.TaskState_TASK_LOST), t0.Add(time.Second))
	if len(kill) != 1 || kill[0].id != "a.1.1" {
		t.Fatalf("kill %v, want a.1.1", kill)
	}
	if !c.jobs[0].failed || !c.done() {
		t.Fatalf("job failed=%v done=%v", c.jobs[0].failed, c.done())
	}
}

// Jobs arrive at their submit times.
func TestSubmission(t *testing.T) {
	need, _ := offers.ParseNeed("cpus:1")
	c := newCore([]Job{{Name: "late", Submit: loop.Duration(10 * time.Second), Tasks: []Task{{}}}, {Name: "early", Tasks: []Task{{}}}},
		need, 0, "blocks", 1)
	if !c.nextSubmit().IsZero() || c.submitDue(t0) != 0 {
		t.Fatal("jobs submitted before the framework started")
	}
	c.started(t0)
	if n := c.submitDue(t0); n != 1 || c.jobs[0].spec.Name != "early" {
		t.Fatalf("submitted %d at start", n)
	}
	if next := c.nextSubmit(); !next.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("next submission %v", next)
	}
	if n := c.submitDue(t0.Add(10 * time.Second)); n != 1 || c.done() {
		t.Fatalf("submitted %d at 10s, done %v", n, c.done())
	}
}

// Property: under random offers, clock steps and task endings, (1) no
// task runs twice at once, (2) a job launches a remote task only without
// delay or after having waited the delay, (3) the counts agree with the
// tasks, and (4) with offers enough, every job finishes.
func TestDelaySchedulingProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		delay := time.Duration(rapid.IntRange(0, 3).Draw(rt, "delay")) * time.Second
		var jobs []Job
		for j := range rapid.IntRange(1, 3).Draw(rt, "jobs") {
			var blocks []string
			for range rapid.IntRange(1, 6).Draw(rt, fmt.Sprint("tasks", j)) {
				blocks = append(blocks, fmt.Sprint("b", rapid.IntRange(0, 5).Draw(rt, "block")))
			}
			jobs = append(jobs, scan(fmt.Sprint("j", j), blocks...))
		}
		need, _ := offers.ParseNeed("cpus:1")
		c := newCore(jobs, need, delay, "blocks", 3)
		now := t0
		c.started(now)
		c.submitDue(now)
		live := map[string]bool{}
		for step := 0; step < 400 && !c.done(); step++ {
			now = now.Add(time.Duration(rapid.IntRange(0, 1500).Draw(rt, "dt")) * time.Millisecond)
			if len(live) > 0 && rapid.Bool().Draw(rt, "end") {
				var id string
				for k := range live {
					if id == "" || k < id {
						id = k
					}
				}
				state := mesos.TaskState_TASK_FINISHED
				if rapid.IntRange(0, 9).Draw(rt, "fail") == 0 {
					state = mesos.TaskState_TASK_FAILED
				}
				delete(live, id)
				for _, k := range c.update(status(id, state), now) {
					delete(live, k.id)
					c.update(status(k.id, mesos.TaskState_TASK_KILLED), now)
				}
				continue
			}
			held := fmt.Sprint("b", rapid.IntRange(0, 7).Draw(rt, "held"))
			waited := map[*job]time.Time{}
			for _, j := range c.jobs {
				waited[j] = j.waitingSince
			}
			for _, l := range c.fill(offer("s", fmt.Sprintf("cpus:%d", rapid.IntRange(1, 3).Draw(rt, "slots")), held), now) {
				if live[l.task.id] {
					rt.Fatalf("task %s launched twice", l.task.id)
				}
				live[l.task.id] = true
				if !l.task.local {
					since := waited[l.task.job]
					if delay > 0 && (since.IsZero() || now.Sub(since) < delay) {
						rt.Fatalf("job %s launched remotely after waiting %v of %v", l.task.job.spec.Name, now.Sub(since), delay)
					}
				} else if b := l.task.job.spec.Tasks[l.task.index].Block; b != held {
					rt.Fatalf("task of block %s called local on an agent holding %s", b, held)
				}
			}
			if c.running != len(live) || c.cpus() != float64(len(live)) {
				rt.Fatalf("running %d, cpus %g, live %d", c.running, c.cpus(), len(live))
			}
		}
		// Drain: finish everything, offering slots past every delay.
		for i := 0; !c.done() && i < 1000; i++ {
			now = now.Add(delay + time.Second)
			for _, l := range c.fill(offer("s", "cpus:4"), now) {
				live[l.task.id] = true
			}
			for id := range live {
				delete(live, id)
				for _, k := range c.update(status(id, mesos.TaskState_TASK_FINISHED), now) {
					delete(live, k.id)
				}
			}
		}
		if !c.done() {
			rt.Fatalf("not done: %d pending, %d running", c.pending(), c.running)
		}
	})
}
