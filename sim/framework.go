package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/resources"
	"mezzo/scheduler"
)

// Framework defaults.
const (
	// DefaultTaskResources is what each fake task asks for.
	DefaultTaskResources = "cpus:0.1;mem:32"
	// DefaultFailoverTimeout keeps a framework registered across a master
	// failover and the time its scheduler needs to re-subscribe.
	DefaultFailoverTimeout = time.Hour
	// DefaultRefuseSeconds is the decline filter (Mesos's default 5 s).
	DefaultRefuseSeconds = 5.0
	// FrameworkMaxCalls is the default bound on a framework's calls in
	// flight (FrameworkConfig.CallsInFlight; each is an HTTP request of
	// its own).
	FrameworkMaxCalls = 16
)

// FrameworkConfig configures an emulated framework. Only Masters is
// required.
type FrameworkConfig struct {
	// Masters are the masters' addresses; the SDK follows redirects.
	Masters []string
	// Name of the framework (default "sim-framework").
	Name string
	// Role to subscribe in (default "*").
	Role string
	// User tasks run as (default "sim").
	User string
	// FailoverTimeout is FrameworkInfo.failover_timeout (default 1 h).
	FailoverTimeout time.Duration
	// Tasks is how many fake tasks to launch in all (0: none; the
	// framework holds its subscription and declines every offer).
	Tasks int
	// LaunchRate caps launches per second (0: as fast as offers come).
	LaunchRate float64
	// TaskResources is each task's resources in Mesos text form (default
	// DefaultTaskResources).
	TaskResources string
	// TaskDuration, if non-zero, is put on every task as DurationLabel
	// (Never: "never"); zero leaves the agents' default.
	TaskDuration time.Duration
	// TaskDurationStdDev, if positive, draws each task's duration from a
	// normal distribution around TaskDuration (at least a tenth of it),
	// seeded by Seed: the paper's scalability workload (§6.5: mean 30 s,
	// standard deviation 10 s).
	TaskDurationStdDev time.Duration
	// Seed seeds the duration draws, so that runs can be compared.
	Seed uint64
	// TasksPerOffer caps the tasks launched on one offer (0: as many as
	// fit). The paper's scalability frameworks start one task on each
	// agent they are offered.
	TasksPerOffer int
	// CallsInFlight bounds the launches, declines and acknowledgements the
	// framework has outstanding at once (default FrameworkMaxCalls).
	CallsInFlight int
	// RefuseSeconds is the filter on declined offers (default 5).
	RefuseSeconds float64
	// StartSuppressed subscribes with the role suppressed: the framework
	// launches nothing until Resume (a benchmark starts every framework's
	// launches at one instant).
	StartSuppressed bool
	// HTTPClient sends the framework's requests (default: a plain
	// HTTP/1.1 client, as most Mesos frameworks use, keeping
	// FrameworkMaxCalls+1 idle connections).
	HTTPClient *http.Client
	// Clock drives the launch rate and the SDK's timers (default real).
	Clock clock.Clock
	// Logf receives diagnostics (default: discarded).
	Logf func(format string, args ...any)
}

// Framework is an emulated scheduler: it subscribes through the scheduler
// SDK, launches fake tasks on offers at a configured rate, declines the
// rest with filters, acknowledges updates, and re-subscribes after a
// master failover (the SDK does), recording when.
type Framework struct {
	cfg    FrameworkConfig
	client *scheduler.Client
	need   resources.Resources
	label  *mesos.Labels
	rng    *rand.Rand // duration draws (loop-owned)

	cancel context.CancelFunc
	done   chan struct{}
	// sem bounds the calls in flight off the loop; inflight counts them.
	sem      chan struct{}
	inflight sync.WaitGroup

	// Loop-owned.
	launched   int
	tokens     float64
	lastRefill time.Time
	suppressed bool
	// resumed is set by Resume (StartSuppressed frameworks launch only
	// after it).
	resumed atomic.Bool

	mu      sync.Mutex
	subs    []time.Time                // SUBSCRIBED events received
	states  map[string]mesos.TaskState // latest state per task
	stats   FrameworkStats
	changed notifier
	err     error
}

