package oversub

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// ResourceEstimator says how much may be oversubscribed on the agent.
//
// Ownership and threading: one goroutine of the agent (not its event loop)
// owns an estimator and calls Oversubscribable every
// Config.OversubscribedResourcesInterval; calls never overlap. The estimator
// pulls usage from the UsageSource it was built with and may keep history
// between calls; it never sleeps and never reads the clock.
type ResourceEstimator interface {
	// Oversubscribable returns the revocable resources that may be offered
	// now, beyond the revocable resources containers already hold (Mesos's
	// contract: the agent adds those before telling the master). Every
	// returned resource is revocable and unreserved. A new estimate replaces
	// every earlier one. An error means "no estimate this round"; the agent
	// keeps its last one.
	Oversubscribable(ctx context.Context, now time.Time) (resources.Resources, error)
}

// EstimatorFactory builds an estimator from a validated Config.
type EstimatorFactory func(cfg Config, usage UsageSource) (ResourceEstimator, error)

var (
	estimatorMu sync.Mutex
	estimators  = map[string]EstimatorFactory{}
	// estimatorAliases maps Mesos's module names to ours.
	estimatorAliases = map[string]string{"org_apache_mesos_FixedResourceEstimator": "fixed"}
)

// RegisterEstimator makes an estimator available under name (for
// --resource_estimator). It panics on a duplicate: registration happens in
// init functions.
func RegisterEstimator(name string, f EstimatorFactory) {
	estimatorMu.Lock()
	defer estimatorMu.Unlock()
	if _, dup := estimators[name]; dup {
		panic("oversub: duplicate estimator " + name)
	}
	estimators[name] = f
}

func canonicalEstimator(name string) string {
	if n, ok := estimatorAliases[name]; ok {
		return n
	}
	return name
}

func lookupEstimator(name string) (EstimatorFactory, bool) {
	estimatorMu.Lock()
	defer estimatorMu.Unlock()
	f, ok := estimators[canonicalEstimator(name)]
	return f, ok
}

// EstimatorNames lists the registered estimators, sorted.
func EstimatorNames() []string {
	estimatorMu.Lock()
	defer estimatorMu.Unlock()
	names := make([]string, 0, len(estimators))
	for n := range estimators {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewEstimator validates cfg and builds the estimator it names.
func NewEstimator(cfg Config, usage UsageSource) (ResourceEstimator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f, _ := lookupEstimator(cfg.ResourceEstimator)
	return f(cfg, usage)
}

func init() {
	RegisterEstimator("noop", func(Config, UsageSource) (ResourceEstimator, error) { return noopEstimator{}, nil })
	RegisterEstimator("fixed", newFixed)
	RegisterEstimator("slack", newSlack)
}

var (
	_ ResourceEstimator = noopEstimator{}
	_ ResourceEstimator = (*fixedEstimator)(nil)
	_ ResourceEstimator = (*slackEstimator)(nil)
)

// noopEstimator always estimates nothing: oversubscription is off.
type noopEstimator struct{}

func (noopEstimator) Oversubscribable(context.Context, time.Time) (resources.Resources, error) {
	return resources.Resources{}, nil
}

// fixedEstimator is Mesos's fixed estimator: it lends a configured amount,
// whatever the usage, less what revocable containers already hold.
type fixedEstimator struct {
	total resources.Resources
	usage UsageSource
}

func newFixed(cfg Config, usage UsageSource) (ResourceEstimator, error) {
	if usage == nil {
		return nil, fmt.Errorf("fixed estimator: no usage source")
	}
	return &fixedEstimator{total: cfg.fixed, usage: usage}, nil
}

func (f *fixedEstimator) Oversubscribable(ctx context.Context, _ time.Time) (resources.Resources, error) {
	s, err := f.usage.Usage(ctx)
	if err != nil {
		return resources.Resources{}, err
	}
	var held resources.Resources
	for _, c := range s.Containers {
		held = held.Add(c.Allocated.Throttleable())
	}
	// Subtract clamps at zero per resource: holding more than the fixed
	// amount (after a flag change) lends nothing rather than a negative.
	return f.total.Subtract(unallocated(held)), nil
}

// makeRevocable marks every resource of r revocable and throttle-able: an
// estimate is usage slack, which QoS controllers may throttle or evict
// (RevocableInfo.throttle_info), never a lent reservation.
func makeRevocable(r resources.Resources) (resources.Resources, error) {
	ps := r.Proto()
	for _, p := range ps {
		p.Revocable = throttleable()
	}
	return resources.FromProto(ps)
}

// throttleable is the RevocableInfo of estimator slack.
func throttleable() *mesos.Resource_RevocableInfo {
	return &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
}

// unallocated strips allocation info so containers' resources compare with
// the agent's unallocated totals.
func unallocated(r resources.Resources) resources.Resources { return r.WithoutAllocationInfo() }
