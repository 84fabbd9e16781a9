package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/resources"
	"mezzo/scheduler"
)

// DefaultProbeInterval is how often a Probe wants a task run.
const DefaultProbeInterval = 100 * time.Millisecond

// ProbeConfig configures a Probe. Only Masters is required.
type ProbeConfig struct {
	// Masters are the masters' addresses.
	Masters []string
	// Name of the framework (default "sim-probe"); Role its role
	// (default "*").
	Name, Role string
	// TaskResources is each probe task's resources (default
	// DefaultTaskResources).
	TaskResources string
	// Interval between probes (default DefaultProbeInterval). A probe
	// starts only once the previous one reached TASK_RUNNING or ended.
	Interval time.Duration
	// HTTPClient sends the framework's requests (default: plain HTTP/1.1).
	HTTPClient *http.Client
	// Clock stamps the samples and drives the interval (default real).
	Clock clock.Clock
	// Logf receives diagnostics (default: discarded).
	Logf func(format string, args ...any)
}

// ProbeSample is one probe task's timeline.
type ProbeSample struct {
	// Submitted: the probe wanted the task run (its tick). Accepted: the
	// ACCEPT launching it was sent (on an offer held, or the next one
	// that came). Running: its TASK_RUNNING arrived.
	Submitted, Accepted, Running time.Time
}

// Latency is from submission to TASK_RUNNING: what the paper's Fig. 10
// calls the overhead of launching a task (waiting for an offer included).
func (s ProbeSample) Latency() time.Duration { return s.Running.Sub(s.Submitted) }

// AcceptLatency is from the ACCEPT to TASK_RUNNING: the master's and the
// agent's part alone.
func (s ProbeSample) AcceptLatency() time.Duration { return s.Running.Sub(s.Accepted) }

// Probe is an emulated framework that measures how long the cluster takes
// to start one task while others load it (the paper's §6.5 test
// framework). It holds one offer at a time (suppressing its role while it
// does, declining the others), so that a probe usually starts at once;
// every Interval it launches one short task on the offer (reviving to get
// the next) and records the time until TASK_RUNNING. Probe tasks carry
// DurationLabel "0s": an emulated agent finishes them once TASK_RUNNING is
// acknowledged. Used by `mezzo bench cluster`; reusable for any
// latency-under-load experiment.
type Probe struct {
	cfg    ProbeConfig
	client *scheduler.Client
	need   resources.Resources
	cancel context.CancelFunc
	done   chan struct{}

	// Loop-owned.
	held       *mesos.Offer
	suppressed bool
	cur        *ProbeSample // the probe in progress (nil: none)
	curID      string
	seq        int

	mu      sync.Mutex
	samples []ProbeSample
	failed  int
	subbed  bool
	changed notifier
	err     error
}

// NewProbe validates cfg and returns a probe; Start subscribes it.
func NewProbe(cfg ProbeConfig) (*Probe, error) {
	if len(cfg.Masters) == 0 {
		return nil, errors.New("sim: probe 'Masters' must name at least one master")
	}
	if cfg.Interval < 0 {
		return nil, errors.New("sim: probe 'Interval' must not be negative")
	}
	if cfg.Name == "" {
		cfg.Name = "sim-probe"
	}
	if cfg.Role == "" {
		cfg.Role = "*"
	}
	if cfg.TaskResources == "" {
		cfg.TaskResources = DefaultTaskResources
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultProbeInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	need, err := resources.Parse(cfg.TaskResources, "*")
	if err != nil || need.IsEmpty() {
		return nil, fmt.Errorf("sim: invalid probe 'TaskResources' %q: %v", cfg.TaskResources, err)
	}
	info := &mesos.FrameworkInfo{User: proto.String("sim"), Name: proto.String(cfg.Name)}
	if cfg.Role != "*" {
		info.Role = proto.String(cfg.Role)
	}
	p := &Probe{cfg: cfg, need: need, done: make(chan struct{})}
	p.client = scheduler.New(scheduler.Config{
		Masters:    cfg.Masters,
		Framework:  info,
		HTTPClient: cfg.HTTPClient,
		Clock:      cfg.Clock,
		Logf:       cfg.Logf,
		MinBackoff: 100 * time.Millisecond,
	})
	return p, nil
}

// Start subscribes and returns once SUBSCRIBED arrived; probing starts
// then and goes on until Stop.
func (p *Probe) Start(ctx context.Context) error {
	rctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	events, err := p.client.Subscribe(rctx)
	if err != nil {
		cancel()
		close(p.done)
		return err
	}
	go p.run(rctx, events)
	return p.wait(ctx, func() bool { return p.subbed })
}

// Stop ends the probe's subscription (the framework is torn down: its
// held offer goes back at once).
func (p *Probe) Stop() {
	if p.cancel == nil {
		return
	}
	tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.client.Teardown(tctx); err != nil {
		p.cfg.Logf("sim probe: teardown: %v", err)
	}
	p.cancel()
	<-p.done
}

// Samples returns the probes that reached TASK_RUNNING, in order.
func (p *Probe) Samples() []ProbeSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ProbeSample(nil), p.samples...)
}