// FrameworkStats counts what a framework saw and did.
type FrameworkStats struct {
	Subscriptions int // SUBSCRIBED events (1 + re-subscriptions)
	Offers        int // offers received
	Declined      int // offers declined
	Launched      int // tasks launched
	Running       int // tasks whose latest state is TASK_RUNNING
	Finished      int // tasks ended TASK_FINISHED
	Failed        int // tasks ended in another terminal state
	Updates       int // status updates received
	Acked         int // acknowledgements sent
	CallErrors    int // calls the master refused or that failed
}

// NewFramework validates cfg and returns a framework; Start subscribes.
func NewFramework(cfg FrameworkConfig) (*Framework, error) {
	if len(cfg.Masters) == 0 {
		return nil, errors.New("sim: framework 'Masters' must name at least one master")
	}
	if cfg.Tasks < 0 || cfg.LaunchRate < 0 || cfg.RefuseSeconds < 0 || cfg.FailoverTimeout < 0 || cfg.TasksPerOffer < 0 {
		return nil, errors.New("sim: framework 'Tasks', 'LaunchRate', 'RefuseSeconds', 'FailoverTimeout' and 'TasksPerOffer' must not be negative")
	}
	if cfg.CallsInFlight < 0 {
		return nil, errors.New("sim: framework 'CallsInFlight' must not be negative")
	}
	if cfg.CallsInFlight == 0 {
		cfg.CallsInFlight = FrameworkMaxCalls
	}
	if cfg.TaskDurationStdDev < 0 || (cfg.TaskDurationStdDev > 0 && cfg.TaskDuration <= 0) {
		return nil, errors.New("sim: framework 'TaskDurationStdDev' must not be negative, and needs a positive 'TaskDuration'")
	}
	if cfg.Name == "" {
		cfg.Name = "sim-framework"
	}
	if cfg.Role == "" {
		cfg.Role = "*"
	}
	if cfg.User == "" {
		cfg.User = "sim"
	}
	if cfg.FailoverTimeout == 0 {
		cfg.FailoverTimeout = DefaultFailoverTimeout
	}
	if cfg.TaskResources == "" {
		cfg.TaskResources = DefaultTaskResources
	}
	if cfg.RefuseSeconds == 0 {
		cfg.RefuseSeconds = DefaultRefuseSeconds
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.HTTPClient == nil {
		// Enough idle connections for its calls in flight: with
		// net/http's default of 2, most acknowledgements would dial a
		// connection of their own.
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: FrameworkMaxCalls + 1}}
	}
	need, err := resources.Parse(cfg.TaskResources, "*")
	if err != nil {
		return nil, fmt.Errorf("sim: invalid framework 'TaskResources': %w", err)
	}
	if need.IsEmpty() {
		return nil, errors.New("sim: framework 'TaskResources' is empty")
	}
	info := &mesos.FrameworkInfo{
		User:            proto.String(cfg.User),
		Name:            proto.String(cfg.Name),
		FailoverTimeout: proto.Float64(cfg.FailoverTimeout.Seconds()),
		Capabilities: []*mesos.FrameworkInfo_Capability{
			{Type: mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT.Enum()},
		},
	}
	if cfg.Role != "*" {
		info.Role = proto.String(cfg.Role)
	}
	f := &Framework{
		cfg:    cfg,
		need:   need,
		sem:    make(chan struct{}, cfg.CallsInFlight),
		states: map[string]mesos.TaskState{},
		done:   make(chan struct{}),
	}
	if cfg.TaskDurationStdDev > 0 {
		f.rng = rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	} else if cfg.TaskDuration != 0 {
		f.label = DurationLabels(cfg.TaskDuration)
	}
	var suppressed []string
	if cfg.StartSuppressed {
		suppressed = []string{cfg.Role}
	}
	f.client = scheduler.New(scheduler.Config{
		Masters:         cfg.Masters,
		Framework:       info,
		SuppressedRoles: suppressed,
		HTTPClient:      cfg.HTTPClient,
		Clock:           cfg.Clock,
		Logf:            cfg.Logf,
		MinBackoff:      100 * time.Millisecond,
	})
	return f, nil
}

// Start subscribes and returns once the master's SUBSCRIBED arrived. The
// framework then runs until Stop, Teardown, or the master ends it.
func (f *Framework) Start(ctx context.Context) error {
	rctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	events, err := f.client.Subscribe(rctx)
	if err != nil {
		cancel()
		close(f.done)
		return err
	}
	go f.run(rctx, events)
	if _, err := f.WaitSubscribedSince(ctx, time.Time{}); err != nil {
		return err
	}
	return nil
}

