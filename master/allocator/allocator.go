// Package allocator decides how much of the cluster each framework is
// offered. The master tells it what exists (agents, frameworks, what is in use)
// and it answers, on its own schedule, with offers through a callback.
//
// Threading: an Allocator runs its own goroutine (Start). Every method may be
// called from any goroutine (in practice the master's event loop); it only
// enqueues the notification and returns. Callbacks (Options.Offer,
// Options.Rescind) are invoked from the allocator's goroutine and must not
// block: the master turns them into events on its own loop.
//
// Resource accounting: resources passed to Options.Offer count as allocated
// to that framework (offered plus used count toward its share) until the
// master hands them back with RecoverResources (declined, offer rescinded,
// task finished) or the framework or agent is removed.
//
// This package never imports the master (DESIGN.md import rules).
package allocator

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/resources"
)

// Allocator is the master's view of an allocation policy.
type Allocator interface {
	// Start runs the allocation loop until Stop. Offers are made every
	// Options.Interval and soon after any change that may free resources;
	// changes arriving close together trigger one run (coalescing).
	Start()
	// Stop ends the loop; no callback is made after Stop returns.
	Stop()

	// AddFramework registers a framework. used maps agent ID to what the
	// framework already runs there (after a failover), counted toward its share.
	// info.offer_filters and opts.OfferConstraints decide, per role, which
	// agents and how much it may be offered.
	AddFramework(id string, info *mesos.FrameworkInfo, used map[string]resources.Resources, active bool, opts FrameworkOptions)
	RemoveFramework(id string)
	ActivateFramework(id string)
	DeactivateFramework(id string)
	// UpdateFramework replaces the framework's info (roles, capabilities,
	// offer filters) and its options (suppressed roles, offer constraints).
	UpdateFramework(id string, info *mesos.FrameworkInfo, opts FrameworkOptions)

	// AddAgent registers an agent with its total (non-revocable) resources.
	// used maps framework ID to what that framework runs there.
	AddAgent(id string, info *mesos.AgentInfo, total resources.Resources, used map[string]resources.Resources)
	RemoveAgent(id string)
	// UpdateAgent replaces the agent's total (and its info, unless info is
	// nil). Resources not currently allocated adapt immediately.
	// Allocations the new total no longer holds (an offer made before the
	// change, still on its way to the master; an agent re-registering
	// smaller) stop counting, and the next run asks Options.Rescind to
	// rescind the framework's offers on the agent; handing them back later
	// in the old form frees only what is still held. This is also how the master
	// reports an operator's RESERVE, UNRESERVE, CREATE or DESTROY on
	// unallocated resources (after rescinding offers holding them): the
	// agent's total is now total, and the converted resources are offered
	// by their new reservation from the next run.
	UpdateAgent(id string, info *mesos.AgentInfo, total resources.Resources)
	// UpdateOversubscribed sets the agent's revocable estimate (revocable
	// resources only), offered in the revocable stage.
	UpdateOversubscribed(id string, oversubscribed resources.Resources)
	ActivateAgent(id string)
	DeactivateAgent(id string)

	// RecoverResources returns resources allocated to a framework on an
	// agent (declined, unused part of an ACCEPT, rescinded offer, finished
	// task). A non-nil filter with positive refuse_seconds keeps those
	// resources from being offered to that framework on that agent for
	// that long.
	RecoverResources(frameworkID, agentID string, r resources.Resources, filters *mesos.Filters)

	// UpdateAllocation converts part of what a framework is allocated on
	// an agent, as an accepted offer operation does (RESERVE, UNRESERVE,
	// CREATE, DESTROY, GROW_VOLUME, SHRINK_VOLUME): from, which the
	// framework holds there (with allocation info naming the role for
	// MULTI_ROLE frameworks, as in RecoverResources; without it, the role
	// holding it), becomes to. The agent's total changes the same way.
	// Nothing is recovered or re-offered: the framework keeps to until it
	// hands it back with RecoverResources. from and to must hold the same
	// quantities (an operation converts, never creates or destroys); an
	// update that does not (or names resources the framework does not
	// hold there) changes nothing and is counted in the metric
	// allocator/mesos/allocation_updates_rejected. Several operations of
	// one ACCEPT may be passed one call each, in order.
	//
	// One exception, as in Mesos: an empty from with to made of shared
	// resources adds copies of them to the framework's allocation (tasks
	// of one ACCEPT used a shared volume more times than its offers held
	// it). Each must be in the agent's total and already held by the
	// framework there; each copy comes back with RecoverResources when
	// its task ends.
	UpdateAllocation(frameworkID, agentID string, from, to resources.Resources)

	// UpdateUnavailability sets the unavailability of the agent's machine
	// (it is in the maintenance schedule; nil: it left it). While set,
	// every allocation run sends each active framework holding resources
	// on the agent an inverse offer through Options.InverseOffer, unless
	// it has one outstanding or refused one recently. A change forgets the
	// outstanding inverse offers (the master rescinds them).
	UpdateUnavailability(agentID string, u *mesos.Unavailability)
	// UpdateInverseOffer reports that the framework's inverse offer for
	// the agent is no longer outstanding: answered (filters non-nil: the
	// framework's ACCEPT/DECLINE_INVERSE_OFFERS filters; positive
	// refuse_seconds hold the next inverse offer back that long), or
	// rescinded (nil).
	UpdateInverseOffer(agentID, frameworkID string, filters *mesos.Filters)

	// RequestResources records what the framework asked for with a
	// REQUEST call, replacing what it asked for before (none: it asks
	// for nothing). Like Mesos's hierarchical allocator, offers do not
	// change; a request that no agent the framework may use could ever
	// hold is what Explain reports as ReasonNoAgentFits, before the
	// framework has declined anything.
	RequestResources(frameworkID string, requests []Request)

	// SuppressOffers stops offers to the framework for roles (all its roles
	// if empty); ReviveOffers resumes them and clears its filters.
	SuppressOffers(frameworkID string, roles []string)
	ReviveOffers(frameworkID string, roles []string)

	// UpdateWeights sets role weights (missing roles weigh 1).
	UpdateWeights(weights map[string]float64)
	// UpdateQuota sets (or with a zero Quota, clears) a role's quota.
	UpdateQuota(role string, q Quota)

	// Allocate requests an allocation run soon (coalesced with others).
	Allocate()

	// Pause stops allocation runs, periodic and requested, until Resume;
	// notifications are still applied. A newly elected master pauses
	// while the agents of its registry re-register, so that it does not
	// offer a partial cluster (Mesos's allocator recovery). Resume
	// requests a run.
	Pause()
	Resume()
}

