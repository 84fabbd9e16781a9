package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/scheduler"

	"google.golang.org/protobuf/proto"
)

// `mezzo bench oversubscription`: the measured demonstration of issue 13.
// One real master and one real agent in this process, the agent isolating
// with cgroups (cpu shares, CFS quota, memory), all its cpus statically
// reserved for role "service". Two frameworks written with the scheduler
// SDK:
//
//   - the service (role "service") runs --service_tasks tasks on the
//     reservation; each serves requests worth --low_cpus of CPU until
//     --rise_at, then as many as its CPU allows (more than its
//     reservation: its CFS quota throttles it) until --duration;
//   - the tenant (REVOCABLE_RESOURCES) launches a CPU-bound task of
//     --tenant_cpus revocable cpus for every such share of every
//     revocable offer.
//
// The run is made twice, without oversubscription (estimator and QoS
// controller noop: the tenant is never offered anything) and with it
// (--resource_estimator, --qos_controller), each on a fresh cluster. CPU
// is measured from the cpuacct counters of the agent's cgroups; the
// service measures its own latency and throughput (bench_ovs_worker.go).
// Every process and cgroup the benchmark creates is removed on the way
// out, on error and on SIGINT/SIGTERM too.

// ovsResult is the JSON `mezzo bench oversubscription --json` prints.
type ovsResult struct {
	// UtilizationGain is the CPU tasks used with oversubscription ÷
	// without, over the same window.
	UtilizationGain float64 `json:"utilization_gain"`
	// ServiceSlowdownPct is how much lower the service's throughput after
	// its load rose was with the tenant than alone, in percent (negative:
	// higher).
	ServiceSlowdownPct float64 `json:"service_slowdown_pct"`
	// EvictionMs is the time from the service's load rise to the last
	// tenant container evicted after it (-1: none was).
	EvictionMs float64 `json:"eviction_ms"`
	// RegularKilled counts service tasks that ended other than
	// TASK_FINISHED, in both runs.
	RegularKilled int `json:"regular_killed"`
	// ServiceLatencyP99Ratio is the service's p99 request latency before
	// the rise with the tenant ÷ alone.
	ServiceLatencyP99Ratio float64 `json:"service_latency_p99_ratio"`

	// Rounds are each round's figures when --rounds > 1 (the ones
	// above are then their medians; runs are the last round's).
	Rounds  []ovsRound         `json:"rounds,omitempty"`
	Targets ovsTargets         `json:"targets"`
	Config  ovsConfigJSON      `json:"config"`
	Runs    map[string]*ovsRun `json:"runs"`
	Nproc   int                `json:"nproc"`
	Load1   string             `json:"load1_before"`
	Load1At string             `json:"load1_after"`
}

type ovsTargets struct {
	MinGain        float64 `json:"utilization_gain_min"`
	MaxEvictionMs  float64 `json:"eviction_ms_max"`
	MaxSlowdownPct float64 `json:"service_slowdown_pct_max"`
	Met            bool    `json:"met"`
}

// ovsRun is one run's measurements.
type ovsRun struct {
	Mode string `json:"mode"`
	// CPU used by tasks (their containers) over the window, seconds.
	CPUSeconds        float64 `json:"cpu_seconds"`
	ServiceCPUSeconds float64 `json:"service_cpu_seconds"`
	TenantCPUSeconds  float64 `json:"tenant_cpu_seconds"`
	WindowSeconds     float64 `json:"window_seconds"`
	// The service: requests per second after the rise (closed loop),
	// latency before it (open loop).
	ServiceHighRPS  float64 `json:"service_high_rps"`
	ServiceLowP50Ms float64 `json:"service_low_p50_ms"`
	ServiceLowP99Ms float64 `json:"service_low_p99_ms"`
	ServiceLowDone  int     `json:"service_low_done"`
	RegularKilled   int     `json:"regular_killed"`
	// The tenant.
	RevocableOffers   int     `json:"revocable_offers"`
	Rescinds          int     `json:"rescinds"`
	TenantsLaunched   int     `json:"tenants_launched"`
	TenantsAtRise     int     `json:"tenants_running_at_rise"`
	EvictedAfterRise  int     `json:"tenants_evicted_after_rise"`
	EvictedBeforeRise int     `json:"tenants_evicted_before_rise"`
	FirstEvictionMs   float64 `json:"first_eviction_ms"`
	LastEvictionMs    float64 `json:"last_eviction_ms"`
	// EvictionReasons counts the tenant's terminal states and reasons.
	EvictionReasons map[string]int `json:"tenant_ends"`
	// EvictionMessages samples the agent's messages (the controller's
	// reason) of the first evictions, with their time since the start.
	EvictionMessages []string    `json:"eviction_messages,omitempty"`
	Timeline         []ovsSample `json:"timeline"`
}

// ovsSample is the CPU the service's and the tenant's containers used
// over one sampling interval ending T seconds after the start.
type ovsSample struct {
	T       float64 `json:"t"`
	Service float64 `json:"service_cpus"`
	Tenant  float64 `json:"tenant_cpus"`
}

