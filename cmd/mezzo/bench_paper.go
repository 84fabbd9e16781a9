package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"mezzo/sim/paper"
)

// benchPaper is `mezzo bench paper <experiment>`: the Mesos paper's
// experiments on emulated agents against real `mezzo master` processes
// (sim/paper; docs/paper.md). `make paper` runs each and plots them.
func benchPaper(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: mezzo bench paper locality|sharing|overhead|failover [flags]"
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	name := args[0]
	fs := newFlagSet("bench paper "+name, stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("v", false, "log progress to stderr")
	dir := fs.String("dir", "", "work directory for the masters (default: a temporary one, removed afterwards)")
	seed := fs.Uint64("seed", 1, "seed of the workloads (same seed, same jobs, blocks and durations)")
	cpuProfile := fs.String("cpuprofile", "", "write this process's CPU profile (the emulated agents and frameworks) to this file")
	// The overhead experiment's 50,000 agents and their task churn need
	// more than one processor to keep up with the master; on one, their
	// stream readers lag and the probes measure the emulation.
	procs := max(1, runtime.NumCPU()/2)
	if name == "overhead" {
		procs = runtime.NumCPU()
	}
	tune := emulationFlags(fs, procs)
	var run func(ctx context.Context, env paper.Env) (any, error)
	switch name {
	case "locality":
		c := paper.LocalityConfig{}
		fs.IntVar(&c.Agents, "agents", 93, "emulated agents (the paper's 93 EC2 nodes)")
		fs.StringVar(&c.AgentResources, "agent_resources", "cpus:4;mem:15360;disk:102400;ports:[31000-32000]", "each agent's resources (a cpu is a slot)")
		fs.IntVar(&c.Frameworks, "frameworks", 16, "batch frameworks (the paper's 16 Hadoop instances)")
		fs.IntVar(&c.Tasks, "tasks", 60, "tasks (blocks) per framework's job")
		fs.IntVar(&c.Replication, "replication", 3, "agents holding each block")
		local := durationFlag(fs, "local_task", 4*time.Second, "a local task's mean duration")
		fs.Float64Var(&c.RemoteFactor, "remote_factor", 2, "a remote task takes this many times as long")
		delays := fs.String("delays", "0s,1s,5s", "delay-scheduling waits to try on the shared cluster")
		run = func(ctx context.Context, env paper.Env) (any, error) {
			c.LocalTask, c.Seed = *local, *seed
			ds, err := parseDurations(*delays)
			if err != nil {
				return nil, fmt.Errorf("--delays: %w", err)
			}
			c.Delays = ds
			return paper.Locality(ctx, env, c)
		}
	case "sharing":
		c := paper.SharingConfig{}
		fs.IntVar(&c.Agents, "agents", 96, "emulated agents, a multiple of 4 (the paper's 96 EC2 nodes)")
		window := durationFlag(fs, "window", 60*time.Second, "when the workloads arrive")
		fs.Float64Var(&c.TimeScale, "time_scale", 1, "multiply every task duration and the window")
		run = func(ctx context.Context, env paper.Env) (any, error) {
			c.Window, c.Seed = *window, *seed
			return paper.Sharing(ctx, env, c)
		}
	case "overhead":
		c := paper.OverheadConfig{}
		agents := fs.String("agents", "1000,5000,10000,20000,50000", "cluster sizes to measure")
		fs.IntVar(&c.Frameworks, "frameworks", 200, "frameworks keeping the cluster busy")
		fs.IntVar(&c.Probes, "probes", 50, "probe frameworks per cluster size")
		probeTimeout := durationFlag(fs, "probe_timeout", 30*time.Second, "a probe whose task has not run after this long counts as taking this long")
		mean := durationFlag(fs, "task_mean", 30*time.Second, "the busy frameworks' mean task duration")
		sd := durationFlag(fs, "task_stddev", 10*time.Second, "its standard deviation")
		interval := durationFlag(fs, "allocation_interval", time.Second, "the master's --allocation_interval")
		fs.Float64Var(&c.MaxChurn, "max_churn", 100, "cap on tasks ending per second: past it, tasks run longer than --task_mean (0: the paper's load at every size)")
		run = func(ctx context.Context, env paper.Env) (any, error) {
			ns, err := parseInts(*agents)
			if err != nil {
				return nil, fmt.Errorf("--agents: %w", err)
			}
			c.Agents, c.TaskMean, c.TaskStdDev, c.Seed, c.ProbeTimeout = ns, *mean, *sd, *seed, *probeTimeout
			c.MasterFlags = []string{"--allocation_interval=" + interval.String()}
			return paper.Overhead(ctx, env, c)
		}
	case "failover":
		agents := fs.String("agents", "1000,5000,10000,20000,40000", "cluster sizes to measure")
		frameworks := fs.Int("frameworks", 200, "emulated frameworks (the paper's 200)")
		hold := durationFlag(fs, "hold", 5*time.Second, "run each registered cluster this long before the kill")
		run = func(ctx context.Context, env paper.Env) (any, error) {
			ns, err := parseInts(*agents)
			if err != nil {
				return nil, fmt.Errorf("--agents: %w", err)
			}
			res := paper.NewFailoverResult()
			for _, n := range ns {
				env.Logf("failover: %d agents, %d frameworks", n, *frameworks)
				r, err := runFailoverBench(failoverBench{agents: n, frameworks: *frameworks, masters: 3,
					raftTimeout: 500 * time.Millisecond, backoff: time.Second, hold: *hold, logf: env.Logf})
				if err != nil {
					return nil, fmt.Errorf("%d agents: %w", n, err)
				}
				env.Logf("failover: %d agents: MTTR %.0f ms (election %.0f ms, %d SUBSCRIBEs after the kill)", n, r.MTTRMS, r.ElectionMS, r.ReregisterAttempts)
				res.Points = append(res.Points, paper.FailoverPoint{Agents: n, Frameworks: *frameworks, MTTRMS: r.MTTRMS,
					ElectionMS: r.ElectionMS, AgentsMS: r.AgentsMS, FrameworksMS: r.FrameworksMS, ReregisterAttempts: r.ReregisterAttempts})
			}
			return res, nil
		}
	default:
		fmt.Fprintf(stderr, "mezzo bench paper: unknown experiment %q\n%s\n", name, usage)
		return 2
	}
	if code := parseFlags(fs, args[1:]); code >= 0 {
		return code
	}
	if err := tune(); err != nil {
		fmt.Fprintf(stderr, "mezzo bench paper: %v\n", err)
		return 2
	}
	logf := func(string, ...any) {}
	if *verbose {
		logf = func(format string, args ...any) { fmt.Fprintf(stderr, "bench paper: "+format+"\n", args...) }
	}
	env, cleanup, err := paperEnv(*dir, logf)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo bench paper: %v\n", err)
		return 1
	}
	defer cleanup()
	ctx, cancel := signalContext()
	defer cancel()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mezzo bench paper: --cpuprofile: %v\n", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	t0 := time.Now()
	res, err := run(ctx, env)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo bench paper %s: %v\n", name, err)
		return 1
	}
	logf("%s done in %.0fs", name, time.Since(t0).Seconds())
	ff := frameworkFlags{asJSON: *asJSON}
	return ff.report(stdout, res, false, func() { printPaper(stdout, res) })
}