// Stop ends the subscription without tearing the framework down (as a
// crashed scheduler: the master keeps it for its failover timeout).
func (f *Framework) Stop() {
	if f.cancel != nil {
		f.cancel()
	}
	<-f.done
	f.inflight.Wait()
}

// Resume starts the launches of a StartSuppressed framework: it revives
// its role, so offers come.
func (f *Framework) Resume(ctx context.Context) error {
	f.resumed.Store(true)
	return f.client.Revive(ctx)
}

// Teardown removes the framework from the cluster (its tasks are killed)
// and stops it.
func (f *Framework) Teardown(ctx context.Context) error {
	err := f.client.Teardown(ctx)
	f.Stop()
	return err
}

// ID is the framework ID, "" before the master assigned it.
func (f *Framework) ID() string { return f.client.FrameworkID().GetValue() }

// Err is why the framework's subscription ended for good (nil while it
// runs).
func (f *Framework) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Stats returns the framework's counters.
func (f *Framework) Stats() FrameworkStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.Subscriptions = len(f.subs)
	return s
}

// Subscriptions returns when each SUBSCRIBED event arrived (the first
// subscription, then one per re-subscription after a failover).
func (f *Framework) Subscriptions() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.subs...)
}

// TaskStates returns the latest state of every task the framework heard of.
func (f *Framework) TaskStates() map[string]mesos.TaskState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]mesos.TaskState, len(f.states))
	for k, v := range f.states {
		out[k] = v
	}
	return out
}

// WaitSubscribedSince waits for a SUBSCRIBED at or after since and returns
// its time.
func (f *Framework) WaitSubscribedSince(ctx context.Context, since time.Time) (time.Time, error) {
	var at time.Time
	err := f.wait(ctx, func() bool {
		for _, t := range f.subs {
			if !t.Before(since) {
				at = t
				return true
			}
		}
		return false
	})
	return at, err
}

// WaitTasks waits until n tasks reached a terminal state, and returns how
// many of them finished.
func (f *Framework) WaitTasks(ctx context.Context, n int) (finished int, err error) {
	err = f.wait(ctx, func() bool {
		finished = f.stats.Finished
		return f.stats.Finished+f.stats.Failed >= n
	})
	return finished, err
}

// wait polls cond (under f.mu) on every change until it holds, ctx ends,
// or the framework's subscription ends.
func (f *Framework) wait(ctx context.Context, cond func() bool) error {
	return waitOn(ctx, &f.mu, &f.changed, f.done, &f.err, "framework", cond)
}

// waitOn polls cond (under mu) on every notification of changed until it
// holds, ctx ends, or *errp is set (the subscription of the framework,
// named what, ended; done closes then).
func waitOn(ctx context.Context, mu *sync.Mutex, changed *notifier, done <-chan struct{}, errp *error, what string, cond func() bool) error {
	for {
		ch := changed.wait()
		mu.Lock()
		ok, err := cond(), *errp
		mu.Unlock()
		if ok {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sim: %s ended: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-done:
		}
	}
}

// ended records why a scheduler client's subscription ended (errStopped
// when it was stopped) in *errp, under mu, and wakes the waiters.
func ended(mu *sync.Mutex, changed *notifier, errp *error, client *scheduler.Client) {
	mu.Lock()
	*errp = client.Err()
	if *errp == nil {
		*errp = errStopped
	}
	mu.Unlock()
	changed.notify()
}

// run is the framework's event loop.
func (f *Framework) run(ctx context.Context, events <-chan *schedulerpb.Event) {
	defer close(f.done)
	for ev := range events {
		f.handle(ctx, ev)
	}
	ended(&f.mu, &f.changed, &f.err, f.client)
}

