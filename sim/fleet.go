package sim

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"mezzo/api/mesos"
)

// FleetConfig configures a Fleet.
type FleetConfig struct {
	// Agents is how many agents to emulate (at least 1).
	Agents int
	// Agent is the template for every agent; each gets Hostname
	// "sim-<index>" (or "<Hostname>-<index>" if set).
	Agent AgentConfig
	// FirstIndex numbers the agents from this index (so that several
	// fleets, e.g. in several processes, have distinct hostnames).
	FirstIndex int
	// Shards is how many event loops serve the agents (default
	// 4 × GOMAXPROCS).
	Shards int
	// Posters is how many goroutines post the agents' calls (default 64).
	Posters int
	// StartRate, if positive, spreads Start over time: at most this many
	// SUBSCRIBEs per second (a cold cluster whose agents boot together
	// is the default: all at once).
	StartRate float64
	// Vary, if set, gives the agent of each index (FirstIndex + i) its
	// own resources or attributes in place of the template's: a
	// heterogeneous cluster, agents holding different data blocks, or
	// static partitions reserved to different roles. Zero fields keep
	// the template's.
	Vary func(index int) AgentVariant
}

// AgentVariant is what one agent of a fleet has instead of the template.
type AgentVariant struct {
	// Resources in Mesos text form ("cpus(batch):4;mem(batch):8192").
	Resources string
	// Attributes, name → text value, replace the template's.
	Attributes map[string]string
	// Tasks the agent is already running when it starts.
	Tasks []RunningTask
}

// RunningTask is a fake task an agent runs from the start, as if the
// cluster had been busy before the emulation began: the agent reports it
// when it registers (as every agent does when it re-registers with a new
// master after a failover) and finishes it Duration after registering.
// Its framework must be subscribed already, or the master ignores it.
// A fleet of busy agents is in its steady state at once, without
// launching every task first.
type RunningTask struct {
	// Framework is the task's framework; its id is required.
	Framework *mesos.FrameworkInfo
	TaskID    string
	// Resources are the task's; they are shared, not copied: do not
	// change them.
	Resources []*mesos.Resource
	// Duration is how long the task runs on after the agent registers
	// (Never: until killed).
	Duration time.Duration
}

// Fleet is many emulated agents in one process. They share one HTTP/2
// transport (so a few TCP connections carry every stream), a few dispatch
// loops and a poster pool.
type Fleet struct {
	rt     *simRuntime
	agents []*Agent
	rate   float64

	mu      sync.Mutex
	started bool
	stopped bool
	startWG sync.WaitGroup
	stopC   chan struct{}
}

// NewFleet builds a fleet; Start registers it.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	if cfg.Agents < 1 {
		return nil, fmt.Errorf("sim: 'Agents' must be at least 1, got %d", cfg.Agents)
	}
	if cfg.FirstIndex < 0 {
		return nil, fmt.Errorf("sim: 'FirstIndex' must not be negative, got %d", cfg.FirstIndex)
	}
	if cfg.StartRate < 0 {
		return nil, fmt.Errorf("sim: 'StartRate' must not be negative, got %g", cfg.StartRate)
	}
	shards := cfg.Shards
	if shards <= 0 {
		shards = 4 * runtime.GOMAXPROCS(0)
	}
	shards = min(shards, cfg.Agents)
	posters := cfg.Posters
	if posters <= 0 {
		posters = 64
	}
	rt, err := newRuntime(cfg.Agent, cfg.Agents, shards, posters)
	if err != nil {
		return nil, err
	}
	f := &Fleet{rt: rt, rate: cfg.StartRate, stopC: make(chan struct{})}
	f.agents = make([]*Agent, cfg.Agents)
	for i := range f.agents {
		a := newAgent(rt, rt.shards[i%len(rt.shards)], cfg.FirstIndex+i)
		if cfg.Vary != nil {
			if err := a.vary(cfg.Vary(a.index)); err != nil {
				rt.shutdown()
				return nil, err
			}
		}
		f.agents[i] = a
	}
	return f, nil
}

