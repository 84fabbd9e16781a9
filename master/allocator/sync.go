package allocator

import (
	"runtime"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/timerstat"
	"mezzo/master/allocator/internal/cputime"
	"mezzo/resources"
)

// Sync is an allocator without its goroutine: every notification is
// applied when called, and allocation runs happen only when Run is called,
// at the time given, delivering through the Options callbacks before Run
// returns. Benchmarks (master/allocator/bench) and simulations use it; it
// is not safe for concurrent use. It implements Allocator (Start, Stop
// and Allocate do nothing) and Introspector.
type Sync struct {
	opts    Options
	c       *core
	lastCPU time.Duration
}

// NewSync builds a synchronous allocator of a registered policy: one of
// Default, StrictPriority or Lottery.
func NewSync(name string, opts Options) (*Sync, error) {
	order := orderDRF
	switch name {
	case Default:
	case StrictPriority:
		order = orderPriority
	case Lottery:
		order = orderLottery
	default:
		_, err := New(name, opts)
		if err == nil {
			err = errUnsupportedSync(name)
		}
		return nil, err
	}
	d, err := newDriver(opts, order)
	if err != nil {
		return nil, err
	}
	return &Sync{opts: d.opts, c: d.c}, nil
}

type errUnsupportedSync string

func (e errUnsupportedSync) Error() string {
	return "allocator " + string(e) + " has no synchronous form"
}

// Run performs one allocation run at now and returns its duration
// (wall time, without delivering the offers); while paused it does
// nothing and returns 0.
func (s *Sync) Run(now time.Time) time.Duration {
	if s.c.paused {
		return 0
	}
	runtime.LockOSThread()
	cpu0 := cputime.Thread()
	start := time.Now()
	res := s.c.allocate(now)
	d := time.Since(start)
	s.lastCPU = cputime.Thread() - cpu0
	runtime.UnlockOSThread()
	s.c.metrics.record(float64(d.Nanoseconds()) / 1e6)
	deliver(s.opts, res)
	return d
}

// LastRunCPU is the CPU time the last Run's allocation took on its thread
// (0 where not measured: outside Linux). On a machine shared with other
// work it is steadier than Run's wall time, which also counts waiting for
// a core; it does not count the garbage collector's background work.
func (s *Sync) LastRunCPU() time.Duration { return s.lastCPU }

func (s *Sync) now() time.Time { return s.opts.Clock.Now() }

// Start implements Allocator; it does nothing.
func (s *Sync) Start() {}

// Stop implements Allocator; it does nothing.
func (s *Sync) Stop() {}

// Allocate implements Allocator; runs happen only through Run.
func (s *Sync) Allocate() {}

// Pause implements Allocator: Run does nothing until Resume.
func (s *Sync) Pause() { s.c.paused = true }

// Resume implements Allocator.
func (s *Sync) Resume() { s.c.paused = false }

// AddFramework implements Allocator, applying the notification at once.
func (s *Sync) AddFramework(id string, info *mesos.FrameworkInfo, used map[string]resources.Resources, active bool, opts FrameworkOptions) {
	s.c.addFramework(id, info, used, active, opts)
}

// RemoveFramework implements Allocator, applying the notification at once.
func (s *Sync) RemoveFramework(id string) { s.c.removeFramework(id) }

// ActivateFramework implements Allocator, applying the notification at once.
func (s *Sync) ActivateFramework(id string) { s.c.activateFramework(id) }

// DeactivateFramework implements Allocator, applying the notification at once.
func (s *Sync) DeactivateFramework(id string) { s.c.deactivateFramework(id) }

// UpdateFramework implements Allocator, applying the notification at once.
func (s *Sync) UpdateFramework(id string, info *mesos.FrameworkInfo, opts FrameworkOptions) {
	s.c.updateFramework(id, info, opts)
}

// AddAgent implements Allocator, applying the notification at once.
func (s *Sync) AddAgent(id string, info *mesos.AgentInfo, total resources.Resources, used map[string]resources.Resources) {
	s.c.addAgent(id, info, total, used)
}

// RemoveAgent implements Allocator, applying the notification at once.
func (s *Sync) RemoveAgent(id string) { s.c.removeAgent(id) }

// UpdateAgent implements Allocator, applying the notification at once.
func (s *Sync) UpdateAgent(id string, info *mesos.AgentInfo, total resources.Resources) {
	s.c.updateAgent(id, info, total)
}

// UpdateOversubscribed implements Allocator, applying the notification at once.
func (s *Sync) UpdateOversubscribed(id string, r resources.Resources) {
	s.c.updateOversubscribed(id, r)
}

// ActivateAgent implements Allocator, applying the notification at once.
func (s *Sync) ActivateAgent(id string) { s.c.activateAgent(id) }

// DeactivateAgent implements Allocator, applying the notification at once.
func (s *Sync) DeactivateAgent(id string) { s.c.deactivateAgent(id) }

// RecoverResources implements Allocator, applying the notification at once.
func (s *Sync) RecoverResources(frameworkID, agentID string, r resources.Resources, filters *mesos.Filters) {
	s.c.recoverResources(frameworkID, agentID, r, filters, s.now())
}

// UpdateAllocation implements Allocator, applying the notification at once.
func (s *Sync) UpdateAllocation(frameworkID, agentID string, from, to resources.Resources) {
	s.c.updateAllocation(frameworkID, agentID, from, to)
}

// UpdateUnavailability implements Allocator, applying the notification at once.
func (s *Sync) UpdateUnavailability(agentID string, u *mesos.Unavailability) {
	s.c.updateUnavailability(agentID, u)
}

// UpdateInverseOffer implements Allocator, applying the notification at once.
func (s *Sync) UpdateInverseOffer(agentID, frameworkID string, filters *mesos.Filters) {
	s.c.updateInverseOffer(agentID, frameworkID, filters, s.now())
}

// SuppressOffers implements Allocator, applying the notification at once.
func (s *Sync) SuppressOffers(frameworkID string, roles []string) {
	s.c.suppressOffers(frameworkID, roles)
}

// RequestResources implements Allocator, applying the notification at once.
func (s *Sync) RequestResources(frameworkID string, requests []Request) {
	s.c.requestResources(frameworkID, requests)
}

// ReviveOffers implements Allocator, applying the notification at once.
func (s *Sync) ReviveOffers(frameworkID string, roles []string) {
	s.c.reviveOffers(frameworkID, roles)
}

// UpdateWeights implements Allocator, applying the notification at once.
func (s *Sync) UpdateWeights(w map[string]float64) { s.c.updateWeights(w) }

// UpdateQuota implements Allocator, applying the notification at once.
func (s *Sync) UpdateQuota(role string, q Quota) { s.c.updateQuota(role, q) }

// Explain implements Introspector.
func (s *Sync) Explain(frameworkID string) Explanation { return s.c.explain(frameworkID, s.now()) }

// Metrics implements Introspector.
func (s *Sync) Metrics() map[string]float64 { return s.c.metricsMap(0) }

// Timers implements Introspector.
func (s *Sync) Timers() map[string]timerstat.Stats { return s.c.timers() }

var (
	_ Allocator    = (*Sync)(nil)
	_ Introspector = (*Sync)(nil)
)