type ovsConfigJSON struct {
	DurationS        float64 `json:"duration_s"`
	RiseAtS          float64 `json:"rise_at_s"`
	ServiceTasks     int     `json:"service_tasks"`
	ServiceCPUs      float64 `json:"service_cpus_per_task"`
	LowCPUs          float64 `json:"low_cpus_per_task"`
	TenantCPUs       float64 `json:"tenant_cpus_per_task"`
	Estimator        string  `json:"resource_estimator"`
	Controller       string  `json:"qos_controller"`
	CorrectionMinS   float64 `json:"qos_correction_interval_min_s"`
	EstimateInterval float64 `json:"oversubscribed_resources_interval_s"`
	AgentFlags       string  `json:"agent_flags"`
	Isolation        string  `json:"isolation"`
}

type ovsConfig struct {
	duration, riseAt     time.Duration
	serviceTasks         int
	serviceCPUs, lowCPUs float64
	threads              int
	tenantCPUs           float64
	reqMs                float64
	estimator            string
	controller           string
	correctionMin        time.Duration
	estimateInterval     time.Duration
	agentFlags           []string // name=value, for the "with" run
	modes                []string
	rounds               int
	dir                  string
	sample               time.Duration
	log                  *slog.Logger
	bin                  string
	work                 int
}

func benchOversubscription(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench oversubscription", stderr)
	duration := durationFlag(fs, "duration", 45*time.Second, "measured time of each run")
	riseAt := durationFlag(fs, "rise_at", 30*time.Second, "when, in each run, the service's load rises beyond its reservation")
	serviceTasks := fs.Int("service_tasks", 2, "the service's tasks")
	serviceCPUs := fs.Float64("service_cpus", 1, "cpus each service task holds (all reserved: the agent's cpus are their sum)")
	lowCPUs := fs.Float64("low_cpus", 0.2, "CPU each service task uses before the rise")
	threads := fs.Int("service_threads", 2, "threads per service task")
	tenantCPUs := fs.Float64("tenant_cpus", 0.25, "revocable cpus per tenant task")
	estimator := fs.String("resource_estimator", "slack", "the agent's estimator in the run with oversubscription")
	controller := fs.String("qos_controller", "interference", "the agent's QoS controller in the run with oversubscription")
	correctionMin := durationFlag(fs, "qos_correction_interval_min", 0, "the agent's --qos_correction_interval_min")
	estimateInterval := durationFlag(fs, "oversubscribed_resources_interval", time.Second, "the agent's --oversubscribed_resources_interval")
	agentFlags := fs.String("agent_flags", "slack_estimator_window=5secs", "more agent flags for the run with oversubscription, name=value,...")
	modes := fs.String("modes", "without,with", "the runs to make: without, with or both")
	rounds := fs.Int("rounds", 1, "rounds of the runs, one after the other; the figures are the medians")
	workDir := fs.String("work_dir", "", "work dir (default: a new temporary directory, removed afterwards)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("v", false, "log the master and agent to stderr")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	cfg := ovsConfig{
		duration: *duration, riseAt: *riseAt, serviceTasks: *serviceTasks, serviceCPUs: *serviceCPUs,
		lowCPUs: *lowCPUs, threads: *threads, tenantCPUs: *tenantCPUs, reqMs: 5,
		estimator: *estimator, controller: *controller, correctionMin: *correctionMin,
		estimateInterval: *estimateInterval, sample: 250 * time.Millisecond, rounds: *rounds,
	}
	if *agentFlags != "" {
		cfg.agentFlags = strings.Split(*agentFlags, ",")
	}
	for _, m := range strings.Split(*modes, ",") {
		if m != "without" && m != "with" {
			fmt.Fprintf(stderr, "mezzo bench oversubscription: --modes: unknown run %q (without, with)\n", m)
			return 2
		}
		cfg.modes = append(cfg.modes, m)
	}
	if err := cfg.check(); err != nil {
		fmt.Fprintf(stderr, "mezzo bench oversubscription: %v\n", err)
		return 2
	}
	if iso := autoIsolation(); !strings.HasPrefix(iso, "cgroups/") {
		fmt.Fprintln(stderr, "mezzo bench oversubscription: needs root and cgroups v1 cpu, cpuacct and memory (it measures CPU from cpuacct)")
		return 1
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mezzo bench oversubscription: %v\n", err)
		return 1
	}
	cfg.bin = bin
	cfg.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if *verbose {
		cfg.log, _, _ = logger(stderr, "info", "text")
	}
	dir, done, err := benchDir(*workDir, "mezzo-bench-ovs-")
	if err != nil {
		fmt.Fprintf(stderr, "mezzo bench oversubscription: %v\n", err)
		return 1
	}
	defer done()
	cfg.dir = dir
	// Ctrl-C and SIGTERM end the run through ctx: the deferred clean-up
	// then stops the cluster and removes every process and cgroup.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := runOversubscriptionBench(ctx, cfg)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "mezzo bench oversubscription: interrupted; cleaned up\n")
		return 130
	}
	return report("oversubscription", res, err, *asJSON, stdout, stderr, func() string { return res.text() })
}

