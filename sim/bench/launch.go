package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"mezzo/sim"
)

// LaunchConfig describes a placement-throughput run: Config's cluster,
// whose frameworks launch TasksPerFramework tasks each as fast as offers
// allow, all starting at one instant, while a probe framework measures
// how long one more task takes to start.
type LaunchConfig struct {
	Config
	// ProbeInterval is the probe's interval (default
	// sim.DefaultProbeInterval); negative: no probe.
	ProbeInterval time.Duration
	// Probes is how many probes to time once every task runs (default
	// 50); the probes during the launch are reported apart.
	Probes int
	// OnStart is called just before the frameworks are released, OnPlaced
	// once every task was placed, OnEnd once every task is running
	// (callers sample the masters' CPU there).
	OnStart, OnPlaced, OnEnd func()
}

// LaunchResult is what Launch measured.
type LaunchResult struct {
	Agents     int `json:"agents"`
	Frameworks int `json:"frameworks"`
	Tasks      int `json:"tasks"`
	// TasksPerS is placements per second: tasks the agents were sent
	// (RUN_TASK received) over the time from the frameworks' release to
	// the last placement. RunningPerS counts instead the tasks whose
	// TASK_RUNNING reached their framework (two acknowledged status
	// updates each) by the last one.
	TasksPerS      float64 `json:"tasks_per_s"`
	RunningPerS    float64 `json:"running_per_s"`
	PlacedSeconds  float64 `json:"placed_seconds"`
	RunningSeconds float64 `json:"running_seconds"`
	// Offers the frameworks received and the ACCEPTs they sent (tasks
	// per ACCEPT = Tasks / Accepts).
	Offers  int `json:"offers"`
	Accepts int `json:"accepts"`
	// Probe latencies, milliseconds, from wanting a task to its
	// TASK_RUNNING (probe_*) and from its ACCEPT (probe_accept_*): once
	// every task runs (the cluster full, its frameworks subscribed), and
	// during the launch (probe_launch_*: behind the launch's status
	// updates, which the cluster completes far slower than it places
	// tasks).
	ProbeSamples       int     `json:"probe_samples"`
	ProbeFailed        int     `json:"probe_failed"`
	ProbeP50MS         float64 `json:"probe_p50_ms"`
	ProbeP99MS         float64 `json:"probe_p99_ms"`
	ProbeMaxMS         float64 `json:"probe_max_ms"`
	ProbeAcceptP50MS   float64 `json:"probe_accept_p50_ms"`
	ProbeAcceptP99MS   float64 `json:"probe_accept_p99_ms"`
	ProbeLaunchSamples int     `json:"probe_launch_samples"`
	ProbeLaunchP50MS   float64 `json:"probe_launch_p50_ms"`
	ProbeLaunchP99MS   float64 `json:"probe_launch_p99_ms"`
	// CallErrors counts framework calls the master refused or that failed.
	CallErrors int     `json:"call_errors"`
	Process    Process `json:"process"`
	// Master is the leading master's /metrics/snapshot after the run.
	Master map[string]float64 `json:"master_metrics,omitempty"`
}

