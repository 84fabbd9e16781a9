package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	simbench "mezzo/sim/bench"
)

// clusterResult is `mezzo bench cluster --json`: the emulation's
// measurements and what the run cost the master process and this one.
type clusterResult struct {
	*simbench.LaunchResult
	AllocationInterval string `json:"allocation_interval"`
	Procs              int    `json:"procs"`
	// CPU from the frameworks' release until every task was placed, of
	// the master process, per task: what a placement cost it, status
	// updates arriving meanwhile included.
	MasterCPUMSPerPlacement float64 `json:"master_cpu_ms_per_placement"`
	// The same for this process (the emulated agents and frameworks).
	EmulationCPUMSPerPlacement float64 `json:"emulation_cpu_ms_per_placement"`
	// CPU from the frameworks' release until every task ran: the master
	// process, and this one (the emulated agents and frameworks), in all
	// and per task.
	MasterCPUMS           float64 `json:"master_cpu_ms"`
	EmulationCPUMS        float64 `json:"emulation_cpu_ms"`
	MasterCPUMSPerTask    float64 `json:"master_cpu_ms_per_task"`
	EmulationCPUMSPerTask float64 `json:"emulation_cpu_ms_per_task"`
	Load1                 string  `json:"load1"`
}

// benchCluster runs `mezzo bench cluster`: one `mezzo master` process on
// loopback, N emulated agents and F emulated frameworks in this process
// (package sim); every framework launches its tasks as fast as offers
// allow, all released at once, while a probe framework times single task
// launches. Reports placements per second and the probe's latency.
func benchCluster(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench cluster", stderr)
	agents := fs.Int("agents", 10000, "emulated agents")
	frameworks := fs.Int("frameworks", 100, "emulated frameworks")
	tasks := fs.Int("tasks", 500, "tasks each framework launches")
	timeout := durationFlag(fs, "timeout", 10*time.Minute, "give up on a phase (registration, placement, running) after this long")
	taskRes := fs.String("task_resources", "cpus:0.1;mem:32", "each task's resources")
	agentRes := fs.String("agent_resources", "cpus:8;mem:16384;disk:102400;ports:[31000-32000]", "each emulated agent's resources")
	allocInterval := durationFlag(fs, "allocation_interval", time.Second, "the master's --allocation_interval")
	probeInterval := durationFlag(fs, "probe_interval", 100*time.Millisecond, "time between probe tasks")
	probes := fs.Int("probes", 50, "probe tasks to time once every task runs")
	dir := fs.String("dir", "", "work directory for the master (default: a temporary one, removed afterwards)")
	masterBin := fs.String("master_bin", "", "the mezzo binary to run the master with (default: this one), to compare builds under the same emulation")
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("v", false, "log progress to stderr")
	cpuProfile := fs.String("cpuprofile", "",
		"write CPU profiles of the run: PREFIX.bench.pprof for this process (from the release until every task ran) and PREFIX.<port>.pprof for the master (the first --profile_seconds after the release; the master runs with --profiling)")
	profileSeconds := fs.Int("profile_seconds", 10, "length of the master's CPU profile with --cpuprofile")
	tune := emulationFlags(fs, max(1, runtime.NumCPU()/2))
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *agents < 1 || *frameworks < 1 || *tasks < 1 {
		fmt.Fprintln(stderr, "mezzo bench cluster: --agents, --frameworks and --tasks must be at least 1")
		return 2
	}
	if err := tune(); err != nil {
		fmt.Fprintln(stderr, "mezzo bench cluster:", err)
		return 2
	}
	logf := func(string, ...any) {}
	if *verbose {
		logf = func(format string, args ...any) { fmt.Fprintf(stderr, "bench cluster: "+format+"\n", args...) }
	}
	res, err := runClusterBench(clusterBench{
		cfg: simbench.LaunchConfig{
			Config: simbench.Config{Agents: *agents, Frameworks: *frameworks, TasksPerFramework: *tasks,
				TaskResources: *taskRes, AgentResources: *agentRes, Timeout: *timeout, Logf: logf},
			ProbeInterval: *probeInterval, Probes: *probes,
		},
		allocInterval: *allocInterval, dir: *dir, cpuProfile: *cpuProfile, profileSeconds: *profileSeconds, masterBin: *masterBin,
	})
	return report("cluster", res, err, *asJSON, stdout, stderr, func() string {
		return fmt.Sprintf("%d agents, %d frameworks, %d tasks: %.0f tasks/s placed (%.0f/s running), probe p50 %.1f ms p99 %.1f ms; master CPU %.3f ms per placement, %.3f ms per task running; emulation %.3f ms per task",
			res.Agents, res.Frameworks, res.Tasks, res.TasksPerS, res.RunningPerS, res.ProbeP50MS, res.ProbeP99MS,
			res.MasterCPUMSPerPlacement, res.MasterCPUMSPerTask, res.EmulationCPUMSPerTask)
	})
}