func (c ovsConfig) check() error {
	switch {
	case c.duration <= 0 || c.riseAt <= 0 || c.riseAt >= c.duration:
		return errors.New("need 0 < --rise_at < --duration")
	case c.serviceTasks <= 0 || c.threads <= 0:
		return errors.New("--service_tasks and --service_threads must be positive")
	case c.serviceCPUs <= 0 || c.lowCPUs < 0 || c.lowCPUs > c.serviceCPUs:
		return errors.New("need 0 <= --low_cpus <= --service_cpus, --service_cpus > 0")
	case c.tenantCPUs <= 0:
		return errors.New("--tenant_cpus must be positive")
	case c.rounds < 1:
		return errors.New("--rounds must be at least 1")
	}
	for _, kv := range c.agentFlags {
		if !strings.Contains(kv, "=") {
			return fmt.Errorf("--agent_flags: %q is not name=value", kv)
		}
	}
	return nil
}

func runOversubscriptionBench(ctx context.Context, cfg ovsConfig) (*ovsResult, error) {
	res := &ovsResult{
		Runs: map[string]*ovsRun{}, Nproc: runtime.NumCPU(), Load1: load1(), EvictionMs: -1,
		Targets: ovsTargets{MinGain: 1.8, MaxEvictionMs: float64((cfg.correctionMin + time.Second) / time.Millisecond), MaxSlowdownPct: 10},
		Config: ovsConfigJSON{
			DurationS: cfg.duration.Seconds(), RiseAtS: cfg.riseAt.Seconds(), ServiceTasks: cfg.serviceTasks,
			ServiceCPUs: cfg.serviceCPUs, LowCPUs: cfg.lowCPUs, TenantCPUs: cfg.tenantCPUs,
			Estimator: cfg.estimator, Controller: cfg.controller, CorrectionMinS: cfg.correctionMin.Seconds(),
			EstimateInterval: cfg.estimateInterval.Seconds(), AgentFlags: strings.Join(cfg.agentFlags, ","),
			Isolation: "cgroups/cpu,cgroups/mem --cgroups_enable_cfs",
		},
	}
	// One request is 5 ms of this machine's CPU; the same work in both runs.
	cfg.work = calibrateWork(time.Duration(cfg.reqMs * float64(time.Millisecond)))
	var rounds []ovsRound
	for round := range max(cfg.rounds, 1) {
		// Each round on fresh clusters: its own work dirs.
		rcfg := cfg
		if cfg.rounds > 1 {
			rcfg.dir = filepath.Join(cfg.dir, fmt.Sprintf("round%d", round+1))
		}
		runs := map[string]*ovsRun{}
		for _, mode := range cfg.modes {
			run, err := runOvsMode(ctx, rcfg, mode)
			if err != nil {
				return nil, fmt.Errorf("run %s oversubscription: %w", mode, err)
			}
			runs[mode] = run
		}
		rounds = append(rounds, summarizeRound(runs))
		res.Runs = runs // the last round's, for the plot
	}
	res.Load1At = load1()
	// Each figure is the median over rounds (the upper one of an even
	// number; one round: its own), except
	// regular_killed, which counts every round's.
	med := func(f func(ovsRound) float64) float64 {
		v := make([]float64, len(rounds))
		for i, r := range rounds {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	res.UtilizationGain = med(func(r ovsRound) float64 { return r.Gain })
	res.ServiceSlowdownPct = med(func(r ovsRound) float64 { return r.SlowdownPct })
	res.EvictionMs = med(func(r ovsRound) float64 { return r.EvictionMs })
	res.ServiceLatencyP99Ratio = med(func(r ovsRound) float64 { return r.LatencyP99Ratio })
	for _, r := range rounds {
		res.RegularKilled += r.RegularKilled
	}
	if len(rounds) > 1 {
		res.Rounds = rounds
	}
	if res.Runs["without"] != nil && res.Runs["with"] != nil {
		res.Targets.Met = res.UtilizationGain >= res.Targets.MinGain && res.EvictionMs >= 0 &&
			res.EvictionMs <= res.Targets.MaxEvictionMs && res.ServiceSlowdownPct <= res.Targets.MaxSlowdownPct &&
			res.RegularKilled == 0
	}
	return res, nil
}

// ovsRound is one round's figures (a run without and one with).
type ovsRound struct {
	Gain            float64 `json:"utilization_gain"`
	SlowdownPct     float64 `json:"service_slowdown_pct"`
	EvictionMs      float64 `json:"eviction_ms"`
	LatencyP99Ratio float64 `json:"service_latency_p99_ratio"`
	RegularKilled   int     `json:"regular_killed"`
}

func summarizeRound(runs map[string]*ovsRun) ovsRound {
	r := ovsRound{EvictionMs: -1}
	without, with := runs["without"], runs["with"]
	for _, run := range runs {
		r.RegularKilled += run.RegularKilled
	}
	if with != nil {
		r.EvictionMs = with.LastEvictionMs
	}
	if without == nil || with == nil {
		return r
	}
	if without.CPUSeconds > 0 {
		r.Gain = with.CPUSeconds / without.CPUSeconds
	}
	if without.ServiceHighRPS > 0 {
		r.SlowdownPct = (without.ServiceHighRPS - with.ServiceHighRPS) / without.ServiceHighRPS * 100
	}
	if without.ServiceLowP99Ms > 0 {
		r.LatencyP99Ratio = with.ServiceLowP99Ms / without.ServiceLowP99Ms
	}
	return r
}

func (r *ovsResult) text() string {
	var b strings.Builder
	for _, mode := range []string{"without", "with"} {
		run := r.Runs[mode]
		if run == nil {
			continue
		}
		fmt.Fprintf(&b, "%s oversubscription: tasks used %.1f cpu·s in %.0fs (service %.1f, tenant %.1f); service %.0f req/s after the rise, p99 %.1f ms before; tenants launched %d, evicted after the rise %d (last after %.0f ms), before %d; regular killed %d\n",
			mode, run.CPUSeconds, run.WindowSeconds, run.ServiceCPUSeconds, run.TenantCPUSeconds, run.ServiceHighRPS,
			run.ServiceLowP99Ms, run.TenantsLaunched, run.EvictedAfterRise, run.LastEvictionMs, run.EvictedBeforeRise, run.RegularKilled)
	}
	fmt.Fprintf(&b, "utilization gain %.2f× (target ≥ %.1f), service slowdown %.1f%% (≤ %.0f), eviction %.0f ms (≤ %.0f), regular killed %d; nproc %d, load %s → %s",
		r.UtilizationGain, r.Targets.MinGain, r.ServiceSlowdownPct, r.Targets.MaxSlowdownPct, r.EvictionMs, r.Targets.MaxEvictionMs,
		r.RegularKilled, r.Nproc, r.Load1, r.Load1At)
	return b.String()
}

// runOvsMode runs one cluster: "without" or "with" oversubscription.
func runOvsMode(ctx context.Context, cfg ovsConfig, mode string) (_ *ovsRun, err error) {
	dir := filepath.Join(cfg.dir, mode)
	workers := filepath.Join(dir, "workers")
	if err := os.MkdirAll(workers, 0o777); err != nil {
		return nil, err
	}
	// Tasks may run as another user; they must write their files here.
	os.Chmod(workers, 0o777)
	cgRoot := fmt.Sprintf("mezzo-bench-ovs-%d-%s", os.Getpid(), mode)

	clusterCtx, stopCluster := context.WithCancel(context.Background())
	defer stopCluster()
	m, err := startBenchMaster(clusterCtx, 100*time.Millisecond, cfg.log)
	if err != nil {
		return nil, err
	}
	afs := flag.NewFlagSet("agent", flag.ContinueOnError)
	af := addAgentFlags(afs, true)
	af.master = m.addr()
	af.workDir = filepath.Join(dir, "agent")
	af.isolation = "cgroups/cpu,cgroups/mem"
	af.cgroupsRoot = cgRoot
	af.cgroupsEnableCFS = true
	af.killOnExit = true
	total := float64(cfg.serviceTasks) * cfg.serviceCPUs
	// All cpus are the service's; unreserved memory is for the tenant.
	af.resources = fmt.Sprintf("cpus(service):%g;mem(service):%d;mem:2048;disk:2048", total, 256*cfg.serviceTasks)
	if err := setAgentOversubFlags(afs, cfg, mode); err != nil {
		stopCluster()
		waitStopped(m, nil)
		return nil, err
	}
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a, err := startAgent(clusterCtx, af, aln, nil, cfg.log.With("component", "agent"))
	if err != nil {
		aln.Close()
		stopCluster()
		waitStopped(m, nil)
		return nil, fmt.Errorf("agent: %w", err)
	}
	defer func() {
		stopCluster()
		waitStopped(m, []*runningAgent{a})
		if alive := killWorkers(workers, 5*time.Second); len(alive) > 0 && err == nil {
			err = fmt.Errorf("workers %v still alive after the clean-up", alive)
		}
		if cerr := sweepCgroupsSettled(cgRoot, 5*time.Second); cerr != nil && err == nil {
			err = fmt.Errorf("cleaning up cgroups: %w", cerr)
		}
	}()
	if err := waitReady(ctx, m.addr(), m, 1, 30*time.Second); err != nil {
		return nil, err
	}
	// The schedule: the service's tasks start, idle until start, then
	// serve; everything ends at end.
	start := time.Now().Add(4 * time.Second).Truncate(time.Millisecond)
	f := &ovsFrameworks{
		cfg: cfg, dir: workers, start: start, rise: start.Add(cfg.riseAt), end: start.Add(cfg.duration),
		service: map[string]mesos.TaskState{}, tenants: map[string]*ovsTenant{}, ends: map[string]int{},
		heldRevocable: map[string]*mesos.Offer{}, heldRegular: map[string]*mesos.Offer{},
		serviceUp: make(chan struct{}),
	}
	runCtx, cancel := context.WithDeadline(ctx, f.end.Add(30*time.Second))
	defer cancel()
	if err := f.subscribe(runCtx, m.addr()); err != nil {
		return nil, err
	}
	select {
	case <-f.serviceUp:
	case <-time.After(time.Until(start)):
		return nil, fmt.Errorf("the service's tasks were not all running %v after the cluster was up: %s", 4*time.Second, f.describeService())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	samples, cpu, err := sampleCPU(runCtx, cgRoot, workers, start, f.end, cfg.sample)
	if err != nil {
		return nil, err
	}
	if err := f.awaitServiceEnd(runCtx); err != nil {
		return nil, err
	}
	run := f.result(mode)
	run.Timeline = samples
	run.CPUSeconds, run.ServiceCPUSeconds = round3(cpu.total.Seconds()), round3(cpu.service.Seconds())
	run.TenantCPUSeconds = round3(max(0, run.CPUSeconds-run.ServiceCPUSeconds))
	run.WindowSeconds = cfg.duration.Seconds()
	var high float64
	for i := range cfg.serviceTasks {
		var w ovsWorkerResult
		b, err := os.ReadFile(filepath.Join(workers, fmt.Sprintf("service-%d.json", i)))
		if err != nil {
			return nil, fmt.Errorf("service task %d wrote no results: %w", i, err)
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, fmt.Errorf("service task %d results: %w", i, err)
		}
		high += float64(w.HighDone) / w.HighSeconds
		run.ServiceLowDone += w.LowDone
		// The worst task's latency is the service's.
		run.ServiceLowP50Ms = max(run.ServiceLowP50Ms, w.LowP50Ms)
		run.ServiceLowP99Ms = max(run.ServiceLowP99Ms, w.LowP99Ms)
	}
	run.ServiceHighRPS = high
	return run, nil
}

// setAgentOversubFlags sets the agent's oversubscription flags, by name
// as a user would: noop for the run without (where the flags exist), the
// configured estimator and controller for the run with.
func setAgentOversubFlags(afs *flag.FlagSet, cfg ovsConfig, mode string) error {
	set := map[string]string{}
	if mode == "without" {
		set["resource_estimator"], set["qos_controller"] = "noop", "noop"
		for k, v := range set {
			if afs.Lookup(k) != nil {
				if err := afs.Set(k, v); err != nil {
					return fmt.Errorf("agent flag --%s: %w", k, err)
				}
			}
		}
		return nil
	}
	set["resource_estimator"], set["qos_controller"] = cfg.estimator, cfg.controller
	set["qos_correction_interval_min"] = cfg.correctionMin.String()
	set["oversubscribed_resources_interval"] = cfg.estimateInterval.String()
	set["revocable_cpu_low_priority"] = "true"
	for _, kv := range cfg.agentFlags {
		k, v, _ := strings.Cut(kv, "=")
		set[strings.TrimPrefix(k, "--")] = v
	}
	for k, v := range set {
		if afs.Lookup(k) == nil {
			return fmt.Errorf("the agent has no flag --%s: this build cannot oversubscribe", k)
		}
		if err := afs.Set(k, v); err != nil {
			return fmt.Errorf("agent flag --%s=%s: %w", k, v, err)
		}
	}
	return nil
}

// ovsCPU is the CPU used over the whole window.
type ovsCPU struct{ total, service time.Duration }

// sampleCPU samples, from start to end every interval, the cpuacct usage
// of the agent's cgroup root (every container, ended ones included) and of
// the service's containers (found from the workers' pid files); the
// tenant's is the difference.
func sampleCPU(ctx context.Context, root, workers string, start, end time.Time, interval time.Duration) ([]ovsSample, ovsCPU, error) {
	// Per service cgroup, its last reading: a cgroup read that fails this
	// round (or a cgroup not there yet) adds nothing now and its whole
	// delta later, never a jump from the sum of the others.
	last := map[string]time.Duration{}
	serviceUsage := func() time.Duration {
		for _, w := range readWorkerPids(workers) {
			if strings.HasPrefix(w.name, "service-") && w.cgroup != "" {
				if u, err := cpuacctUsage(w.cgroup); err == nil && u >= last[w.cgroup] {
					last[w.cgroup] = u
				}
			}
		}
		var sum time.Duration
		for _, u := range last {
			sum += u
		}
		return sum
	}
	t := time.NewTimer(time.Until(start))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ovsCPU{}, ctx.Err()
	}
	root0, err := cpuacctUsage(root)
	if err != nil {
		return nil, ovsCPU{}, fmt.Errorf("the agent's cgroups: %w", err)
	}
	svc0 := serviceUsage()
	prevRoot, prevSvc, prevAt := root0, svc0, time.Now()
	var samples []ovsSample
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ovsCPU{}, ctx.Err()
		}
		s := serviceUsage()
		r, err := cpuacctUsage(root)
		if err != nil {
			return nil, ovsCPU{}, fmt.Errorf("the agent's cgroups: %w", err)
		}
		// Timed after the reads: on a busy machine this goroutine can
		// wait between the tick and the reads, and the interval must be
		// the one the counters cover.
		now := time.Now()
		// A service task's cgroup vanishing would make its usage fall.
		if s < prevSvc {
			s = prevSvc
		}
		dt := now.Sub(prevAt).Seconds()
		samples = append(samples, ovsSample{
			T:       math.Round(now.Sub(start).Seconds()*1000) / 1000,
			Service: round3((s - prevSvc).Seconds() / dt),
			Tenant:  round3(max(0, (r-prevRoot)-(s-prevSvc)).Seconds() / dt),
		})
		prevRoot, prevSvc, prevAt = r, s, now
		if !now.Before(end) {
			return samples, ovsCPU{total: r - root0, service: s - svc0}, nil
		}
	}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// ovsFrameworks is the service and the tenant.
type ovsFrameworks struct {
	cfg                    ovsConfig
	dir                    string
	start, rise, end       time.Time
	serviceClient, tenantC *scheduler.Client

	mu              sync.Mutex
	serviceLaunched bool
	service         map[string]mesos.TaskState
	serviceUp       chan struct{}
	regularKilled   int
	serviceNotes    []string
	revocableOffers int
	nextTenant      int
	heldRevocable   map[string]*mesos.Offer // by agent
	heldRegular     map[string]*mesos.Offer
	rescinds        int
	tenants         map[string]*ovsTenant
	ends            map[string]int
	endMessages     []string
}

// ovsTenant is one tenant task's life.
type ovsTenant struct {
	running, ended time.Time
	state          mesos.TaskState
}

func (f *ovsFrameworks) subscribe(ctx context.Context, master string) error {
	user := proto.String(currentUser())
	f.serviceClient = scheduler.New(scheduler.Config{Masters: []string{master}, Framework: &mesos.FrameworkInfo{
		User: user, Name: proto.String("ovs-bench service"), Roles: []string{"service"},
		Capabilities: []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()}},
	}})
	f.tenantC = scheduler.New(scheduler.Config{Masters: []string{master}, Framework: &mesos.FrameworkInfo{
		User: user, Name: proto.String("ovs-bench tenant"), Roles: []string{"tenant"},
		Capabilities: []*mesos.FrameworkInfo_Capability{
			{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()},
			{Type: mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES.Enum()},
		},
	}})
	for _, c := range []struct {
		client  *scheduler.Client
		offers  func(context.Context, []*mesos.Offer)
		service bool
	}{{f.serviceClient, f.serviceOffers, true}, {f.tenantC, f.tenantOffers, false}} {
		events, err := c.client.Subscribe(ctx)
		if err != nil {
			return err
		}
		go func() {
			for ev := range events {
				switch ev.GetType() {
				case schedulerpb.Event_OFFERS:
					c.offers(ctx, ev.GetOffers().GetOffers())
				case schedulerpb.Event_RESCIND:
					f.rescind(ev.GetRescind().GetOfferId())
				case schedulerpb.Event_UPDATE:
					st := ev.GetUpdate().GetStatus()
					f.update(c.service, st)
					go c.client.Acknowledge(ctx, st)
				}
			}
		}()
	}
	return nil
}

