package gang

import (
	"fmt"
	"math"
	"slices"
	"time"

	"mezzo/api/mesos"
	"mezzo/frameworks/loop"
	"mezzo/frameworks/offers"
	"mezzo/resources"
)

// core is the framework's state: jobs queued in order, the offers held
// for the job at the head of the queue, and the running gangs. It takes
// now and returns decisions; the handler (framework.go) makes the calls.
//
// All or nothing (the paper's §4.2 rigid frameworks, §4.4's MPI): the
// head job holds every offer with room for at least one of its tasks,
// without answering it, until the held offers have room for all of them;
// then it launches the whole gang at once, one ACCEPT per offer, and the
// next job starts holding what is left. Holding is bounded: if the head
// job cannot gather its gang within Hold, it gives every held offer back
// (declined, filtered for Backoff) and stops asking for offers for
// Backoff, so that a rigid job cannot sit on a share of the cluster it
// cannot use. A gang whose task fails is killed whole and queued again
// (MaxAttempts), since its ranks cannot go on without it.
type core struct {
	need        offers.Need
	hold        time.Duration
	backoff     time.Duration
	maxAttempts int

	arrivals  *loop.Arrivals[Job] // jobs not yet submitted
	queue     []*job              // submitted, not running; the head holds offers
	jobs      []*job              // every submitted job, in order
	held      []*heldOffer
	holdSince time.Time // when the head job began holding (zero: nothing held)
	pausedTo  time.Time // after giving offers back: no offers until then
	tasks     map[string]*task
	milli     int64 // cpus of running tasks, in thousandths
	seq       int

	heldMilliSeconds float64 // cpu·s held in offers without running anything
	giveUps          int     // times the head gave its offers back
}

type job struct {
	spec      Job
	seq       int
	attempt   int
	submitted time.Time
	launched  time.Time // the current attempt's launch
	finished  time.Time
	failed    bool
	tasks     []*task // the current attempt's
	done      int
	broken    bool // the current attempt lost a task
}

type task struct {
	job     *job
	attempt int
	rank    int
	id      string
	state   mesos.TaskState
	agent   string
	host    string
	res     resources.Resources
}

type heldOffer struct {
	offer *mesos.Offer
	avail resources.Resources
	slots int
	milli int64 // its cpus
	since time.Time
}

// launch is one offer to accept with the tasks placed on it.
type launch struct {
	offer *mesos.Offer
	tasks []*task
}

func newCore(jobs []Job, need offers.Need, hold, backoff time.Duration, maxAttempts int) *core {
	return &core{need: need, hold: hold, backoff: backoff, maxAttempts: maxAttempts,
		arrivals: loop.NewArrivals(jobs, func(j Job) loop.Duration { return j.Submit }), tasks: map[string]*task{}}
}

func (c *core) started(now time.Time) { c.arrivals.Start(now) }

// submitDue queues the jobs whose time has come.
func (c *core) submitDue(now time.Time) {
	for _, spec := range c.arrivals.Due(now) {
		j := &job{spec: spec, seq: c.seq, submitted: now}
		c.seq++
		c.jobs = append(c.jobs, j)
		c.queue = append(c.queue, j)
	}
}

// wantsOffers: a job waits for its gang and the framework is not backing
// off.
func (c *core) wantsOffers(now time.Time) bool {
	return len(c.queue) > 0 && !now.Before(c.pausedTo)
}

// next is when the core wants waking: the next submission, the end of
// the head's holding bound, or the end of a back-off.
func (c *core) next() time.Time {
	var ts []time.Time
	if next := c.arrivals.Next(); !next.IsZero() {
		ts = append(ts, next)
	}
	if !c.holdSince.IsZero() {
		ts = append(ts, c.holdSince.Add(c.hold))
	}
	if !c.pausedTo.IsZero() {
		ts = append(ts, c.pausedTo)
	}
	if len(ts) == 0 {
		return time.Time{}
	}
	return slices.MinFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
}

// wake submits due jobs, ends a back-off, and gives held offers back
// once the head has held them for the bound; it returns those offers.
func (c *core) wake(now time.Time) (giveBack []*mesos.Offer) {
	c.submitDue(now)
	if !c.pausedTo.IsZero() && !now.Before(c.pausedTo) {
		c.pausedTo = time.Time{}
	}
	if !c.holdSince.IsZero() && !now.Before(c.holdSince.Add(c.hold)) {
		c.giveUps++
		giveBack = c.release(now)
		c.pausedTo = now.Add(c.backoff)
	}
	return giveBack
}

// release stops holding every offer and returns them.
func (c *core) release(now time.Time) []*mesos.Offer {
	var out []*mesos.Offer
	for _, h := range c.held {
		c.heldMilliSeconds += float64(h.milli) * now.Sub(h.since).Seconds()
		out = append(out, h.offer)
	}
	c.held = nil
	c.holdSince = time.Time{}
	return out
}

