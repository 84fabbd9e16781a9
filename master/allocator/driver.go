package allocator

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/internal/timerstat"
	"mezzo/resources"
)

// Registered allocator names.
const (
	// Default is the --allocator default, Mesos's name for its allocator.
	Default = "HierarchicalDRF"
	// StrictPriority offers roles in strict priority order (higher weight
	// first), DRF among a role's frameworks.
	StrictPriority = "StrictPriority"
	// Lottery orders roles by lottery draws with tickets proportional to
	// their weights (paper §4.3), frameworks in a role at random.
	Lottery = "Lottery"
)

func init() {
	Register(Default, func(o Options) (Allocator, error) { return newDriver(o, orderDRF) })
	Register(StrictPriority, func(o Options) (Allocator, error) { return newDriver(o, orderPriority) })
	Register(Lottery, func(o Options) (Allocator, error) { return newDriver(o, orderLottery) })
}

// driver runs a core on its own goroutine. Notifications are queued by the
// caller's goroutine; the loop drains them under mu and runs allocations
// every interval and soon after a notification that may free resources
// (all notifications queued by then coalesce into that one run). Callbacks
// are invoked from the loop, outside mu.
type driver struct {
	opts Options
	clk  clock.Clock

	qmu     sync.Mutex
	queue   []func(c *core, now time.Time) bool
	trigger bool // a queued notification asked for a run

	wake chan struct{}

	mu sync.Mutex // guards c (held by the loop while draining or allocating)
	c  *core

	startOnce, stopOnce sync.Once
	stop, done          chan struct{}
	started             bool
}

// validateOptions checks Options, naming the offending field.
func validateOptions(o Options) error {
	if o.Offer == nil {
		return errors.New("allocator: Options.Offer is required")
	}
	if o.Interval < 0 {
		return fmt.Errorf("allocator: Options.Interval must not be negative, got %v", o.Interval)
	}
	for r, w := range o.Weights {
		if !(w > 0) {
			return fmt.Errorf("allocator: Options.Weights[%q] must be positive, got %v", r, w)
		}
	}
	for i, m := range o.MinAllocatable {
		if len(m) == 0 {
			return fmt.Errorf("allocator: Options.MinAllocatable[%d] is empty", i)
		}
		for name, x := range m {
			if !(x >= 0) {
				return fmt.Errorf("allocator: Options.MinAllocatable[%d][%q] must not be negative, got %v", i, name, x)
			}
		}
	}
	return nil
}

func newDriver(o Options, order orderPolicy) (*driver, error) {
	if err := validateOptions(o); err != nil {
		return nil, err
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	c := newCore(o)
	c.order = order
	c.shuffle = true
	c.rng.Seed(time.Now().UnixNano())
	return &driver{
		opts: o,
		clk:  o.Clock,
		c:    c,
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}, nil
}

// enqueue queues a notification for the loop.
func (d *driver) enqueue(fn func(c *core, now time.Time) bool) {
	d.qmu.Lock()
	d.queue = append(d.queue, fn)
	d.qmu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// drainLocked applies all queued notifications; it reports whether one of
// them asked for an allocation run.
func (d *driver) drainLocked(now time.Time) bool {
	d.qmu.Lock()
	q := d.queue
	d.queue = nil
	trig := d.trigger
	d.trigger = false
	d.qmu.Unlock()
	for _, fn := range q {
		if fn(d.c, now) {
			trig = true
		}
	}
	return trig
}

// Start implements Allocator.
func (d *driver) Start() {
	d.startOnce.Do(func() {
		d.started = true
		go d.loop()
	})
}

// Stop implements Allocator.
func (d *driver) Stop() {
	d.stopOnce.Do(func() {
		close(d.stop)
		if d.started {
			<-d.done
		}
	})
}

func (d *driver) loop() {
	defer close(d.done)
	t := d.clk.NewTicker(d.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-d.wake:
			d.mu.Lock()
			run := d.drainLocked(d.clk.Now())
			d.mu.Unlock()
			if run {
				d.allocate()
			}
		case <-t.C():
			d.mu.Lock()
			d.drainLocked(d.clk.Now())
			d.mu.Unlock()
			d.allocate()
		}
	}
}

// allocate runs once and delivers the results outside the lock.
func (d *driver) allocate() {
	select {
	case <-d.stop:
		return
	default:
	}
	d.mu.Lock()
	now := d.clk.Now()
	d.drainLocked(now)
	if d.c.paused {
		d.mu.Unlock()
		return
	}
	start := time.Now() // wall time: this measures the run, it decides nothing
	res := d.c.allocate(now)
	d.c.metrics.record(float64(time.Since(start).Nanoseconds()) / 1e6)
	d.mu.Unlock()
	deliver(d.opts, res)
}

// deliver invokes the callbacks for a run's result in a deterministic
// order.
func deliver(o Options, res runResult) {
	ids := make([]string, 0, len(res.offers))
	for id := range res.offers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		o.Offer(id, res.offers[id])
	}
	if o.Rescind != nil {
		for _, r := range res.rescinds {
			o.Rescind(r.framework, r.agent, r.res)
		}
	}
	if o.Revoke != nil {
		for _, r := range res.revokes {
			o.Revoke(r.framework, r.agent, r.res)
		}
	}
	if o.InverseOffer != nil {
		ids = ids[:0]
		for id := range res.inverse {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			o.InverseOffer(id, res.inverse[id])
		}
	}
}