// Request is one element of a framework's REQUEST call: resources it
// needs on one agent (AgentID, or any agent if empty) for Role.
type Request struct {
	Role      string
	AgentID   string
	Resources resources.Resources
}

// FrameworkOptions are what a framework's SUBSCRIBE or UPDATE_FRAMEWORK
// says besides its FrameworkInfo (Mesos's allocator::FrameworkOptions).
type FrameworkOptions struct {
	// SuppressedRoles get no offers until revived.
	SuppressedRoles []string
	// OfferConstraints keep agents from being offered to the framework's
	// roles (nil: none); built and validated by NewOfferConstraints.
	OfferConstraints *OfferConstraints
}

// Quota is a role's guarantee (resources it is offered before fair
// sharing) and limit (resources it is never allocated beyond), both as
// scalar quantities by resource name.
type Quota struct {
	Guarantees map[string]float64
	Limits     map[string]float64
}

// Offers is what one allocation gives one framework: per role, per agent.
type Offers map[string]map[string]resources.Resources

// Options configure an Allocator. Offer is required.
type Options struct {
	// Offer delivers resources allocated to a framework. Must not block.
	Offer func(frameworkID string, offers Offers)
	// Rescind asks the master to rescind outstanding offers of the
	// framework on the agent until at least r is no longer offered
	// (revocable resources whose estimate shrank; resources an offer may
	// still hold in a form the agent's total no longer has, see
	// UpdateAgent). May be nil.
	Rescind func(frameworkID, agentID string, r resources.Resources)

	// InverseOffer delivers inverse offers to a framework: by agent ID,
	// the unavailability of the agent's machine (UpdateUnavailability).
	// Must not block. May be nil (no inverse offers are made).
	InverseOffer func(frameworkID string, offers map[string]*mesos.Unavailability)

	// Revoke, if set, turns on the revocation policy (paper §3.3.3, off by
	// default): when a framework in a role below its quota guarantee wants
	// offers and nothing is free, the allocator asks the master to kill
	// tasks of frameworks in roles above their fair share and guarantee,
	// using r on the agent. May be nil.
	Revoke func(frameworkID, agentID string, r resources.Resources)
	// OfferIdleReservations adds reserved-but-unallocated resources to the
	// revocable stage (oversubscription for reservations, Option 1):
	// they are offered as revocable, unreserved resources to frameworks
	// with the REVOCABLE_RESOURCES capability and rescinded when their
	// owner's role is allocated them.
	OfferIdleReservations bool

	// Interval between periodic allocation runs (Mesos --allocation_interval, default 1s).
	Interval time.Duration
	// MinAllocatable: an agent's free resources are offered only if they
	// contain at least one of these quantities (--min_allocatable_resources,
	// default cpus:0.01|mem:32). Nil means the default.
	MinAllocatable []map[string]float64
	// Weights are initial role weights (--weights).
	Weights map[string]float64
	// Clock drives the interval and filter expiry. Nil means clock.Real.
	Clock clock.Clock
}

// DefaultMinAllocatable is Mesos's --min_allocatable_resources default.
var DefaultMinAllocatable = []map[string]float64{{"cpus": 0.01}, {"mem": 32}}

// Factory builds an allocator.
type Factory func(Options) (Allocator, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Factory{}
)

// Register makes an allocator available under name (for --allocator).
// It panics on a duplicate name: registration happens in init functions.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("allocator: duplicate registration of " + name)
	}
	registry[name] = f
}

// New builds the allocator registered under name.
func New(name string, opts Options) (Allocator, error) {
	registryMu.Lock()
	f, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown allocator %q (known: %v)", name, Names())
	}
	return f(opts)
}

// Names lists the registered allocators, sorted.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