func (f *Framework) handle(ctx context.Context, ev *schedulerpb.Event) {
	switch ev.GetType() {
	case schedulerpb.Event_SUBSCRIBED:
		f.mu.Lock()
		again := len(f.subs) > 0
		f.subs = append(f.subs, f.cfg.Clock.Now())
		f.mu.Unlock()
		f.suppressed = f.cfg.StartSuppressed
		if again {
			// Re-subscribed (a failover): ask for the tasks' latest states,
			// as updates sent meanwhile may be lost to us.
			f.call(func() error { return f.client.Reconcile(ctx, nil) })
			if f.suppressed && f.resumed.Load() && f.launched < f.cfg.Tasks {
				// SUBSCRIBE suppressed the role again.
				f.suppressed = false
				f.call(func() error { return f.client.Revive(ctx) })
			}
		}
	case schedulerpb.Event_OFFERS:
		f.offers(ctx, ev.GetOffers().GetOffers())
	case schedulerpb.Event_UPDATE:
		st := ev.GetUpdate().GetStatus()
		f.mu.Lock()
		f.stats.Updates++
		prev, known := f.states[st.GetTaskId().GetValue()]
		if !known || !isTerminal(prev) {
			f.states[st.GetTaskId().GetValue()] = st.GetState()
			if known && prev == mesos.TaskState_TASK_RUNNING {
				f.stats.Running--
			}
			switch st.GetState() {
			case mesos.TaskState_TASK_RUNNING:
				f.stats.Running++
			case mesos.TaskState_TASK_FINISHED:
				f.stats.Finished++
			default:
				if isTerminal(st.GetState()) {
					f.stats.Failed++
				}
			}
		}
		f.mu.Unlock()
		if len(st.GetUuid()) > 0 {
			f.ack(ctx, st)
		}
	}
	f.changed.notify()
}

// offers launches what the rate and the remaining count allow and
// declines the rest. The calls go out together (through async, at most
// CallsInFlight at once), as a scheduler that launches as fast as offers
// allow sends them: one after the other, each waiting for the master's
// answer, a framework's launches were as slow as the master's latency
// under load.
func (f *Framework) offers(ctx context.Context, offers []*mesos.Offer) {
	f.refill()
	waiting := f.cfg.StartSuppressed && !f.resumed.Load()
	if f.suppressed && !waiting {
		f.suppressed = false // Resume revived the role
	}
	var decline []*mesos.OfferID
	for _, o := range offers {
		var tasks []*mesos.TaskInfo
		if !waiting {
			tasks = f.fill(o)
		}
		if len(tasks) == 0 {
			decline = append(decline, o.GetId())
			continue
		}
		ids := []*mesos.OfferID{o.GetId()}
		filters := scheduler.RefuseFor(f.cfg.RefuseSeconds)
		f.async(ctx, func() error { return f.client.Launch(ctx, ids, tasks, filters) }, f.logError("launch"))
	}
	f.mu.Lock()
	f.stats.Offers += len(offers)
	f.stats.Declined += len(decline)
	f.stats.Launched = f.launched
	f.mu.Unlock()
	if len(decline) > 0 {
		f.async(ctx, func() error { return f.client.Decline(ctx, decline, scheduler.RefuseFor(f.cfg.RefuseSeconds)) }, f.logError("decline"))
	}
	if f.launched >= f.cfg.Tasks && !f.suppressed {
		// Nothing left to launch: stop offers, as a well-behaved
		// framework does, so the allocator offers to the others.
		f.suppressed = true
		f.async(ctx, func() error { return f.client.Suppress(ctx) }, f.logError("suppress"))
	}
}

// fill packs as many tasks into the offer as fit, the rate allows and
// remain to launch.
func (f *Framework) fill(o *mesos.Offer) []*mesos.TaskInfo {
	offered, err := resources.FromProto(o.GetResources())
	if err != nil {
		return nil
	}
	offered = offered.WithoutAllocationInfo().Unreserved()
	var tasks []*mesos.TaskInfo
	for f.launched < f.cfg.Tasks && (f.cfg.LaunchRate <= 0 || f.tokens >= 1) && offered.Contains(f.need) &&
		(f.cfg.TasksPerOffer == 0 || len(tasks) < f.cfg.TasksPerOffer) {
		offered = offered.Subtract(f.need)
		f.launched++
		if f.cfg.LaunchRate > 0 {
			f.tokens--
		}
		id := f.cfg.Name + "-task-" + strconv.Itoa(f.launched)
		tasks = append(tasks, &mesos.TaskInfo{
			Name:      proto.String(id),
			TaskId:    &mesos.TaskID{Value: proto.String(id)},
			AgentId:   o.GetAgentId(),
			Resources: f.need.Proto(),
			Command:   &mesos.CommandInfo{Shell: proto.Bool(true), Value: proto.String("true")},
			Labels:    f.taskLabels(),
		})
	}
	return tasks
}

