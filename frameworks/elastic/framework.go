package elastic

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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
	DefaultName = "mezzo-elastic"
	// DefaultTaskResources is one replica's resources (a port to serve on).
	DefaultTaskResources = "cpus:1;mem:128;ports:1"
	// DefaultTarget is the load one replica takes, requests per second
	// (the paper's web farm: 150 sessions/s per server).
	DefaultTarget = 150
	// DefaultMax bounds the replicas.
	DefaultMax = 10
	// DefaultInterval is the scaling tick.
	DefaultInterval = time.Second
	// DefaultScaleDownAfter is how long fewer replicas must be enough
	// before the surplus is killed.
	DefaultScaleDownAfter = 10 * time.Second
	// DefaultRefuseSeconds filters offers the service does not use.
	DefaultRefuseSeconds = 5.0
	// sameAgentRefuse filters an agent that already runs a replica (the
	// paper's web farm sets a filter for that machine).
	sameAgentRefuse = 30.0
)

// Config configures the elastic service. Masters, Command (or Decorate)
// and Load are required.
type Config struct {
	loop.Config
	// TaskResources is each replica's, e.g. "cpus:1;mem:128;ports:1"
	// (ports is a count: the replica gets that many from the offer).
	TaskResources string
	// Command is what a replica runs, through /bin/sh, with PORT set to
	// its first port (and MEZZO_ELASTIC_REPLICA to its ID).
	Command string
	// Target is the load one replica takes, requests per second.
	Target float64
	// Min and Max bound the replicas (Min default 1).
	Min, Max int
	// Interval is the scaling tick.
	Interval time.Duration
	// ScaleDownAfter: fewer replicas must suffice this long before any
	// is killed.
	ScaleDownAfter time.Duration
	// Revocable lets replicas beyond Min run on revocable resources
	// (subscribing with REVOCABLE_RESOURCES).
	Revocable bool
	// RefuseSeconds filters offers not used.
	RefuseSeconds float64
	// Load is the load observed at now, requests per second: the
	// balancer's meter, or (emulated) the offered load.
	Load func(now time.Time) float64
	// Decorate, if set, may change a replica's task before it is launched.
	Decorate func(*mesos.TaskInfo)
}

// Sample is the service's state at one tick.
type Sample struct {
	Seconds   float64 `json:"t"`
	Load      float64 `json:"load"`
	Desired   int     `json:"desired"`
	Running   int     `json:"running"`
	Revocable int     `json:"revocable"`
}

// Result is what a run did.
type Result struct {
	Samples []Sample `json:"samples"`
	// Launched replicas; Lost ended without our kill, Revoked of them on
	// revocable resources.
	Launched int `json:"launched"`
	Lost     int `json:"lost"`
	Revoked  int `json:"revoked"`
	// RevocableLaunched counts replicas started on revocable resources.
	RevocableLaunched int `json:"revocable_launched"`
}

// Usage is the service's state now.
type Usage struct {
	Running, Revocable, Desired int
	CPUs, Load                  float64
}

// Framework is the elastic service.
type Framework struct {
	cfg  Config
	loop *loop.Loop
	core *core

	// Loop-owned.
	interest  loop.Interest
	start     time.Time
	next      time.Time
	samples   []Sample
	revLaunch int

	stop atomic.Bool
	mu   sync.Mutex
	eps  []string
	use  Usage
}

// New validates cfg and returns a service; Run runs it.
func New(cfg Config) (*Framework, error) {
	var err error
	if cfg.Config, err = cfg.Config.Normalize(DefaultName); err != nil {
		return nil, err
	}
	if cfg.Command == "" && cfg.Decorate == nil {
		return nil, errors.New("no replica command given")
	}
	if cfg.Load == nil {
		return nil, errors.New("no load source given")
	}
	if cfg.TaskResources == "" {
		cfg.TaskResources = DefaultTaskResources
	}
	need, err := offers.ParseNeed(cfg.TaskResources)
	if err != nil {
		return nil, fmt.Errorf("replica resources: %w", err)
	}
	if cfg.Target < 0 || cfg.Min < 0 || cfg.Max < 0 || cfg.Interval < 0 || cfg.ScaleDownAfter < 0 || cfg.RefuseSeconds < 0 {
		return nil, errors.New("target, min, max, interval, scale-down delay and refuse seconds must not be negative")
	}
	if cfg.Target == 0 {
		cfg.Target = DefaultTarget
	}
	if cfg.Max == 0 {
		cfg.Max = max(DefaultMax, cfg.Min)
	}
	if cfg.Min > cfg.Max {
		return nil, fmt.Errorf("min replicas %d is above max %d", cfg.Min, cfg.Max)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.ScaleDownAfter == 0 {
		cfg.ScaleDownAfter = DefaultScaleDownAfter
	}
	if cfg.RefuseSeconds == 0 {
		cfg.RefuseSeconds = DefaultRefuseSeconds
	}
	var caps []mesos.FrameworkInfo_Capability_Type
	if cfg.Revocable {
		caps = append(caps, mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES)
	}
	return &Framework{
		cfg:  cfg,
		loop: loop.New(cfg.Config, caps...),
		core: newCore(need, cfg.Target, cfg.Min, cfg.Max, cfg.ScaleDownAfter, cfg.Revocable),
	}, nil
}

// Run serves until Stop (then tears the framework down, which ends the
// replicas) or until ctx ends (then the framework stays registered for
// its failover timeout), and returns what it did.
func (f *Framework) Run(ctx context.Context) (*Result, error) {
	err := f.loop.Run(ctx, f)
	res := &Result{Samples: f.samples, Launched: f.core.launched, Lost: f.core.lost, Revoked: f.core.revoked,
		RevocableLaunched: f.revLaunch}
	return res, err
}

// Stop asks Run to tear the service down and return; safe from any
// goroutine. It takes effect at the next tick.
func (f *Framework) Stop() { f.stop.Store(true) }

// Endpoints lists where the running replicas serve ("host:port"); safe
// from any goroutine (the balancer calls it per request).
func (f *Framework) Endpoints() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.eps
}