// offered takes an offer: held if it has room for a task and a job wants
// a gang, else returned to decline at once. Once the held offers hold a
// whole gang, it is launched (launches).
func (c *core) offered(o *mesos.Offer, now time.Time) (launches []launch, decline []*mesos.Offer) {
	avail := offers.Available(o)
	slots := offers.Count(avail, c.need, offers.NoRevocable)
	if slots == 0 || !c.wantsOffers(now) {
		return nil, []*mesos.Offer{o}
	}
	c.held = append(c.held, &heldOffer{offer: o, avail: avail, slots: slots,
		milli: int64(math.Round(avail.NonRevocable().Scalar("cpus") * 1000)), since: now})
	if c.holdSince.IsZero() {
		c.holdSince = now
	}
	return c.place(now)
}

// rescinded forgets a held offer the master took back.
func (c *core) rescinded(id string, now time.Time) {
	for i, h := range c.held {
		if h.offer.GetId().GetValue() == id {
			c.heldMilliSeconds += float64(h.milli) * now.Sub(h.since).Seconds()
			c.held = slices.Delete(c.held, i, i+1)
			break
		}
	}
	if len(c.held) == 0 {
		c.holdSince = time.Time{}
	}
}

// place launches the head job while the held offers have room for all
// of its tasks; once no job waits, what is still held is returned.
func (c *core) place(now time.Time) (launches []launch, decline []*mesos.Offer) {
	for len(c.queue) > 0 {
		j := c.queue[0]
		free := 0
		for _, h := range c.held {
			free += h.slots
		}
		if free < j.spec.Tasks {
			return launches, nil
		}
		c.queue = c.queue[1:]
		launches = append(launches, c.launchGang(j, now)...)
		if len(c.held) > 0 {
			c.holdSince = now // the next job's bound starts now
		} else {
			c.holdSince = time.Time{}
		}
	}
	return launches, c.release(now)
}

// launchGang places every task of j on the held offers, in order.
func (c *core) launchGang(j *job, now time.Time) []launch {
	j.attempt++
	j.tasks, j.done, j.broken, j.launched = nil, 0, false, now
	var out []launch
	rank := 0
	for rank < j.spec.Tasks {
		h := c.held[0]
		c.held = c.held[1:]
		c.heldMilliSeconds += float64(h.milli) * now.Sub(h.since).Seconds()
		l := launch{offer: h.offer}
		avail := h.avail
		for rank < j.spec.Tasks {
			got, rest, ok := offers.Take(avail, c.need, offers.NoRevocable)
			if !ok {
				break
			}
			avail = rest
			t := &task{job: j, attempt: j.attempt, rank: rank, id: fmt.Sprintf("%s.%d.%d", j.spec.Name, j.attempt, rank),
				state: mesos.TaskState_TASK_STAGING, agent: h.offer.GetAgentId().GetValue(), host: h.offer.GetHostname(), res: got}
			c.tasks[t.id] = t
			j.tasks = append(j.tasks, t)
			c.milli += milliCPUs(got)
			l.tasks = append(l.tasks, t)
			rank++
		}
		out = append(out, l)
	}
	return out
}

func milliCPUs(r resources.Resources) int64 { return int64(math.Round(r.Scalar("cpus") * 1000)) }

// update applies a status update. When a task of a gang ends other than
// finished, the rest of the gang is returned to kill and the job is
// queued again (first in line) or, after MaxAttempts, fails.
func (c *core) update(st *mesos.TaskStatus, now time.Time) (kill []*task) {
	t := c.tasks[st.GetTaskId().GetValue()]
	if t == nil || mesos.IsTerminal(t.state) {
		return nil
	}
	t.state = st.GetState()
	if !mesos.IsTerminal(t.state) {
		return nil
	}
	c.milli -= milliCPUs(t.res)
	j := t.job
	if t.attempt != j.attempt {
		return nil // a task of an earlier attempt, killed with its gang
	}
	if t.state == mesos.TaskState_TASK_FINISHED && !j.broken {
		j.done++
		if j.done == j.spec.Tasks {
			j.finished = now
		}
		return nil
	}
	if j.broken {
		return nil // the gang is already being killed
	}
	j.broken = true
	for _, o := range j.tasks {
		if !mesos.IsTerminal(o.state) {
			kill = append(kill, o)
		}
	}
	if j.attempt < c.maxAttempts {
		c.queue = append([]*job{j}, c.queue...)
	} else {
		j.failed = true
		j.finished = now
	}
	return kill
}

// done: every job submitted and ended.
func (c *core) done() bool {
	if c.arrivals.Waiting() > 0 || len(c.queue) > 0 {
		return false
	}
	for _, j := range c.jobs {
		if j.finished.IsZero() {
			return false
		}
	}
	return true
}

// heldCPUs is what the held offers hold.
func (c *core) heldCPUs() float64 {
	var m int64
	for _, h := range c.held {
		m += h.milli
	}
	return float64(m) / 1000
}
