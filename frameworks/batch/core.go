package batch

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"mezzo/api/mesos"
	"mezzo/frameworks/loop"
	"mezzo/frameworks/offers"
	"mezzo/resources"
)

// core is the framework's scheduling state: submitted jobs, their pending
// tasks indexed by block, and delay scheduling. It takes now and returns
// decisions; the handler (framework.go) makes the calls.
//
// Delay scheduling (Zaharia et al., EuroSys 2010; the paper's §5.1): for
// each free slot of an offer, jobs are taken in fair order (fewest
// running tasks first). A job with a pending task whose block the agent
// holds launches it there. A job without one is skipped, and its wait
// starts; once it has waited Delay it may launch any pending task on any
// agent, until it next launches a local task, which ends the wait.
// Delay 0 takes any slot at once (still preferring local tasks).
type core struct {
	delay       time.Duration
	need        offers.Need
	attr        string // the agents' attribute naming the blocks they hold
	maxAttempts int

	arrivals *loop.Arrivals[Job] // jobs not yet submitted
	jobs     []*job              // submitted, in order
	tasks    map[string]*task
	running  int   // tasks launched and not ended
	milli    int64 // their cpus, in thousandths
	seq      int   // submission order
}

// cpus is what the running tasks hold.
func (c *core) cpus() float64 { return float64(c.milli) / 1000 }

// job is a submitted job.
type job struct {
	spec      Job
	seq       int
	submitted time.Time
	finished  time.Time
	failed    bool
	tasks     []*task
	pending   int
	running   int
	done      int
	// Pending task indexes by block, and all of them in order (for a
	// non-local launch). Entries of tasks launched since are skipped
	// lazily.
	byBlock      map[string][]int
	order        []int
	waitingSince time.Time // zero: not waiting for locality
}

// task is one task of a job; each attempt has its own task ID.
type task struct {
	job      *job
	index    int
	attempts int
	id       string // current attempt's task ID
	pending  bool
	state    mesos.TaskState
	agent    string
	host     string
	local    bool
	res      resources.Resources
	launched time.Time
	ended    time.Time
}

// launch is one task to start on an offer.
type launch struct {
	task *task
	res  resources.Resources
}

func newCore(jobs []Job, need offers.Need, delay time.Duration, attr string, maxAttempts int) *core {
	return &core{delay: delay, need: need, attr: attr, maxAttempts: maxAttempts,
		arrivals: loop.NewArrivals(jobs, func(j Job) loop.Duration { return j.Submit }), tasks: map[string]*task{}}
}

// started fixes the time Submit counts from (the first call wins).
func (c *core) started(now time.Time) { c.arrivals.Start(now) }

// submitDue submits the jobs whose time has come and returns how many.
func (c *core) submitDue(now time.Time) int {
	due := c.arrivals.Due(now)
	for _, spec := range due {
		j := &job{spec: spec, seq: c.seq, submitted: now, byBlock: map[string][]int{}}
		c.seq++
		for i := range spec.Tasks {
			tk := &task{job: j, index: i}
			j.tasks = append(j.tasks, tk)
			c.makePending(tk)
		}
		c.jobs = append(c.jobs, j)
	}
	return len(due)
}

// makePending queues a task (again) under a new attempt ID.
func (c *core) makePending(t *task) {
	t.attempts++
	t.id = fmt.Sprintf("%s.%d.%d", t.job.spec.Name, t.index, t.attempts)
	t.pending = true
	t.state = mesos.TaskState_TASK_STAGING
	c.tasks[t.id] = t
	j := t.job
	j.pending++
	j.order = append(j.order, t.index)
	if b := j.spec.Tasks[t.index].Block; b != "" {
		j.byBlock[b] = append(j.byBlock[b], t.index)
	}
}

// nextSubmit is when the next job arrives (zero: none left).
func (c *core) nextSubmit() time.Time { return c.arrivals.Next() }

// pending counts tasks waiting for a slot.
func (c *core) pending() int {
	n := 0
	for _, j := range c.jobs {
		n += j.pending
	}
	return n
}

// done: every job submitted and ended.
func (c *core) done() bool {
	if c.arrivals.Waiting() > 0 {
		return false
	}
	for _, j := range c.jobs {
		if j.finished.IsZero() {
			return false
		}
	}
	return true
}