// Explain implements Introspector.
func (d *driver) Explain(frameworkID string) Explanation {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clk.Now()
	if d.drainLocked(now) {
		d.requestRun()
	}
	return d.c.explain(frameworkID, now)
}

// Metrics implements Introspector.
func (d *driver) Metrics() map[string]float64 {
	d.qmu.Lock()
	queued := len(d.queue)
	d.qmu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	// Apply pending notifications first so the answer reflects them.
	if d.drainLocked(d.clk.Now()) {
		d.requestRun()
	}
	return d.c.metricsMap(queued)
}

// Timers implements Introspector.
func (d *driver) Timers() map[string]timerstat.Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.c.timers()
}

// requestRun remembers that drained notifications asked for a run.
func (d *driver) requestRun() {
	d.qmu.Lock()
	d.trigger = true
	d.qmu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func copyUsed(m map[string]resources.Resources) map[string]resources.Resources {
	out := make(map[string]resources.Resources, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func copyStrings(s []string) []string { return append([]string(nil), s...) }

// The Allocator methods: each enqueues and returns.

// AddFramework implements Allocator (enqueues).
func (d *driver) AddFramework(id string, info *mesos.FrameworkInfo, used map[string]resources.Resources, active bool, opts FrameworkOptions) {
	used, opts.SuppressedRoles = copyUsed(used), copyStrings(opts.SuppressedRoles)
	d.enqueue(func(c *core, _ time.Time) bool { return c.addFramework(id, info, used, active, opts) })
}

// RemoveFramework implements Allocator (enqueues).
func (d *driver) RemoveFramework(id string) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.removeFramework(id) })
}

// ActivateFramework implements Allocator (enqueues).
func (d *driver) ActivateFramework(id string) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.activateFramework(id) })
}

// DeactivateFramework implements Allocator (enqueues).
func (d *driver) DeactivateFramework(id string) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.deactivateFramework(id) })
}

// UpdateFramework implements Allocator (enqueues).
func (d *driver) UpdateFramework(id string, info *mesos.FrameworkInfo, opts FrameworkOptions) {
	opts.SuppressedRoles = copyStrings(opts.SuppressedRoles)
	d.enqueue(func(c *core, _ time.Time) bool { return c.updateFramework(id, info, opts) })
}

// AddAgent implements Allocator (enqueues).
func (d *driver) AddAgent(id string, info *mesos.AgentInfo, total resources.Resources, used map[string]resources.Resources) {
	used = copyUsed(used)
	d.enqueue(func(c *core, _ time.Time) bool { return c.addAgent(id, info, total, used) })
}

// RemoveAgent implements Allocator (enqueues).
func (d *driver) RemoveAgent(id string) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.removeAgent(id) })
}