// workerTask is a task running `mezzo bench ovs-worker`.
func (f *ovsFrameworks) workerTask(id string, agent *mesos.AgentID, res []*mesos.Resource, args ...string) *mesos.TaskInfo {
	argv := append([]string{f.cfg.bin, "bench", "ovs-worker", "--name=" + id, "--dir=" + f.dir,
		"--end_ms=" + strconv.FormatInt(f.end.UnixMilli(), 10), "--work=" + strconv.Itoa(f.cfg.work)}, args...)
	return &mesos.TaskInfo{
		Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)}, AgentId: agent, Resources: res,
		Command: &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String(f.cfg.bin), Arguments: argv},
	}
}

// take returns a copy of the offer's first resource named name that
// keep accepts and holds at least v, with the scalar v; nil if none.
func ovsTake(o *mesos.Offer, name string, v float64, keep func(*mesos.Resource) bool) *mesos.Resource {
	for _, r := range o.GetResources() {
		if r.GetName() == name && keep(r) && r.GetScalar().GetValue() >= v-1e-9 {
			c := proto.CloneOf(r)
			c.Scalar = &mesos.Value_Scalar{Value: proto.Float64(v)}
			return c
		}
	}
	return nil
}

// ovsReservedTo keeps regular resources reserved to role, in either
// format (a framework without RESERVATION_REFINEMENT sees the old one:
// Resource.role and no reservations).
func ovsReservedTo(role string) func(*mesos.Resource) bool {
	return func(r *mesos.Resource) bool {
		if r.GetRevocable() != nil {
			return false
		}
		if rs := r.GetReservations(); len(rs) > 0 {
			return rs[len(rs)-1].GetRole() == role
		}
		return r.GetRole() == role
	}
}