type clusterBench struct {
	cfg            simbench.LaunchConfig
	allocInterval  time.Duration
	dir            string
	cpuProfile     string
	profileSeconds int
	masterBin      string // "" for this executable
}

func runClusterBench(b clusterBench) (*clusterResult, error) {
	bin := b.masterBin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		bin = exe
	}
	dir, done, err := benchDir(b.dir, "mezzo-bench-cluster-")
	if err != nil {
		return nil, err
	}
	defer done()
	lns, err := listenMasters("127.0.0.1", 0, 1)
	if err != nil {
		return nil, err
	}
	addr := lns[0].Addr().String()
	lns[0].Close() // the master process binds it
	m, err := spawnMaster(bin, addr, filepath.Join(dir, "master"),
		"--allocation_interval="+b.allocInterval.String(), "--profiling="+strconv.FormatBool(b.cpuProfile != ""))
	if err != nil {
		return nil, err
	}
	defer m.kill()
	ctx, cancel := context.WithTimeout(context.Background(), max(30*time.Minute, 4*b.cfg.Timeout))
	defer cancel()
	if _, err := waitLeading(ctx, []string{addr}, "", 30*time.Second); err != nil {
		return nil, err
	}
	b.cfg.Logf("master up at %s", addr)

	var (
		cpu0, cpu1  map[string]time.Duration
		cpuPlaced   map[string]time.Duration
		profiles    sync.WaitGroup
		stopProfile = func() {}
		masters     = []*benchMaster{m}
	)
	defer profiles.Wait()
	defer func() { stopProfile() }()
	b.cfg.Masters = []string{addr}
	b.cfg.OnStart = func() {
		cpu0 = processCPU(masters)
		if b.cpuProfile != "" {
			stopProfile = profileRun(ctx, b.cpuProfile, b.profileSeconds, masters, b.cfg.Logf, &profiles)
		}
	}
	b.cfg.OnPlaced = func() { cpuPlaced = processCPU(masters) }
	b.cfg.OnEnd = func() {
		cpu1 = processCPU(masters)
		stopProfile()
	}
	lr, err := simbench.Launch(ctx, b.cfg)
	if err != nil {
		return nil, err
	}
	res := &clusterResult{LaunchResult: lr, AllocationInterval: b.allocInterval.String(), Procs: runtime.GOMAXPROCS(0), Load1: load1()}
	res.MasterCPUMSPerPlacement = float64((cpuPlaced[addr] - cpu0[addr]).Microseconds()) / 1000 / float64(lr.Tasks)
	res.EmulationCPUMSPerPlacement = float64((cpuPlaced[""] - cpu0[""]).Microseconds()) / 1000 / float64(lr.Tasks)
	res.MasterCPUMS = float64((cpu1[addr] - cpu0[addr]).Microseconds()) / 1000
	res.EmulationCPUMS = float64((cpu1[""] - cpu0[""]).Microseconds()) / 1000
	res.MasterCPUMSPerTask = res.MasterCPUMS / float64(lr.Tasks)
	res.EmulationCPUMSPerTask = res.EmulationCPUMS / float64(lr.Tasks)
	return res, nil
}
