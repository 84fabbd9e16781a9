package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/frameworks/loop"
	"mezzo/frameworks/offers"
	"mezzo/scheduler"
)

// Defaults.
const (
	// DefaultName is the framework's name unless told.
	DefaultName = "mezzo-batch"
	// DefaultTaskResources is each task's share of an agent: a slot.
	DefaultTaskResources = "cpus:1;mem:128"
	// DefaultLocalityAttribute is the agent attribute listing the blocks
	// an agent holds, comma-separated ("blocks:b1,b7,b12").
	DefaultLocalityAttribute = "blocks"
	// DefaultRefuseSeconds filters an offer declined while tasks still
	// wait (for locality): short, so the agent comes back soon.
	DefaultRefuseSeconds = 1.0
	// DefaultMaxAttempts is how often a task is tried (Hadoop: 4).
	DefaultMaxAttempts = 4
	// DefaultDelay is `mezzo batch`'s delay: the paper's 5 s, which gave
	// 95% locality (§6.3).
	DefaultDelay = 5 * time.Second
)

// Config configures the batch framework. Masters and Jobs are required.
type Config struct {
	loop.Config
	// Jobs to run.
	Jobs []Job
	// TaskResources is what each task takes, e.g. "cpus:1;mem:128".
	TaskResources string
	// Delay is how long a job waits for an agent holding one of its
	// blocks before it takes any (0: no delay scheduling).
	Delay time.Duration
	// LocalityAttribute is the agents' attribute naming their blocks.
	LocalityAttribute string
	// RefuseSeconds is the filter on offers declined while tasks wait.
	RefuseSeconds float64
	// MaxAttempts bounds the attempts per task before its job fails.
	MaxAttempts int
	// Decorate, if set, may change each task before it is launched (the
	// experiments give fake tasks on emulated agents their durations).
	Decorate func(*mesos.TaskInfo, Placement)
}

// Placement is where a task is about to run.
type Placement struct {
	Job, Block, AgentID, Hostname string
	Task                          int
	// Local: the agent holds the task's block.
	Local bool
}

// Result is what a run did.
type Result struct {
	Jobs []JobResult `json:"jobs"`
	// Tasks finished, and how many of them ran on an agent holding their
	// block; Locality is Local over the tasks that had a block.
	Tasks    int     `json:"tasks"`
	Local    int     `json:"local"`
	Locality float64 `json:"locality"`
	// Attempts counts launches, retries included.
	Attempts int `json:"attempts"`
}

// JobResult is one job's outcome. Seconds is its completion time, from
// submission to its last task's end.
type JobResult struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Tasks   int     `json:"tasks"`
	Local   int     `json:"local"`
	Failed  bool    `json:"failed,omitempty"`
	// SubmitSeconds is when it was submitted, after the framework
	// subscribed.
	SubmitSeconds float64 `json:"submit_seconds"`
}

// Usage is what the framework holds right now.
type Usage struct {
	Running int     // tasks launched and not ended
	CPUs    float64 // their cpus
	Pending int     // tasks waiting for a slot
}

// Framework is the batch framework: a scheduler that runs jobs of
// block-reading tasks with delay scheduling.
type Framework struct {
	cfg  Config
	loop *loop.Loop
	core *core

	interest loop.Interest // loop-owned

	mu    sync.Mutex
	usage Usage
}

// New validates cfg and returns a framework; Run runs it.
func New(cfg Config) (*Framework, error) {
	var err error
	if cfg.Config, err = cfg.Config.Normalize(DefaultName); err != nil {
		return nil, err
	}
	if err := validateJobs(cfg.Jobs); err != nil {
		return nil, err
	}
	if cfg.TaskResources == "" {
		cfg.TaskResources = DefaultTaskResources
	}
	need, err := offers.ParseNeed(cfg.TaskResources)
	if err != nil {
		return nil, fmt.Errorf("task resources: %w", err)
	}
	if cfg.Delay < 0 {
		return nil, errors.New("the delay must not be negative")
	}
	if cfg.LocalityAttribute == "" {
		cfg.LocalityAttribute = DefaultLocalityAttribute
	}
	if cfg.RefuseSeconds < 0 || cfg.MaxAttempts < 0 {
		return nil, errors.New("the refuse seconds and max attempts must not be negative")
	}
	if cfg.RefuseSeconds == 0 {
		cfg.RefuseSeconds = DefaultRefuseSeconds
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	return &Framework{
		cfg:  cfg,
		loop: loop.New(cfg.Config),
		core: newCore(cfg.Jobs, need, cfg.Delay, cfg.LocalityAttribute, cfg.MaxAttempts),
	}, nil
}

// Run runs every job to its end, tears the framework down and returns
// the result; or returns early when ctx ends or the subscription fails.
func (f *Framework) Run(ctx context.Context) (*Result, error) {
	if err := f.loop.Run(ctx, f); err != nil {
		return nil, err
	}
	return f.result(), nil
}

// ID is the framework ID the master assigned ("" before it subscribed);
// safe from any goroutine.
func (f *Framework) ID() string { return f.loop.Client.FrameworkID().GetValue() }

// Usage is what the framework holds now; safe from any goroutine.
func (f *Framework) Usage() Usage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.usage
}