func ovsRevocable(r *mesos.Resource) bool { return r.GetRevocable() != nil }

func ovsUnreservedRegular(r *mesos.Resource) bool {
	return r.GetRevocable() == nil && len(r.GetReservations()) == 0 && (r.GetRole() == "" || r.GetRole() == "*")
}

func (f *ovsFrameworks) serviceOffers(ctx context.Context, offers []*mesos.Offer) {
	for _, o := range offers {
		f.mu.Lock()
		launched := f.serviceLaunched
		f.mu.Unlock()
		var tasks []*mesos.TaskInfo
		if !launched {
			cpus := ovsTake(o, "cpus", float64(f.cfg.serviceTasks)*f.cfg.serviceCPUs, ovsReservedTo("service"))
			mem := ovsTake(o, "mem", float64(128*f.cfg.serviceTasks), ovsReservedTo("service"))
			if cpus != nil && mem != nil {
				for i := range f.cfg.serviceTasks {
					id := fmt.Sprintf("service-%d", i)
					res := []*mesos.Resource{ovsTake(o, "cpus", f.cfg.serviceCPUs, ovsReservedTo("service")), ovsTake(o, "mem", 128, ovsReservedTo("service"))}
					tasks = append(tasks, f.workerTask(id, o.GetAgentId(), res, "--kind=service",
						"--start_ms="+strconv.FormatInt(f.start.UnixMilli(), 10), "--rise_ms="+strconv.FormatInt(f.rise.UnixMilli(), 10),
						"--low_cpus="+strconv.FormatFloat(f.cfg.lowCPUs, 'f', -1, 64), "--threads="+strconv.Itoa(f.cfg.threads),
						"--req_ms="+strconv.FormatFloat(f.cfg.reqMs, 'f', -1, 64)))
				}
			}
		}
		if len(tasks) > 0 {
			f.mu.Lock()
			f.serviceLaunched = true
			for _, t := range tasks {
				f.service[t.GetTaskId().GetValue()] = mesos.TaskState_TASK_STAGING
			}
			f.mu.Unlock()
			if err := f.serviceClient.Launch(ctx, []*mesos.OfferID{o.GetId()}, tasks, scheduler.RefuseFor(3600)); err != nil && ctx.Err() == nil {
				f.note("service launch: " + err.Error())
			}
			continue
		}
		f.serviceClient.Decline(ctx, []*mesos.OfferID{o.GetId()}, scheduler.RefuseFor(3600))
	}
}