// ID is the framework ID the master assigned ("" before it subscribed);
// safe from any goroutine.
func (f *Framework) ID() string { return f.loop.Client.FrameworkID().GetValue() }

// Usage is the service's state now; safe from any goroutine.
func (f *Framework) Usage() Usage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.use
}

// Event implements loop.Handler.
func (f *Framework) Event(ctx context.Context, ev *schedulerpb.Event, now time.Time) {
	switch ev.GetType() {
	case schedulerpb.Event_SUBSCRIBED:
		if f.start.IsZero() {
			f.start, f.next = now, now
		}
		f.interest.Reset()
	case schedulerpb.Event_OFFERS:
		f.offers(ctx, ev.GetOffers().GetOffers(), now)
	case schedulerpb.Event_UPDATE:
		f.core.update(ev.GetUpdate().GetStatus(), now)
	case schedulerpb.Event_ERROR:
		f.logf("master error: %s", ev.GetError().GetMessage())
	}
	f.after(ctx)
}

// Next implements loop.Handler: the next scaling tick.
func (f *Framework) Next() time.Time { return f.next }

// Wake implements loop.Handler: a scaling tick.
func (f *Framework) Wake(ctx context.Context, now time.Time) {
	f.next = now.Add(f.cfg.Interval)
	for _, r := range f.core.observe(f.cfg.Load(now), now) {
		if err := f.loop.Client.Kill(ctx, &mesos.TaskID{Value: proto.String(r.id)}, &mesos.AgentID{Value: proto.String(r.agent)}); err != nil {
			f.logf("kill %s: %v", r.id, err)
		}
	}
	running, rev, _ := f.core.counts()
	f.samples = append(f.samples, Sample{Seconds: now.Sub(f.start).Seconds(), Load: f.core.load,
		Desired: f.core.desired, Running: running, Revocable: rev})
	f.after(ctx)
}

// Done implements loop.Handler.
func (f *Framework) Done() bool { return f.stop.Load() }

func (f *Framework) offers(ctx context.Context, os []*mesos.Offer, now time.Time) {
	var decline, taken []*mesos.OfferID
	// One agent's regular and revocable resources come in separate
	// offers; a replica may take from all of them in one ACCEPT.
	for _, g := range scheduler.ByAgent(os) {
		r, skip := f.core.offeredOn(g.Offers[0], g.Resources, now)
		switch {
		case r != nil:
			if r.revocable {
				f.revLaunch++
			}
			if err := f.loop.Client.Launch(ctx, g.IDs(), []*mesos.TaskInfo{f.taskInfo(r)},
				scheduler.RefuseFor(sameAgentRefuse)); err != nil {
				f.logf("launching %s on %s: %v", r.id, g.Offers[0].GetHostname(), err)
				f.core.update(&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(r.id)}, State: mesos.TaskState_TASK_LOST.Enum()}, now)
			}
		case skip:
			taken = append(taken, g.IDs()...)
		default:
			decline = append(decline, g.IDs()...)
		}
	}
	if len(taken) > 0 {
		f.call("decline", f.loop.Client.Decline(ctx, taken, scheduler.RefuseFor(sameAgentRefuse)))
	}
	if len(decline) > 0 {
		f.call("decline", f.loop.Client.Decline(ctx, decline, scheduler.RefuseFor(f.cfg.RefuseSeconds)))
	}
}

func (f *Framework) taskInfo(r *replica) *mesos.TaskInfo {
	env := &mesos.Environment{Variables: []*mesos.Environment_Variable{
		{Name: proto.String("MEZZO_ELASTIC_REPLICA"), Value: proto.String(r.id)},
	}}
	if ps := offers.Ports(r.res); len(ps) > 0 {
		env.Variables = append(env.Variables, &mesos.Environment_Variable{Name: proto.String("PORT"), Value: proto.String(strconv.FormatUint(ps[0], 10))})
	}
	ti := &mesos.TaskInfo{
		Name:      proto.String(f.cfg.Name + "." + r.id),
		TaskId:    &mesos.TaskID{Value: proto.String(r.id)},
		AgentId:   &mesos.AgentID{Value: proto.String(r.agent)},
		Resources: r.res.Proto(),
		Command:   &mesos.CommandInfo{Shell: proto.Bool(true), Value: proto.String(f.cfg.Command), Environment: env},
	}
	if f.cfg.Decorate != nil {
		f.cfg.Decorate(ti)
	}
	return ti
}

// after adjusts offer interest and publishes endpoints and usage.
func (f *Framework) after(ctx context.Context) {
	f.interest.Want(ctx, f.loop.Client, f.core.wantsOffers(), f.logf)
	running, rev, cpus := f.core.counts()
	eps := f.core.endpoints()
	f.mu.Lock()
	f.eps = eps
	f.use = Usage{Running: running, Revocable: rev, Desired: f.core.desired, CPUs: cpus, Load: f.core.load}
	f.mu.Unlock()
}

func (f *Framework) logf(format string, args ...any) { f.cfg.Logf("elastic: "+format, args...) }

func (f *Framework) call(what string, err error) {
	if err != nil {
		f.logf("%s: %v", what, err)
	}
}
