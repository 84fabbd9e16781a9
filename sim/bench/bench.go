// Package bench runs scale experiments on emulated agents and frameworks
// (package sim) against real masters: Scale measures how fast N agents
// and F frameworks register, and what they cost the process holding them;
// Failover measures the time from a leader's death until every agent and
// framework is back with the new leader. cmd/mezzo wires them as
// `mezzo bench cluster` and `mezzo bench failover`; the masters are the
// caller's (started processes or a running cluster).
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"mezzo/sim"
)

// Config describes the emulated cluster.
type Config struct {
	// Agents to emulate (at least 1).
	Agents int
	// Frameworks to emulate (0 or more); each subscribes and holds its
	// subscription, launching TasksPerFramework fake tasks.
	Frameworks int
	// Masters are the masters' "host:port" addresses.
	Masters []string
	// AgentResources in Mesos text form (default sim.DefaultResources).
	AgentResources string
	// StartRate spreads agent starts (SUBSCRIBEs per second; 0: all at
	// once, like a cold cluster whose hosts boot together).
	StartRate float64
	// TasksPerFramework fake tasks (default 0) each running TaskDuration
	// (default: until the end of the run).
	TasksPerFramework int
	TaskDuration      time.Duration
	// TaskResources is each task's resources (default
	// sim.DefaultTaskResources).
	TaskResources string
	// FirstIndex numbers the agents' hostnames (sim-<FirstIndex+i>).
	FirstIndex int
	// Hold keeps the registered cluster running this long before the
	// measurement (steady state: pings, offers, declines), reporting
	// disconnections meanwhile.
	Hold time.Duration
	// Timeout bounds each waiting phase (default 10 min).
	Timeout time.Duration
	// RegistrationBackoff for the agents (default sim's, 1 s as Mesos).
	RegistrationBackoff time.Duration
	// Logf receives progress lines (default: discarded).
	Logf func(format string, args ...any)
	// OnRecovered, if set, is called by Failover the moment everyone is
	// back, before it measures and stops the emulation (whose costs would
	// otherwise blur what the recovery cost).
	OnRecovered func()

	// suppressed subscribes the frameworks with their role suppressed
	// (Launch releases them together).
	suppressed bool
}