// tenantOffers launches a tenant task per --tenant_cpus of revocable cpus,
// with regular memory, until shortly before the end. The master offers
// revocable and regular resources in separate offers (as Mesos does), so
// the tenant holds an offer of each kind per agent and accepts the two
// together.
func (f *ovsFrameworks) tenantOffers(ctx context.Context, offers []*mesos.Offer) {
	for _, o := range offers {
		var rev, mem float64
		for _, r := range o.GetResources() {
			switch {
			case r.GetName() == "cpus" && ovsRevocable(r):
				rev += r.GetScalar().GetValue()
			case r.GetName() == "mem" && ovsUnreservedRegular(r):
				mem += r.GetScalar().GetValue()
			}
		}
		f.mu.Lock()
		agent := o.GetAgentId().GetValue()
		var decline []*mesos.OfferID
		hold := func(held map[string]*mesos.Offer) {
			if old := held[agent]; old != nil {
				decline = append(decline, old.GetId())
			}
			held[agent] = o
		}
		var launch []*mesos.TaskInfo
		var ids []*mesos.OfferID
		switch {
		case rev > 0 && mem >= 64 && time.Until(f.end) > 2*time.Second:
			// Both kinds in one offer.
			f.revocableOffers++
			ids, launch = []*mesos.OfferID{o.GetId()}, f.tenantTasks(o, o)
		case rev > 0:
			f.revocableOffers++
			hold(f.heldRevocable)
		case mem >= 64:
			hold(f.heldRegular)
		default:
			decline = append(decline, o.GetId())
		}
		if r, g := f.heldRevocable[agent], f.heldRegular[agent]; r != nil && g != nil && time.Until(f.end) > 2*time.Second {
			delete(f.heldRevocable, agent)
			delete(f.heldRegular, agent)
			ids = []*mesos.OfferID{r.GetId(), g.GetId()}
			launch = f.tenantTasks(r, g)
		}
		f.mu.Unlock()
		if len(decline) > 0 {
			f.tenantC.Decline(ctx, decline, scheduler.RefuseFor(1))
		}
		if len(ids) == 0 {
			continue
		}
		if err := f.tenantC.Launch(ctx, ids, launch, scheduler.RefuseFor(1)); err != nil && ctx.Err() == nil {
			f.note("tenant launch: " + err.Error())
		}
	}
}

