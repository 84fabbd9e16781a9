package gang

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	DefaultName = "mezzo-gang"
	// DefaultTaskResources is one rank's resources.
	DefaultTaskResources = "cpus:1;mem:128"
	// DefaultHold bounds how long the head job holds offers for its gang.
	DefaultHold = 30 * time.Second
	// DefaultBackoff is how long the framework leaves offers alone after
	// giving them back (and filters those it gave back).
	DefaultBackoff = 5 * time.Second
	// DefaultRefuseSeconds filters offers too small for one rank (Mesos's
	// default filter).
	DefaultRefuseSeconds = 5.0
	// DefaultMaxAttempts is how often a gang is started before its job
	// fails.
	DefaultMaxAttempts = 3
)

// Config configures the gang framework. Masters and Jobs are required.
type Config struct {
	loop.Config
	// Jobs to run, in order of submission.
	Jobs []Job
	// TaskResources is each rank's resources, e.g. "cpus:1;mem:128".
	TaskResources string
	// Hold bounds the time the head job holds offers while it gathers
	// its gang.
	Hold time.Duration
	// Backoff is how long offers given back are filtered and the
	// framework asks for none.
	Backoff time.Duration
	// RefuseSeconds filters offers too small for a rank.
	RefuseSeconds float64
	// MaxAttempts bounds the starts of one gang.
	MaxAttempts int
	// Decorate, if set, may change each task before it is launched.
	Decorate func(*mesos.TaskInfo, Placement)
}

// Placement is where one rank is about to run.
type Placement struct {
	Job, AgentID, Hostname string
	Rank, Size             int
}

// Result is what a run did.
type Result struct {
	Jobs []JobResult `json:"jobs"`
	// HeldCPUSeconds is cpu·s of offers held without running anything
	// (gathering gangs): what a rigid framework wastes (paper §4.2).
	HeldCPUSeconds float64 `json:"held_cpu_seconds"`
	// GiveUps counts gangs that gave their held offers back.
	GiveUps int `json:"give_ups"`
}

// JobResult is one job's outcome. Seconds is its completion time (from
// submission to its last rank's end); WaitSeconds of it went to
// gathering the gang that ran last.
type JobResult struct {
	Name          string  `json:"name"`
	Tasks         int     `json:"tasks"`
	Attempts      int     `json:"attempts"`
	Seconds       float64 `json:"seconds"`
	WaitSeconds   float64 `json:"wait_seconds"`
	SubmitSeconds float64 `json:"submit_seconds"`
	Failed        bool    `json:"failed,omitempty"`
}

// Usage is what the framework holds right now.
type Usage struct {
	CPUs     float64 // of running ranks
	HeldCPUs float64 // in offers held for a gang
	Queued   int     // jobs waiting for their gang
}

// Framework is the gang framework.
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
	if cfg.Hold < 0 || cfg.Backoff < 0 || cfg.RefuseSeconds < 0 || cfg.MaxAttempts < 0 {
		return nil, errors.New("hold, backoff, refuse seconds and max attempts must not be negative")
	}
	cfg.Hold = cmpOr(cfg.Hold, DefaultHold)
	cfg.Backoff = cmpOr(cfg.Backoff, DefaultBackoff)
	cfg.RefuseSeconds = cmpOr(cfg.RefuseSeconds, DefaultRefuseSeconds)
	cfg.MaxAttempts = cmpOr(cfg.MaxAttempts, DefaultMaxAttempts)
	return &Framework{
		cfg:  cfg,
		loop: loop.New(cfg.Config),
		core: newCore(cfg.Jobs, need, cfg.Hold, cfg.Backoff, cfg.MaxAttempts),
	}, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
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
		f.core.release(now) // offers of an earlier subscription are void
		f.interest.Reset()
		f.core.submitDue(now)
	case schedulerpb.Event_OFFERS:
		for _, o := range ev.GetOffers().GetOffers() {
			launches, decline := f.core.offered(o, now)
			f.launch(ctx, launches, now)
			f.decline(ctx, decline, f.cfg.RefuseSeconds)
		}
	case schedulerpb.Event_RESCIND:
		f.core.rescinded(ev.GetRescind().GetOfferId().GetValue(), now)
	case schedulerpb.Event_UPDATE:
		f.kill(ctx, f.core.update(ev.GetUpdate().GetStatus(), now))
	case schedulerpb.Event_ERROR:
		f.logf("master error: %s", ev.GetError().GetMessage())
	}
	f.after(ctx, now)
}

// Next implements loop.Handler.
func (f *Framework) Next() time.Time { return f.core.next() }