func (c Config) normalize() (Config, error) {
	if c.Agents < 1 {
		return c, fmt.Errorf("bench: 'Agents' must be at least 1, got %d", c.Agents)
	}
	if c.Frameworks < 0 || c.TasksPerFramework < 0 {
		return c, errors.New("bench: 'Frameworks' and 'TasksPerFramework' must not be negative")
	}
	if len(c.Masters) == 0 {
		return c, errors.New("bench: 'Masters' must name at least one master")
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.TaskDuration == 0 {
		c.TaskDuration = sim.Never
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c, nil
}

// Result is what Scale measured.
type Result struct {
	Agents     int `json:"agents"`
	Frameworks int `json:"frameworks"`
	// RegisterSeconds is from the fleet's start until every agent was
	// registered; AgentsPerSecond is Agents over it.
	RegisterSeconds float64 `json:"register_seconds"`
	AgentsPerSecond float64 `json:"agents_per_second"`
	// Registration latency quantiles (seconds from the fleet's start to
	// each agent's SUBSCRIBED).
	RegisterP50 float64 `json:"register_p50_seconds"`
	RegisterP90 float64 `json:"register_p90_seconds"`
	RegisterP99 float64 `json:"register_p99_seconds"`
	// FrameworksSeconds is from the frameworks' start until all were
	// subscribed (after the agents registered).
	FrameworksSeconds float64 `json:"frameworks_seconds"`
	// SubscribeAttempts counts agent SUBSCRIBEs (retries included).
	SubscribeAttempts int64 `json:"subscribe_attempts"`
	// Disconnects counts agent streams lost after registration, and
	// Pings the master's pings answered, over the whole run.
	Disconnects int64 `json:"disconnects"`
	Pings       int64 `json:"pings"`
	// Connections open to the masters and dialed in all.
	Connections int64   `json:"tcp_connections"`
	Dials       int64   `json:"tcp_dials"`
	Process     Process `json:"process"`
	// Master is the leading master's /metrics/snapshot after the run
	// (allocator timings, registration counters, ...).
	Master map[string]float64 `json:"master_metrics,omitempty"`
}

// Process is what the emulation cost this process.
type Process struct {
	Goroutines    int    `json:"goroutines"`
	HeapBytes     uint64 `json:"heap_inuse_bytes"`
	StackBytes    uint64 `json:"stack_inuse_bytes"`
	SysBytes      uint64 `json:"sys_bytes"`
	RSSBytes      uint64 `json:"rss_bytes"`
	BytesPerAgent uint64 `json:"bytes_per_agent"`
	OpenFDs       int    `json:"open_fds"`
	FDLimit       uint64 `json:"fd_limit"`
}

// cluster is a running emulation.
type cluster struct {
	cfg        Config
	fleet      *sim.Fleet
	frameworks []*sim.Framework
	base       runtime.MemStats
}

// start registers the fleet, then subscribes the frameworks, filling in
// the registration part of res.
func start(ctx context.Context, cfg Config, res *Result) (*cluster, error) {
	c := &cluster{cfg: cfg}
	runtime.GC()
	runtime.ReadMemStats(&c.base)
	fleet, err := sim.NewFleet(sim.FleetConfig{
		Agents:     cfg.Agents,
		FirstIndex: cfg.FirstIndex,
		StartRate:  cfg.StartRate,
		Agent: sim.AgentConfig{
			Masters:             cfg.Masters,
			Resources:           cfg.AgentResources,
			RegistrationBackoff: cfg.RegistrationBackoff,
		},
	})
	if err != nil {
		return nil, err
	}
	c.fleet = fleet
	t0 := time.Now()
	fleet.Start()
	wctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	progress := startProgress(cfg.Logf, "registered", cfg.Agents, fleet.Registered)
	err = fleet.WaitRegistered(wctx, cfg.Agents)
	progress()
	if err != nil {
		c.stop()
		return nil, err
	}
	res.Agents = cfg.Agents
	res.RegisterSeconds = time.Since(t0).Seconds()
	res.AgentsPerSecond = float64(cfg.Agents) / res.RegisterSeconds
	lat := make([]float64, 0, cfg.Agents)
	for _, at := range fleet.RegistrationTimes() {
		lat = append(lat, at.Sub(t0).Seconds())
	}
	res.RegisterP50, res.RegisterP90, res.RegisterP99 = quantile(lat, 0.5), quantile(lat, 0.9), quantile(lat, 0.99)
	cfg.Logf("%d agents registered in %.2fs (%.0f/s)", cfg.Agents, res.RegisterSeconds, res.AgentsPerSecond)

	t1 := time.Now()
	fws, err := startFrameworks(wctx, cfg)
	c.frameworks = fws
	if err != nil {
		c.stop()
		return nil, err
	}
	res.Frameworks = cfg.Frameworks
	res.FrameworksSeconds = time.Since(t1).Seconds()
	if cfg.Frameworks > 0 {
		cfg.Logf("%d frameworks subscribed in %.2fs", cfg.Frameworks, res.FrameworksSeconds)
	}
	return c, nil
}

// startFrameworks subscribes cfg.Frameworks frameworks, a few at a time
// (schedulers of a cluster start independently, not one after another).
func startFrameworks(ctx context.Context, cfg Config) ([]*sim.Framework, error) {
	cfgs := make([]sim.FrameworkConfig, cfg.Frameworks)
	for i := range cfgs {
		// HTTP/1.1, as most Mesos frameworks speak, with a connection pool
		// of its own as a scheduler process has: one pool for all of them
		// kept fewer idle connections than their concurrent calls, so
		// connections were closed and dialed again all the time (both
		// ends paid for it).
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sim.FrameworkMaxCalls + 1}}
		cfgs[i] = sim.FrameworkConfig{
			Masters:         cfg.Masters,
			Name:            "sim-framework-" + strconv.Itoa(i),
			Tasks:           cfg.TasksPerFramework,
			TaskDuration:    cfg.TaskDuration,
			TaskResources:   cfg.TaskResources,
			StartSuppressed: cfg.suppressed,
			HTTPClient:      client,
		}
	}
	return sim.StartFrameworks(ctx, cfgs, 16)
}

func (c *cluster) stop() {
	for _, fw := range c.frameworks {
		fw.Stop()
	}
	if c.fleet != nil {
		c.fleet.Stop()
	}
}

// measure fills the process and master parts of res.
func (c *cluster) measure(ctx context.Context, res *Result) {
	st := c.fleet.Stats()
	res.SubscribeAttempts = st.SubscribeAttempts
	res.Disconnects, res.Pings = st.Disconnects, st.Pings
	res.Connections, res.Dials = st.Conns.Open, st.Conns.Dialed
	res.Process = processStats(c.base, c.cfg.Agents)
	if m, err := masterMetrics(ctx, c.cfg.Masters); err == nil {
		res.Master = m
	} else {
		c.cfg.Logf("reading the master's metrics: %v", err)
	}
}

// Scale registers cfg.Agents emulated agents and cfg.Frameworks
// frameworks with the masters and reports registration throughput, the
// cost to this process and the master's metrics. The agents and
// frameworks are stopped (not torn down) before it returns.
func Scale(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	c, err := start(ctx, cfg, res)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if err := c.hold(ctx); err != nil {
		return nil, err
	}
	c.measure(ctx, res)
	return res, nil
}

// hold runs the cluster for cfg.Hold, logging its state.
func (c *cluster) hold(ctx context.Context) error {
	if c.cfg.Hold <= 0 {
		return nil
	}
	t := time.NewTimer(c.cfg.Hold)
	defer t.Stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case <-tick.C:
			st := c.fleet.Stats()
			c.cfg.Logf("holding: %d registered, %d disconnects, %d pings, %d subscribes", st.Registered, st.Disconnects, st.Pings, st.SubscribeAttempts)
		}
	}
}