// Failed counts probe tasks that ended without reaching TASK_RUNNING.
func (p *Probe) Failed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// WaitSamples waits until at least n probes reached TASK_RUNNING.
func (p *Probe) WaitSamples(ctx context.Context, n int) error {
	return p.wait(ctx, func() bool { return len(p.samples) >= n })
}

func (p *Probe) wait(ctx context.Context, cond func() bool) error {
	return waitOn(ctx, &p.mu, &p.changed, p.done, &p.err, "probe", cond)
}

func (p *Probe) run(ctx context.Context, events <-chan *schedulerpb.Event) {
	defer close(p.done)
	tick := p.cfg.Clock.NewTicker(p.cfg.Interval)
	defer tick.Stop()
loop:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				break loop
			}
			p.handle(ctx, ev)
		case now := <-tick.C():
			if p.cur == nil {
				p.cur = &ProbeSample{Submitted: now}
				p.launch(ctx)
			}
		}
	}
	ended(&p.mu, &p.changed, &p.err, p.client)
}

func (p *Probe) handle(ctx context.Context, ev *schedulerpb.Event) {
	switch ev.GetType() {
	case schedulerpb.Event_SUBSCRIBED:
		p.suppressed, p.held = false, nil
		p.mu.Lock()
		p.subbed = true
		p.mu.Unlock()
	case schedulerpb.Event_OFFERS:
		var decline []*mesos.OfferID
		for _, o := range ev.GetOffers().GetOffers() {
			if p.held == nil && p.fits(o) {
				p.held = o
				continue
			}
			decline = append(decline, o.GetId())
		}
		if len(decline) > 0 {
			p.call(func() error { return p.client.Decline(ctx, decline, nil) })
		}
		if p.cur != nil && p.cur.Accepted.IsZero() {
			p.launch(ctx)
		}
		if p.held != nil && !p.suppressed {
			p.suppressed = true
			p.call(func() error { return p.client.Suppress(ctx) })
		}
	case schedulerpb.Event_RESCIND:
		if p.held != nil && p.held.GetId().GetValue() == ev.GetRescind().GetOfferId().GetValue() {
			p.held = nil
			p.revive(ctx)
		}
	case schedulerpb.Event_UPDATE:
		st := ev.GetUpdate().GetStatus()
		if len(st.GetUuid()) > 0 {
			go p.call(func() error { return p.client.Acknowledge(ctx, st) })
		}
		if p.cur == nil || st.GetTaskId().GetValue() != p.curID {
			return
		}
		switch {
		case st.GetState() == mesos.TaskState_TASK_RUNNING:
			p.cur.Running = p.cfg.Clock.Now()
			p.mu.Lock()
			p.samples = append(p.samples, *p.cur)
			p.mu.Unlock()
			p.cur = nil
			p.changed.notify()
		case isTerminal(st.GetState()):
			// Lost on the way (an offer rescinded meanwhile): try again
			// with the next offer, from the same submission.
			p.mu.Lock()
			p.failed++
			p.mu.Unlock()
			p.cur.Accepted = time.Time{}
			p.launch(ctx)
		}
	}
}

func (p *Probe) fits(o *mesos.Offer) bool {
	r, err := resources.FromProto(o.GetResources())
	return err == nil && r.WithoutAllocationInfo().Unreserved().Contains(p.need)
}

// launch starts the current probe's task on the held offer, or revives
// to get one.
func (p *Probe) launch(ctx context.Context) {
	if p.held == nil {
		p.revive(ctx)
		return
	}
	o := p.held
	p.held = nil
	p.seq++
	p.curID = p.cfg.Name + "-" + strconv.Itoa(p.seq)
	task := &mesos.TaskInfo{
		Name:      proto.String(p.curID),
		TaskId:    &mesos.TaskID{Value: proto.String(p.curID)},
		AgentId:   o.GetAgentId(),
		Resources: p.need.Proto(),
		Command:   &mesos.CommandInfo{Shell: proto.Bool(true), Value: proto.String("true")},
		Labels:    &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String(DurationLabel), Value: proto.String("0s")}}},
	}
	p.cur.Accepted = p.cfg.Clock.Now()
	// What the task leaves of the offer comes back without a filter, so
	// the agent can be offered again.
	p.call(func() error {
		return p.client.Launch(ctx, []*mesos.OfferID{o.GetId()}, []*mesos.TaskInfo{task}, scheduler.RefuseFor(0))
	})
	p.revive(ctx) // for the next probe's offer
}

func (p *Probe) revive(ctx context.Context) {
	if p.suppressed {
		p.suppressed = false
		p.call(func() error { return p.client.Revive(ctx) })
	}
}

func (p *Probe) call(fn func() error) {
	if err := fn(); err != nil {
		p.cfg.Logf("sim probe %s: %v", p.cfg.Name, err)
	}
}