// taskLabels is the next task's duration label: the fixed one, or a draw.
func (f *Framework) taskLabels() *mesos.Labels {
	if f.rng == nil {
		return f.label
	}
	mean, sd := f.cfg.TaskDuration, f.cfg.TaskDurationStdDev
	return DurationLabels(NormalDuration(f.rng, mean, sd))
}

// NormalDuration draws a duration from a normal distribution around mean,
// at least a tenth of the mean.
func NormalDuration(r *rand.Rand, mean, sd time.Duration) time.Duration {
	return max(time.Duration(float64(mean)+r.NormFloat64()*float64(sd)), mean/10)
}

// DurationLabels is the label that sets a fake task's duration (Never:
// until killed) on an emulated agent.
func DurationLabels(d time.Duration) *mesos.Labels {
	v := d.String()
	if d < 0 {
		v = "never"
	}
	return &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String(DurationLabel), Value: proto.String(v)}}}
}

// refill adds launch tokens for the time since the last offer (at most
// one second's worth banked).
func (f *Framework) refill() {
	if f.cfg.LaunchRate <= 0 {
		return
	}
	now := f.cfg.Clock.Now()
	if f.lastRefill.IsZero() {
		f.tokens = max(1, f.cfg.LaunchRate)
	} else {
		f.tokens += now.Sub(f.lastRefill).Seconds() * f.cfg.LaunchRate
		f.tokens = min(f.tokens, max(1, f.cfg.LaunchRate))
	}
	f.lastRefill = now
}

// logError logs a failed asynchronous call.
func (f *Framework) logError(what string) func(error) {
	return func(err error) {
		if err != nil {
			f.cfg.Logf("sim framework %s: %s: %v", f.cfg.Name, what, err)
		}
	}
}

// call makes a call to the master on the loop, counting failures.
func (f *Framework) call(fn func() error) {
	if err := fn(); err != nil {
		f.mu.Lock()
		f.stats.CallErrors++
		f.mu.Unlock()
		f.cfg.Logf("sim framework %s: %v", f.cfg.Name, err)
	}
}

// ack acknowledges an update off the loop.
func (f *Framework) ack(ctx context.Context, st *mesos.TaskStatus) {
	f.async(ctx, func() error { return f.client.Acknowledge(ctx, st) }, func(err error) {
		if err == nil {
			f.stats.Acked++
			return
		}
		f.cfg.Logf("sim framework %s: acknowledging %s: %v", f.cfg.Name, st.GetTaskId().GetValue(), err)
	})
}

// async makes a call off the loop, a bounded number at once, and counts
// its outcome (done runs under f.mu). Every call to the master waits for
// the master's event loop; a framework that made them one after another
// would be paced by that round trip, not by its offers and updates (a
// Mesos scheduler driver does not wait either: its messages are one-way).
// Answers to different offers, and acknowledgements, need no order.
func (f *Framework) async(ctx context.Context, call func() error, done func(err error)) {
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	f.inflight.Add(1)
	go func() {
		defer f.inflight.Done()
		defer func() { <-f.sem }()
		err := call()
		f.mu.Lock()
		if err != nil {
			f.stats.CallErrors++
		}
		if done != nil {
			done(err)
		}
		f.mu.Unlock()
	}()
}

// StartFrameworks builds and starts a framework per config, parallel at a
// time (the schedulers of a cluster start independently, not one after
// another; 16 if parallel is 0). It returns the frameworks built, started
// or not, with every error; the caller stops them.
func StartFrameworks(ctx context.Context, cfgs []FrameworkConfig, parallel int) ([]*Framework, error) {
	if parallel <= 0 {
		parallel = 16
	}
	fws := make([]*Framework, 0, len(cfgs))
	errs := make([]error, len(cfgs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		fw, err := NewFramework(cfg)
		if err != nil {
			wg.Wait()
			return fws, err
		}
		fws = append(fws, fw)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fw.Start(ctx); err != nil {
				errs[i] = fmt.Errorf("sim: framework %d (%s): %w", i, cfg.Name, err)
			}
		}()
	}
	wg.Wait()
	return fws, errors.Join(errs...)
}