// tenantTasks packs tenant tasks into a revocable and a regular offer of
// one agent (f.mu held).
func (f *ovsFrameworks) tenantTasks(rev, reg *mesos.Offer) []*mesos.TaskInfo {
	var cpus, mem float64
	for _, r := range rev.GetResources() {
		if r.GetName() == "cpus" && ovsRevocable(r) {
			cpus += r.GetScalar().GetValue()
		}
	}
	for _, r := range reg.GetResources() {
		if r.GetName() == "mem" && ovsUnreservedRegular(r) {
			mem += r.GetScalar().GetValue()
		}
	}
	var tasks []*mesos.TaskInfo
	for cpus >= f.cfg.tenantCPUs-1e-9 && mem >= 64 {
		c, m := ovsTake(rev, "cpus", f.cfg.tenantCPUs, ovsRevocable), ovsTake(reg, "mem", 64, ovsUnreservedRegular)
		if c == nil || m == nil {
			break
		}
		cpus, mem = cpus-f.cfg.tenantCPUs, mem-64
		id := fmt.Sprintf("tenant-%d", f.nextTenant)
		f.nextTenant++
		f.tenants[id] = &ovsTenant{state: mesos.TaskState_TASK_STAGING}
		tasks = append(tasks, f.workerTask(id, rev.GetAgentId(), []*mesos.Resource{c, m}, "--kind=tenant"))
	}
	return tasks
}