// UpdateAgent implements Allocator (enqueues).
func (d *driver) UpdateAgent(id string, info *mesos.AgentInfo, total resources.Resources) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.updateAgent(id, info, total) })
}

// UpdateOversubscribed implements Allocator (enqueues).
func (d *driver) UpdateOversubscribed(id string, oversubscribed resources.Resources) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.updateOversubscribed(id, oversubscribed) })
}

// ActivateAgent implements Allocator (enqueues).
func (d *driver) ActivateAgent(id string) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.activateAgent(id) })
}

// DeactivateAgent implements Allocator (enqueues).
func (d *driver) DeactivateAgent(id string) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.deactivateAgent(id) })
}

// RecoverResources implements Allocator (enqueues).
func (d *driver) RecoverResources(frameworkID, agentID string, r resources.Resources, filters *mesos.Filters) {
	d.enqueue(func(c *core, now time.Time) bool { return c.recoverResources(frameworkID, agentID, r, filters, now) })
}

// UpdateAllocation implements Allocator (enqueues).
func (d *driver) UpdateAllocation(frameworkID, agentID string, from, to resources.Resources) {
	d.enqueue(func(c *core, _ time.Time) bool { return c.updateAllocation(frameworkID, agentID, from, to) })
}

// SuppressOffers implements Allocator (enqueues).
func (d *driver) SuppressOffers(frameworkID string, roles []string) {
	roles = copyStrings(roles)
	d.enqueue(func(c *core, _ time.Time) bool { return c.suppressOffers(frameworkID, roles) })
}

// RequestResources implements Allocator (enqueues).
func (d *driver) RequestResources(frameworkID string, requests []Request) {
	requests = append([]Request(nil), requests...)
	d.enqueue(func(c *core, _ time.Time) bool { return c.requestResources(frameworkID, requests) })
}

// ReviveOffers implements Allocator (enqueues).
func (d *driver) ReviveOffers(frameworkID string, roles []string) {
	roles = copyStrings(roles)
	d.enqueue(func(c *core, _ time.Time) bool { return c.reviveOffers(frameworkID, roles) })
}

// UpdateWeights implements Allocator (enqueues).
func (d *driver) UpdateWeights(weights map[string]float64) {
	w := make(map[string]float64, len(weights))
	for k, v := range weights {
		w[k] = v
	}
	d.enqueue(func(c *core, _ time.Time) bool { return c.updateWeights(w) })
}

// UpdateQuota implements Allocator (enqueues).
func (d *driver) UpdateQuota(role string, q Quota) {
	q = Quota{Guarantees: copyMap(q.Guarantees), Limits: copyMap(q.Limits)}
	d.enqueue(func(c *core, _ time.Time) bool { return c.updateQuota(role, q) })
}

func copyMap(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// UpdateUnavailability implements Allocator.
func (d *driver) UpdateUnavailability(agentID string, u *mesos.Unavailability) {
	if u != nil {
		u = proto.Clone(u).(*mesos.Unavailability)
	}
	d.enqueue(func(c *core, _ time.Time) bool { return c.updateUnavailability(agentID, u) })
}

// UpdateInverseOffer implements Allocator.
func (d *driver) UpdateInverseOffer(agentID, frameworkID string, filters *mesos.Filters) {
	if filters != nil {
		filters = proto.Clone(filters).(*mesos.Filters)
	}
	d.enqueue(func(c *core, now time.Time) bool { return c.updateInverseOffer(agentID, frameworkID, filters, now) })
}

// Allocate implements Allocator (enqueues).
func (d *driver) Allocate() {
	d.enqueue(func(*core, time.Time) bool { return true })
}

// Pause implements Allocator (enqueues).
func (d *driver) Pause() {
	d.enqueue(func(c *core, _ time.Time) bool { c.paused = true; return false })
}

// Resume implements Allocator (enqueues).
func (d *driver) Resume() {
	d.enqueue(func(c *core, _ time.Time) bool { c.paused = false; return true })
}

var (
	_ Allocator    = (*driver)(nil)
	_ Introspector = (*driver)(nil)
)