// FailoverResult is what Failover measured.
type FailoverResult struct {
	Result
	// AgentsSeconds is from the kill until every agent re-registered;
	// FrameworksSeconds (failover) until every framework re-subscribed;
	// Seconds the larger: the time to recover.
	AgentsSeconds          float64 `json:"agents_reregistered_seconds"`
	FrameworksResubSeconds float64 `json:"frameworks_resubscribed_seconds"`
	Seconds                float64 `json:"recovery_seconds"`
	// Re-registration delay quantiles, seconds after the kill.
	ReregisterP50 float64 `json:"reregister_p50_seconds"`
	ReregisterP99 float64 `json:"reregister_p99_seconds"`
	// ReregisterAttempts counts SUBSCRIBEs sent after the kill.
	ReregisterAttempts int64 `json:"reregister_attempts"`
}

// Failover registers the emulated cluster, then calls kill (which ends
// the leading master: SIGKILL a process, and start a replacement if
// there is no standby) and measures the time from kill's call until
// every agent and framework is registered again.
func Failover(ctx context.Context, cfg Config, kill func(context.Context) error) (*FailoverResult, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if kill == nil {
		return nil, errors.New("bench: Failover needs a kill function")
	}
	res := &FailoverResult{}
	c, err := start(ctx, cfg, &res.Result)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if err := c.hold(ctx); err != nil {
		return nil, err
	}
	before := c.fleet.Stats().SubscribeAttempts
	killedAt := time.Now()
	cfg.Logf("killing the leading master")
	if err := kill(ctx); err != nil {
		return nil, fmt.Errorf("bench: kill: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	progress := startProgress(cfg.Logf, "re-registered", cfg.Agents, func() int {
		n := 0
		for _, a := range c.fleet.Agents() {
			if a.Registered() && !a.RegisteredAt().Before(killedAt) {
				n++
			}
		}
		return n
	})
	last, err := c.fleet.WaitAllRegisteredSince(wctx, killedAt)
	progress()
	if err != nil {
		return nil, err
	}
	res.AgentsSeconds = last.Sub(killedAt).Seconds()
	lat := make([]float64, 0, cfg.Agents)
	for _, at := range c.fleet.RegistrationTimes() {
		lat = append(lat, at.Sub(killedAt).Seconds())
	}
	res.ReregisterP50, res.ReregisterP99 = quantile(lat, 0.5), quantile(lat, 0.99)
	for i, fw := range c.frameworks {
		at, err := fw.WaitSubscribedSince(wctx, killedAt)
		if err != nil {
			return nil, fmt.Errorf("bench: framework %d did not re-subscribe: %w", i, err)
		}
		res.FrameworksResubSeconds = max(res.FrameworksResubSeconds, at.Sub(killedAt).Seconds())
	}
	if cfg.OnRecovered != nil {
		cfg.OnRecovered()
	}
	res.Seconds = max(res.AgentsSeconds, res.FrameworksResubSeconds)
	res.ReregisterAttempts = c.fleet.Stats().SubscribeAttempts - before
	cfg.Logf("recovered in %.2fs (agents %.2fs, frameworks %.2fs)", res.Seconds, res.AgentsSeconds, res.FrameworksResubSeconds)
	c.measure(ctx, &res.Result)
	return res, nil
}

// quantile of xs (sorted in place), nearest rank.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// startProgress logs n/total every few seconds until the returned stop
// is called.
func startProgress(logf func(string, ...any), what string, total int, n func() int) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				logf("%d/%d %s", n(), total, what)
			}
		}
	}()
	return func() { close(done) }
}

// masterMetrics reads /metrics/snapshot from the first master that
// answers (non-leaders redirect; the client follows).
func masterMetrics(ctx context.Context, masters []string) (map[string]float64, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	var errs []error
	for _, m := range masters {
		m = strings.TrimPrefix(m, "http://")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m+"/metrics/snapshot", nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp, err := client.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("%s: %s %v", m, resp.Status, err))
			continue
		}
		out := map[string]float64{}
		if err := json.Unmarshal(body, &out); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
			continue
		}
		return out, nil
	}
	return nil, errors.Join(errs...)
}

// processStats measures this process against the baseline taken before
// the fleet existed.
func processStats(base runtime.MemStats, agents int) Process {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	p := Process{
		Goroutines: runtime.NumGoroutine(),
		HeapBytes:  ms.HeapInuse,
		StackBytes: ms.StackInuse,
		SysBytes:   ms.Sys,
		RSSBytes:   rss(),
		OpenFDs:    openFDs(),
		FDLimit:    fdLimit(),
	}
	used := int64(ms.HeapInuse+ms.StackInuse) - int64(base.HeapInuse+base.StackInuse)
	if used > 0 && agents > 0 {
		p.BytesPerAgent = uint64(used) / uint64(agents)
	}
	return p
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// rss reads VmRSS from /proc/self/status (0 where there is none).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
