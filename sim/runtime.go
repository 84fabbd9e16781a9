package sim

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/sim/internal/h2c"
)

// simRuntime is what the agents of one fleet share: the normalized
// configuration, the h2c clients, the dispatch shards, the poster pool and
// the counters.
type simRuntime struct {
	cfg   AgentConfig // normalized template
	res   []*mesos.Resource
	attrs []*mesos.Attribute
	over  []*mesos.Resource // revocable estimate sent after registering
	clk   clock.Clock
	log   *slog.Logger
	// clients each serve up to agentsPerClient agents (clientFor).
	clients []*http.Client
	conns   *connCounter

	shards []*shard
	posts  *fifo[postJob]

	ctx    context.Context // ends at Stop: aborts every stream and call
	cancel context.CancelFunc
	stop   chan struct{} // closed at Stop: posters exit
	wg     sync.WaitGroup
	// streams runs the agents' connection attempts (Agent.stream).
	streams workers

	counters   counters
	registered atomic.Int64 // agents currently registered
	changed    notifier     // registration changes
}

// agentsPerClient is how many agents share one HTTP client (transport).
// Go's HTTP/2 transport finds a connection for each request by walking
// all of its connections under one mutex, so one transport for a fleet of
// 40,000 agents (160 connections at the masters' 250 streams each) spent
// most of the emulation's CPU there; real agents each have their own.
const agentsPerClient = 1000

func newRuntime(cfg AgentConfig, agents, shards, posters int) (*simRuntime, error) {
	cfg, res, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	over, _ := cfg.oversubscribed() // normalize checked it
	conns := &connCounter{dial: cfg.Dial}
	if conns.dial == nil {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		conns.dial = d.DialContext
	}
	var clients []*http.Client
	for range max((agents+agentsPerClient-1)/agentsPerClient, 1) {
		clients = append(clients, newH2CClient(conns))
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt := &simRuntime{
		cfg: cfg, res: res, attrs: cfg.attributes(), over: over,
		clk: cfg.Clock, log: cfg.Logger,
		clients: clients, conns: conns,
		posts: newFIFO[postJob](),
		ctx:   ctx, cancel: cancel,
		stop: make(chan struct{}),
	}
	for range max(shards, 1) {
		sh := newShard(cfg.Clock)
		rt.shards = append(rt.shards, sh)
		go sh.run()
	}
	for range max(posters, 1) {
		rt.wg.Add(1)
		go rt.poster()
	}
	return rt, nil
}

// shutdown ends every stream, call, poster and shard, and closes the
// connections. The agents must have been stopped first.
func (rt *simRuntime) shutdown() {
	rt.cancel()
	close(rt.stop)
	rt.wg.Wait()
	for _, sh := range rt.shards {
		close(sh.stop)
		<-sh.done
	}
	rt.streams.stop() // no loop is left to start an attempt
	for _, c := range rt.clients {
		c.Transport.(*h2c.Transport).Close()
	}
}

// clientFor is the HTTP client of the agent with the given index.
func (rt *simRuntime) clientFor(index int) *http.Client {
	return rt.clients[index%len(rt.clients)]
}

// notifier wakes waiters when something they poll may have changed. The
// zero value is ready. A notify with nobody waiting costs a lock and
// nothing more: during a re-registration storm every agent notifies, and
// a new channel per notification was a few percent of the emulation's CPU.
type notifier struct {
	mu sync.Mutex
	ch chan struct{} // nil while nobody waits
}

// wait returns a channel closed at the next notify.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}

// waitFor blocks until cond holds, re-checking it on every notification
// and at least every poll interval (conditions that depend on the clock),
// or until ctx ends.
func waitFor(ctx context.Context, n *notifier, cond func() bool) error {
	const (
		poll = 200 * time.Millisecond
		// recheck bounds how often cond runs: conditions over the whole
		// fleet cost O(agents), and a re-registration storm changes
		// something thousands of times a second, so checking after each
		// change took a tenth of the emulation's CPU. Waiters that need
		// the time of an event read it from the agents, not from when
		// waitFor returns.
		recheck = 10 * time.Millisecond
	)
	t := time.NewTimer(poll)
	defer t.Stop()
	for {
		ch := n.wait()
		checked := time.Now()
		if cond() {
			return nil
		}
		t.Reset(poll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
			if d := recheck - time.Since(checked); d > 0 {
				t.Reset(d)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-t.C:
				}
			}
		case <-t.C:
		}
	}
}

// counters are fleet-wide event counts (atomic: bumped from the shards
// and posters, read by anyone).
type counters struct {
	subscribeAttempts atomic.Int64
	registrations     atomic.Int64
	disconnects       atomic.Int64
	staleEvents       atomic.Int64
	pings             atomic.Int64
	tasksLaunched     atomic.Int64
	tasksFinished     atomic.Int64
	tasksKilled       atomic.Int64
	tasksLost         atomic.Int64
	updatesSent       atomic.Int64
	updatesAcked      atomic.Int64
	callErrors        atomic.Int64
	shutdowns         atomic.Int64
}

// Stats are a fleet's (or a lone agent's) event counts since it started.
type Stats struct {
	// Registered is how many agents are registered right now.
	Registered int64
	// SubscribeAttempts counts SUBSCRIBE requests (first and re-).
	SubscribeAttempts int64
	// Registrations counts SUBSCRIBED events accepted (first and re-).
	Registrations int64
	// Disconnects counts lost or abandoned event streams.
	Disconnects int64
	// StaleEvents counts events dropped for a stale epoch.
	StaleEvents int64
	// Pings counts PINGs answered.
	Pings int64
	// TasksLaunched, TasksFinished, TasksKilled and TasksLost count fake
	// tasks started and ended (lost: TASK_LOST/DROPPED sent for a task
	// the agent does not know).
	TasksLaunched, TasksFinished, TasksKilled, TasksLost int64
	// UpdatesSent counts STATUS_UPDATE calls posted (retries included);
	// UpdatesAcked the acknowledgements that moved a stream on.
	UpdatesSent, UpdatesAcked int64
	// CallErrors counts calls the master refused or that failed.
	CallErrors int64
	// Shutdowns counts SHUTDOWN events (the master removed the agent).
	Shutdowns int64
	// Conns counts TCP connections to the masters.
	Conns ConnStats
}

func (rt *simRuntime) stats() Stats {
	c := &rt.counters
	return Stats{
		Registered:        rt.registered.Load(),
		SubscribeAttempts: c.subscribeAttempts.Load(),
		Registrations:     c.registrations.Load(),
		Disconnects:       c.disconnects.Load(),
		StaleEvents:       c.staleEvents.Load(),
		Pings:             c.pings.Load(),
		TasksLaunched:     c.tasksLaunched.Load(),
		TasksFinished:     c.tasksFinished.Load(),
		TasksKilled:       c.tasksKilled.Load(),
		TasksLost:         c.tasksLost.Load(),
		UpdatesSent:       c.updatesSent.Load(),
		UpdatesAcked:      c.updatesAcked.Load(),
		CallErrors:        c.callErrors.Load(),
		Shutdowns:         c.shutdowns.Load(),
		Conns:             rt.conns.stats(),
	}
}