// blocks returns the blocks the offer's agent holds, sorted (so that
// which local task goes first does not depend on map order).
func (c *core) blocks(o *mesos.Offer) []string {
	v, ok := offers.Attribute(o, c.attr)
	if !ok {
		return nil
	}
	var out []string
	for _, b := range strings.Split(v, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// fill decides the tasks to launch on an offer.
func (c *core) fill(o *mesos.Offer, now time.Time) []launch {
	avail := offers.Available(o)
	held := c.blocks(o)
	var out []launch
	for {
		got, rest, ok := offers.Take(avail, c.need, offers.NoRevocable)
		if !ok {
			return out
		}
		t, local := c.pick(held, now)
		if t == nil {
			return out
		}
		avail = rest
		c.launched(t, o, got, local, now)
		out = append(out, launch{task: t, res: got})
	}
}

// pick chooses the task for one free slot on an agent holding blocks, by
// delay scheduling, or nil if every job with pending tasks waits.
func (c *core) pick(held []string, now time.Time) (*task, bool) {
	order := make([]*job, 0, len(c.jobs))
	for _, j := range c.jobs {
		if j.pending > 0 {
			order = append(order, j)
		}
	}
	slices.SortStableFunc(order, func(a, b *job) int {
		if a.running != b.running {
			return a.running - b.running
		}
		return a.seq - b.seq
	})
	for _, j := range order {
		if t := j.localTask(held); t != nil {
			j.waitingSince = time.Time{}
			return t, true
		}
		if c.delay == 0 || (!j.waitingSince.IsZero() && now.Sub(j.waitingSince) >= c.delay) {
			return j.anyTask(), false
		}
		if j.waitingSince.IsZero() {
			j.waitingSince = now
		}
	}
	return nil, false
}

// localTask pops a pending task whose block the agent holds.
func (j *job) localTask(held []string) *task {
	for _, b := range held {
		q := j.byBlock[b]
		for len(q) > 0 {
			t := j.tasks[q[0]]
			q = q[1:]
			if t.pending {
				j.byBlock[b] = q
				return t
			}
		}
		delete(j.byBlock, b)
	}
	return nil
}

// anyTask pops the oldest pending task.
func (j *job) anyTask() *task {
	for len(j.order) > 0 {
		t := j.tasks[j.order[0]]
		j.order = j.order[1:]
		if t.pending {
			return t
		}
	}
	return nil // pending > 0 guarantees one; unreachable
}

func (c *core) launched(t *task, o *mesos.Offer, res resources.Resources, local bool, now time.Time) {
	t.pending = false
	t.agent = o.GetAgentId().GetValue()
	t.host = o.GetHostname()
	t.local = local
	t.res = res
	t.launched = now
	j := t.job
	j.pending--
	j.running++
	c.running++
	c.milli += milliCPUs(res)
}

func milliCPUs(r resources.Resources) int64 { return int64(math.Round(r.Scalar("cpus") * 1000)) }

// update applies a status update. A task that ended other than finished
// is queued again, up to maxAttempts attempts (Hadoop's 4); then its job
// fails and its other tasks are killed (returned).
func (c *core) update(st *mesos.TaskStatus, now time.Time) (kill []*task) {
	t := c.tasks[st.GetTaskId().GetValue()]
	if t == nil || t.pending || mesos.IsTerminal(t.state) || t.id != st.GetTaskId().GetValue() {
		return nil // unknown, a previous attempt, or already ended
	}
	t.state = st.GetState()
	if !mesos.IsTerminal(t.state) {
		return nil
	}
	j := t.job
	t.ended = now
	j.running--
	c.running--
	c.milli -= milliCPUs(t.res)
	if t.state == mesos.TaskState_TASK_FINISHED {
		j.done++
		if j.done == len(j.tasks) {
			j.finished = now
		}
		return nil
	}
	if j.failed {
		return nil
	}
	if t.attempts < c.maxAttempts {
		c.makePending(t)
		return nil
	}
	j.failed = true
	j.finished = now
	for _, o := range j.tasks {
		if o.pending {
			o.pending = false
			j.pending--
		} else if !mesos.IsTerminal(o.state) && o != t {
			kill = append(kill, o)
		}
	}
	return kill
}