// Wake implements loop.Handler: a gang that waited too long gives its
// offers back, filtered for the back-off.
func (f *Framework) Wake(ctx context.Context, now time.Time) {
	f.decline(ctx, f.core.wake(now), f.cfg.Backoff.Seconds())
	f.after(ctx, now)
}

// Done implements loop.Handler.
func (f *Framework) Done() bool { return f.core.done() }

// after adjusts offer interest and publishes usage.
func (f *Framework) after(ctx context.Context, now time.Time) {
	f.interest.Want(ctx, f.loop.Client, f.core.wantsOffers(now), f.logf)
	u := Usage{CPUs: float64(f.core.milli) / 1000, HeldCPUs: f.core.heldCPUs(), Queued: len(f.core.queue)}
	f.mu.Lock()
	f.usage = u
	f.mu.Unlock()
}

// launch accepts each offer of a gang with its ranks. All or nothing: if
// one ACCEPT fails, its ranks count as lost, which kills the others.
func (f *Framework) launch(ctx context.Context, ls []launch, now time.Time) {
	if len(ls) == 0 {
		return
	}
	filters := scheduler.RefuseFor(f.cfg.RefuseSeconds)
	for _, l := range ls {
		infos := make([]*mesos.TaskInfo, len(l.tasks))
		for i, t := range l.tasks {
			infos[i] = f.taskInfo(t)
		}
		if err := f.loop.Client.Launch(ctx, []*mesos.OfferID{l.offer.GetId()}, infos, filters); err != nil {
			f.logf("launching on %s: %v", l.offer.GetHostname(), err)
			for _, t := range l.tasks {
				f.kill(ctx, f.core.update(&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(t.id)},
					State: mesos.TaskState_TASK_LOST.Enum()}, now))
			}
		}
	}
}

func (f *Framework) taskInfo(t *task) *mesos.TaskInfo {
	j := t.job
	hosts := make([]string, len(j.tasks))
	for i, o := range j.tasks {
		hosts[i] = o.host
	}
	env := &mesos.Environment{}
	for _, kv := range [][2]string{{"MEZZO_GANG_JOB", j.spec.Name}, {"MEZZO_GANG_RANK", strconv.Itoa(t.rank)},
		{"MEZZO_GANG_SIZE", strconv.Itoa(j.spec.Tasks)}, {"MEZZO_GANG_HOSTS", strings.Join(hosts, ",")}} {
		env.Variables = append(env.Variables, &mesos.Environment_Variable{Name: proto.String(kv[0]), Value: proto.String(kv[1])})
	}
	ti := &mesos.TaskInfo{
		Name:      proto.String(j.spec.Name + "." + strconv.Itoa(t.rank)),
		TaskId:    &mesos.TaskID{Value: proto.String(t.id)},
		AgentId:   &mesos.AgentID{Value: proto.String(t.agent)},
		Resources: t.res.Proto(),
		Command:   &mesos.CommandInfo{Shell: proto.Bool(true), Value: proto.String(j.spec.Command), Environment: env},
	}
	if f.cfg.Decorate != nil {
		f.cfg.Decorate(ti, Placement{Job: j.spec.Name, AgentID: t.agent, Hostname: t.host, Rank: t.rank, Size: j.spec.Tasks})
	}
	return ti
}

func (f *Framework) kill(ctx context.Context, ts []*task) {
	for _, t := range ts {
		f.call("kill", f.loop.Client.Kill(ctx, &mesos.TaskID{Value: proto.String(t.id)}, &mesos.AgentID{Value: proto.String(t.agent)}))
	}
}

func (f *Framework) decline(ctx context.Context, os []*mesos.Offer, secs float64) {
	if len(os) == 0 {
		return
	}
	ids := make([]*mesos.OfferID, len(os))
	for i, o := range os {
		ids[i] = o.GetId()
	}
	f.call("decline", f.loop.Client.Decline(ctx, ids, scheduler.RefuseFor(secs)))
}

func (f *Framework) logf(format string, args ...any) { f.cfg.Logf("gang: "+format, args...) }

func (f *Framework) call(what string, err error) {
	if err != nil {
		f.logf("%s: %v", what, err)
	}
}

// result summarizes the finished run.
func (f *Framework) result() *Result {
	r := &Result{HeldCPUSeconds: f.core.heldMilliSeconds / 1000, GiveUps: f.core.giveUps}
	for _, j := range f.core.jobs {
		r.Jobs = append(r.Jobs, JobResult{Name: j.spec.Name, Tasks: j.spec.Tasks, Attempts: j.attempt, Failed: j.failed,
			Seconds:       j.finished.Sub(j.submitted).Seconds(),
			WaitSeconds:   j.launched.Sub(j.submitted).Seconds(),
			SubmitSeconds: j.submitted.Sub(f.core.arrivals.Started()).Seconds()})
	}
	return r
}