// rescind forgets a held offer the master took back.
func (f *ovsFrameworks) rescind(id *mesos.OfferID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rescinds++
	for _, held := range []map[string]*mesos.Offer{f.heldRevocable, f.heldRegular} {
		for agent, o := range held {
			if o.GetId().GetValue() == id.GetValue() {
				delete(held, agent)
			}
		}
	}
}

func (f *ovsFrameworks) note(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.serviceNotes) < 10 {
		f.serviceNotes = append(f.serviceNotes, s)
	}
}

func ovsTerminal(s mesos.TaskState) bool {
	switch s {
	case mesos.TaskState_TASK_STAGING, mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING,
		mesos.TaskState_TASK_KILLING, mesos.TaskState_TASK_UNREACHABLE:
		return false
	}
	return true
}

func (f *ovsFrameworks) update(service bool, st *mesos.TaskStatus) {
	now := time.Now()
	id := st.GetTaskId().GetValue()
	f.mu.Lock()
	defer f.mu.Unlock()
	if service {
		if prev, ok := f.service[id]; ok && ovsTerminal(prev) {
			return
		}
		f.service[id] = st.GetState()
		if ovsTerminal(st.GetState()) && st.GetState() != mesos.TaskState_TASK_FINISHED {
			f.regularKilled++
			if len(f.serviceNotes) < 10 {
				f.serviceNotes = append(f.serviceNotes, fmt.Sprintf("%s: %v %v %s", id, st.GetState(), st.GetReason(), st.GetMessage()))
			}
		}
		running := 0
		for _, s := range f.service {
			if s == mesos.TaskState_TASK_RUNNING {
				running++
			}
		}
		if running == f.cfg.serviceTasks {
			select {
			case <-f.serviceUp:
			default:
				close(f.serviceUp)
			}
		}
		return
	}
	t := f.tenants[id]
	if t == nil || ovsTerminal(t.state) {
		return
	}
	t.state = st.GetState()
	switch {
	case st.GetState() == mesos.TaskState_TASK_RUNNING && t.running.IsZero():
		t.running = now
	case ovsTerminal(st.GetState()):
		t.ended = now
		f.ends[st.GetState().String()+" "+st.GetReason().String()]++
		if len(f.endMessages) < 8 && st.GetState() != mesos.TaskState_TASK_FINISHED {
			f.endMessages = append(f.endMessages, fmt.Sprintf("%+.2fs %s: %s", now.Sub(f.start).Seconds(), id, st.GetMessage()))
		}
	}
}

func (f *ovsFrameworks) describeService() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("launched %v, states %v, notes %v", f.serviceLaunched, f.service, f.serviceNotes)
}

// awaitServiceEnd waits for every service task to end.
func (f *ovsFrameworks) awaitServiceEnd(ctx context.Context) error {
	for {
		f.mu.Lock()
		ended := 0
		for _, s := range f.service {
			if ovsTerminal(s) {
				ended++
			}
		}
		f.mu.Unlock()
		if ended == f.cfg.serviceTasks {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the service's tasks did not end: %s", f.describeService())
		case <-time.After(50 * time.Millisecond): // polling interval, bounded by ctx
		}
	}
}

func (f *ovsFrameworks) result(mode string) *ovsRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &ovsRun{Mode: mode, RegularKilled: f.regularKilled, RevocableOffers: f.revocableOffers, Rescinds: f.rescinds,
		TenantsLaunched: len(f.tenants), FirstEvictionMs: -1, LastEvictionMs: -1, EvictionReasons: map[string]int{}}
	for k, v := range f.ends {
		r.EvictionReasons[k] = v
	}
	r.EvictionMessages = append([]string(nil), f.endMessages...)
	for _, t := range f.tenants {
		if t.running.IsZero() || !t.running.Before(f.rise) {
			continue
		}
		evicted := !t.ended.IsZero() && t.state != mesos.TaskState_TASK_FINISHED
		switch {
		case evicted && t.ended.Before(f.rise):
			r.EvictedBeforeRise++
		case evicted && t.ended.Before(f.end):
			r.TenantsAtRise++
			r.EvictedAfterRise++
			ms := float64(t.ended.Sub(f.rise)) / float64(time.Millisecond)
			if r.FirstEvictionMs < 0 || ms < r.FirstEvictionMs {
				r.FirstEvictionMs = ms
			}
			r.LastEvictionMs = max(r.LastEvictionMs, ms)
		default:
			r.TenantsAtRise++
		}
	}
	if len(f.serviceNotes) > 0 {
		fmt.Fprintf(os.Stderr, "mezzo bench oversubscription (%s): %s\n", mode, strings.Join(f.serviceNotes, "; "))
	}
	return r
}