// Start starts every agent (at StartRate, if set, from a background
// goroutine). Calling it again does nothing.
func (f *Fleet) Start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started || f.stopped {
		return
	}
	f.started = true
	if f.rate <= 0 {
		for _, a := range f.agents {
			a.Start()
		}
		return
	}
	f.startWG.Add(1)
	go func() {
		defer f.startWG.Done()
		clk := f.rt.clk
		begin := clk.Now()
		for i, a := range f.agents {
			due := begin.Add(time.Duration(float64(i) / f.rate * float64(time.Second)))
			if d := due.Sub(clk.Now()); d > 0 {
				t := clk.NewTimer(d)
				select {
				case <-t.C():
				case <-f.stopC:
					t.Stop()
					return
				}
			}
			a.Start()
		}
	}()
}

// Stop disconnects every agent (as if their hosts crashed), and releases
// the fleet's goroutines and connections. A stopped fleet cannot restart.
func (f *Fleet) Stop() {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return
	}
	f.stopped = true
	close(f.stopC)
	f.mu.Unlock()
	f.startWG.Wait()
	var done sync.WaitGroup
	for _, sh := range f.rt.shards {
		done.Add(1)
		sh.post(func() {
			defer done.Done()
			for _, a := range f.agents {
				if a.sh == sh {
					a.halt()
				}
			}
		})
	}
	done.Wait()
	f.rt.shutdown()
}

// Agents returns the fleet's agents (index order).
func (f *Fleet) Agents() []*Agent { return f.agents }

// Len is the number of agents.
func (f *Fleet) Len() int { return len(f.agents) }

// Registered is how many agents are registered right now.
func (f *Fleet) Registered() int { return int(f.rt.registered.Load()) }

// Stats returns the fleet's counters.
func (f *Fleet) Stats() Stats { return f.rt.stats() }

// Conns counts the fleet's TCP connections.
func (f *Fleet) Conns() ConnStats { return f.rt.conns.stats() }

// HTTPClient is the fleet's h2c client (frameworks may share it).
func (f *Fleet) HTTPClient() *http.Client { return f.rt.clients[0] }

// WaitRegistered waits until at least n agents are registered.
func (f *Fleet) WaitRegistered(ctx context.Context, n int) error {
	err := waitFor(ctx, &f.rt.changed, func() bool { return f.Registered() >= n })
	if err != nil {
		return fmt.Errorf("sim: %d of %d agents registered: %w", f.Registered(), n, err)
	}
	return nil
}

// WaitAllRegisteredSince waits until every agent is registered with a
// registration at or after since (a re-registration after a failover that
// began at since), and returns the latest of those registration times:
// last.Sub(since) is the time until the whole fleet was back.
func (f *Fleet) WaitAllRegisteredSince(ctx context.Context, since time.Time) (last time.Time, err error) {
	back := func(a *Agent) bool { return a.Registered() && !a.RegisteredAt().Before(since) }
	pending := func() int {
		n := 0
		for _, a := range f.agents {
			if !back(a) {
				n++
			}
		}
		return n
	}
	// Agents before next were back at the last check. Most checks look
	// at a few agents past it, not the whole fleet: the checks run while
	// the masters being measured share the machine. Only when the cursor
	// reaches the end does a full pass confirm that no agent fell off
	// again meanwhile.
	next := 0
	err = waitFor(ctx, &f.rt.changed, func() bool {
		for next < len(f.agents) && back(f.agents[next]) {
			next++
		}
		if next < len(f.agents) {
			return false
		}
		for i, a := range f.agents {
			if !back(a) {
				next = i
				return false
			}
		}
		return true
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("sim: %d of %d agents not re-registered since %s: %w",
			pending(), len(f.agents), since.Format(time.RFC3339Nano), err)
	}
	for _, a := range f.agents {
		if t := a.RegisteredAt(); t.After(last) {
			last = t
		}
	}
	return last, nil
}

// RegistrationTimes returns each agent's latest registration time (zero
// if it never registered), by index.
func (f *Fleet) RegistrationTimes() []time.Time {
	out := make([]time.Time, len(f.agents))
	for i, a := range f.agents {
		out[i] = a.RegisteredAt()
	}
	return out
}