// paperEnv starts each experiment's masters as `mezzo master` processes
// (this binary) on free loopback ports, under dir.
func paperEnv(dir string, logf func(string, ...any)) (paper.Env, func(), error) {
	bin, err := os.Executable()
	if err != nil {
		return paper.Env{}, nil, err
	}
	cleanup := func() {}
	if dir == "" {
		d, err := os.MkdirTemp("", "mezzo-bench-paper-")
		if err != nil {
			return paper.Env{}, nil, err
		}
		dir, cleanup = d, func() { os.RemoveAll(d) }
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return paper.Env{}, nil, err
	}
	var n atomic.Int64
	start := func(ctx context.Context, flags ...string) (string, func(), error) {
		lns, err := listenMasters("127.0.0.1", 0, 1)
		if err != nil {
			return "", nil, err
		}
		addr := lns[0].Addr().String()
		lns[0].Close() // the master process binds it
		m, err := spawnMaster(bin, addr, filepath.Join(dir, "master"+strconv.FormatInt(n.Add(1), 10)), flags...)
		if err != nil {
			return "", nil, err
		}
		if _, err := waitLeading(ctx, []string{addr}, "", 30*time.Second); err != nil {
			m.kill()
			return "", nil, err
		}
		return addr, m.kill, nil
	}
	return paper.Env{Master: start, Logf: logf}, cleanup, nil
}

// printPaper prints an experiment's result as a short table.
func printPaper(w io.Writer, res any) {
	switch r := res.(type) {
	case *paper.LocalityResult:
		fmt.Fprintf(w, "%-30s %9s %9s\n", "scenario", "locality", "job time")
		for _, s := range r.Scenarios {
			fmt.Fprintf(w, "%-30s %8.1f%% %8.1fs\n", s.Name, 100*s.Locality, s.JobSeconds)
		}
	case *paper.SharingResult:
		fmt.Fprintf(w, "%-8s %12s %12s %8s\n", "kind", "static", "shared", "speedup")
		for _, k := range paper.Kinds {
			s, m := r.Static.Kinds[k], r.Shared.Kinds[k]
			if k == paper.KindElastic {
				fmt.Fprintf(w, "%-8s %11.0f%% %11.0f%% %8.2f  (demand met)\n", k, 100*s.DemandMet, 100*m.DemandMet, r.Speedup[k])
				continue
			}
			fmt.Fprintf(w, "%-8s %11.1fs %11.1fs %8.2f  (sum of %d job times)\n", k, s.SumSeconds, m.SumSeconds, r.Speedup[k], m.Jobs)
		}
		fmt.Fprintf(w, "utilization: static %.0f%%, shared %.0f%%\n", 100*r.Static.Utilization, 100*r.Shared.Utilization)
	case *paper.OverheadResult:
		fmt.Fprintf(w, "%8s %10s %10s %10s %10s\n", "agents", "p50 ms", "p99 ms", "max ms", "tasks/s")
		for _, p := range r.Points {
			fmt.Fprintf(w, "%8d %10.1f %10.1f %10.1f %10.0f\n", p.Agents, p.P50MS, p.P99MS, p.MaxMS, p.TasksPerSecond)
		}
	case *paper.FailoverResult:
		fmt.Fprintf(w, "%8s %10s %12s\n", "agents", "MTTR s", "election s")
		for _, p := range r.Points {
			fmt.Fprintf(w, "%8d %10.2f %12.2f\n", p.Agents, p.MTTRMS/1000, p.ElectionMS/1000)
		}
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q is not a duration like 1s", f)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, errors.New("no delays given")
	}
	return out, nil
}