// Event implements loop.Handler.
func (f *Framework) Event(ctx context.Context, ev *schedulerpb.Event, now time.Time) {
	switch ev.GetType() {
	case schedulerpb.Event_SUBSCRIBED:
		f.core.started(now)
		f.interest.Reset()
		f.core.submitDue(now)
	case schedulerpb.Event_OFFERS:
		f.offers(ctx, ev.GetOffers().GetOffers(), now)
	case schedulerpb.Event_UPDATE:
		st := ev.GetUpdate().GetStatus()
		for _, t := range f.core.update(st, now) {
			f.call("kill", f.loop.Client.Kill(ctx, &mesos.TaskID{Value: proto.String(t.id)}, agentID(t.agent)))
		}
	case schedulerpb.Event_ERROR:
		f.logf("master error: %s", ev.GetError().GetMessage())
	}
	f.offerInterest(ctx)
	f.publish()
}

// Next implements loop.Handler: the next job's submission.
func (f *Framework) Next() time.Time { return f.core.nextSubmit() }

// Wake implements loop.Handler.
func (f *Framework) Wake(ctx context.Context, now time.Time) {
	f.core.submitDue(now)
	f.offerInterest(ctx)
	f.publish()
}

// Done implements loop.Handler.
func (f *Framework) Done() bool { return f.core.done() }

// offers launches what delay scheduling picks and declines the rest.
func (f *Framework) offers(ctx context.Context, os []*mesos.Offer, now time.Time) {
	filters := scheduler.RefuseFor(f.cfg.RefuseSeconds)
	var decline []*mesos.OfferID
	for _, o := range os {
		ls := f.core.fill(o, now)
		if len(ls) == 0 {
			decline = append(decline, o.GetId())
			continue
		}
		tasks := make([]*mesos.TaskInfo, len(ls))
		for i, l := range ls {
			tasks[i] = f.taskInfo(l, o)
		}
		if err := f.loop.Client.Launch(ctx, []*mesos.OfferID{o.GetId()}, tasks, filters); err != nil {
			// The launch may not have reached the master: count the tasks
			// lost (each is tried again; reconciliation settles any that
			// did start).
			f.logf("launching on %s: %v", o.GetHostname(), err)
			for _, l := range ls {
				f.core.update(&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(l.task.id)},
					State: mesos.TaskState_TASK_LOST.Enum()}, now)
			}
		}
	}
	if len(decline) > 0 {
		f.call("decline", f.loop.Client.Decline(ctx, decline, filters))
	}
}

// offerInterest suppresses offers while no task waits and revives them
// when one does.
func (f *Framework) offerInterest(ctx context.Context) {
	f.interest.Want(ctx, f.loop.Client, f.core.pending() > 0, f.logf)
}

func (f *Framework) logf(format string, args ...any) { f.cfg.Logf("batch: "+format, args...) }

func (f *Framework) call(what string, err error) {
	if err != nil {
		f.logf("%s: %v", what, err)
	}
}

// taskInfo describes one launch.
func (f *Framework) taskInfo(l launch, o *mesos.Offer) *mesos.TaskInfo {
	t := l.task
	spec := t.job.spec
	block := spec.Tasks[t.index].Block
	local := "0"
	if t.local {
		local = "1"
	}
	env := &mesos.Environment{}
	for _, kv := range [][2]string{{"MEZZO_BATCH_JOB", spec.Name}, {"MEZZO_BATCH_TASK", strconv.Itoa(t.index)},
		{"MEZZO_BATCH_BLOCK", block}, {"MEZZO_BATCH_LOCAL", local}} {
		env.Variables = append(env.Variables, &mesos.Environment_Variable{Name: proto.String(kv[0]), Value: proto.String(kv[1])})
	}
	ti := &mesos.TaskInfo{
		Name:      proto.String(spec.Name + "." + strconv.Itoa(t.index)),
		TaskId:    &mesos.TaskID{Value: proto.String(t.id)},
		AgentId:   o.GetAgentId(),
		Resources: l.res.Proto(),
		Command:   &mesos.CommandInfo{Shell: proto.Bool(true), Value: proto.String(spec.Command), Environment: env},
	}
	if f.cfg.Decorate != nil {
		f.cfg.Decorate(ti, Placement{Job: spec.Name, Task: t.index, Block: block, AgentID: t.agent, Hostname: t.host, Local: t.local})
	}
	return ti
}

// publish copies the loop's counts for Usage.
func (f *Framework) publish() {
	u := Usage{Pending: f.core.pending(), Running: f.core.running, CPUs: f.core.cpus()}
	f.mu.Lock()
	f.usage = u
	f.mu.Unlock()
}

// result summarizes the finished run (after Run's loop ended).
func (f *Framework) result() *Result {
	r := &Result{}
	withBlock := 0
	for _, j := range f.core.jobs {
		jr := JobResult{Name: j.spec.Name, Tasks: len(j.tasks), Failed: j.failed,
			Seconds:       j.finished.Sub(j.submitted).Seconds(),
			SubmitSeconds: j.submitted.Sub(f.core.arrivals.Started()).Seconds()}
		for _, t := range j.tasks {
			r.Attempts += t.attempts
			if t.state != mesos.TaskState_TASK_FINISHED {
				continue
			}
			r.Tasks++
			if j.spec.Tasks[t.index].Block != "" {
				withBlock++
			}
			if t.local {
				jr.Local++
				r.Local++
			}
		}
		r.Jobs = append(r.Jobs, jr)
	}
	if withBlock > 0 {
		r.Locality = float64(r.Local) / float64(withBlock)
	}
	return r
}

func agentID(id string) *mesos.AgentID {
	if id == "" {
		return nil
	}
	return &mesos.AgentID{Value: proto.String(id)}
}