// Launch registers the cluster, subscribes the frameworks (suppressed)
// and a probe, then releases every framework at once and measures how fast
// the master places their tasks. The emulation is stopped (not torn down)
// before it returns.
func Launch(ctx context.Context, cfg LaunchConfig) (*LaunchResult, error) {
	var err error
	if cfg.Config, err = cfg.Config.normalize(); err != nil {
		return nil, err
	}
	if cfg.Frameworks < 1 || cfg.TasksPerFramework < 1 {
		return nil, fmt.Errorf("bench: Launch needs frameworks and tasks, got %d and %d", cfg.Frameworks, cfg.TasksPerFramework)
	}
	cfg.suppressed = true
	if cfg.Probes <= 0 {
		cfg.Probes = 50
	}
	res := &LaunchResult{Agents: cfg.Agents, Frameworks: cfg.Frameworks, Tasks: cfg.Frameworks * cfg.TasksPerFramework}
	var scale Result
	c, err := start(ctx, cfg.Config, &scale)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	wctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	var probe *sim.Probe
	if cfg.ProbeInterval >= 0 {
		probe, err = sim.NewProbe(sim.ProbeConfig{Masters: cfg.Masters, Interval: cfg.ProbeInterval,
			TaskResources: cfg.TaskResources, Logf: cfg.Logf})
		if err != nil {
			return nil, err
		}
		if err := probe.Start(wctx); err != nil {
			return nil, err
		}
		defer probe.Stop()
		// The probe holds an offer before the launch starts; the probes
		// before the release are not counted.
		if err := probe.WaitSamples(wctx, 1); err != nil {
			return nil, err
		}
	}
	if cfg.OnStart != nil {
		cfg.OnStart()
	}
	launched0 := c.fleet.Stats().TasksLaunched
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(c.frameworks))
	for i, fw := range c.frameworks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fw.Resume(wctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("bench: releasing a framework: %w", err)
		}
	}
	cfg.Logf("%d frameworks released", len(c.frameworks))

	total := int64(res.Tasks)
	placed := func() int { return int(c.fleet.Stats().TasksLaunched - launched0) }
	progress := startProgress(cfg.Logf, "placed", res.Tasks, placed)
	err = pollUntil(wctx, func() bool { return int64(placed()) >= total })
	progress()
	if err != nil {
		return nil, fmt.Errorf("bench: %d of %d tasks placed: %w", placed(), total, err)
	}
	res.PlacedSeconds = time.Since(t0).Seconds()
	if cfg.OnPlaced != nil {
		cfg.OnPlaced()
	}
	running := func() int {
		n := 0
		for _, fw := range c.frameworks {
			n += fw.Stats().Running
		}
		return n
	}
	if err := pollUntil(wctx, func() bool { return running() >= res.Tasks }); err != nil {
		return nil, fmt.Errorf("bench: %d of %d tasks running: %w", running(), res.Tasks, err)
	}
	tEnd := time.Now()
	res.RunningSeconds = tEnd.Sub(t0).Seconds()
	if cfg.OnEnd != nil {
		cfg.OnEnd()
	}
	res.TasksPerS = float64(res.Tasks) / res.PlacedSeconds
	res.RunningPerS = float64(res.Tasks) / res.RunningSeconds
	cfg.Logf("%d tasks placed in %.2fs (%.0f/s), running in %.2fs", res.Tasks, res.PlacedSeconds, res.TasksPerS, res.RunningSeconds)
	for _, fw := range c.frameworks {
		st := fw.Stats()
		res.Offers += st.Offers
		res.Accepts += st.Offers - st.Declined
		res.CallErrors += st.CallErrors
	}
	if probe != nil {
		// By submission: a probe wanted during the launch and finished
		// after it belongs to the launch.
		during := submitted(probe.Samples(), t0, tEnd)
		lat, _ := latencies(during)
		res.ProbeLaunchSamples = len(during)
		res.ProbeLaunchP50MS, res.ProbeLaunchP99MS = quantile(lat, 0.5), quantile(lat, 0.99)
		var after []sim.ProbeSample
		for len(after) < cfg.Probes {
			if err := probe.WaitSamples(wctx, len(probe.Samples())+1); err != nil {
				return nil, fmt.Errorf("bench: probing the full cluster: %w", err)
			}
			after = submitted(probe.Samples(), tEnd, time.Time{})
		}
		lat, acc := latencies(after)
		res.ProbeSamples, res.ProbeFailed = len(after), probe.Failed()
		res.ProbeP50MS, res.ProbeP99MS, res.ProbeMaxMS = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 1)
		res.ProbeAcceptP50MS, res.ProbeAcceptP99MS = quantile(acc, 0.5), quantile(acc, 0.99)
		cfg.Logf("probes: p99 %.1f ms on the full cluster (%d), %.1f ms during the launch (%d)", res.ProbeP99MS, len(after), res.ProbeLaunchP99MS, len(during))
	}
	c.measure(ctx, &scale)
	res.Process = scale.Process
	res.Master = map[string]float64{}
	for k, v := range scale.Master {
		// The per-framework counters (hundreds of keys) add nothing to
		// the cluster's totals here.
		if !strings.HasPrefix(k, "master/frameworks/") {
			res.Master[k] = v
		}
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// submitted keeps the samples submitted at or after from and before to
// (zero: no end).
func submitted(samples []sim.ProbeSample, from, to time.Time) []sim.ProbeSample {
	var out []sim.ProbeSample
	for _, s := range samples {
		if !s.Submitted.Before(from) && (to.IsZero() || s.Submitted.Before(to)) {
			out = append(out, s)
		}
	}
	return out
}

// latencies are the samples' submission-to-running and accept-to-running
// latencies in milliseconds.
func latencies(samples []sim.ProbeSample) (lat, acc []float64) {
	for _, s := range samples {
		lat = append(lat, ms(s.Latency()))
		acc = append(acc, ms(s.AcceptLatency()))
	}
	return lat, acc
}

// pollUntil checks cond every 5 ms until it holds or ctx ends (the
// counters it reads have no notification; 5 ms is the time resolution of
// the measurement).
func pollUntil(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
