package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
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

// `mezzo bench launch`: N short command tasks (/bin/true) through one real
// master and one real agent in this process, launched by a framework
// written with the scheduler SDK that packs many tasks into each ACCEPT as
// offers arrive. It reports tasks per second from the first ACCEPT to the
// last TASK_FINISHED, and the latency from a task's ACCEPT to its
// TASK_RUNNING. Each task runs under the agent's command executor (this
// binary, `mezzo executor`), isolated with cgroups cpu and memory when the
// process is root and the v1 controllers are mounted.

// launchResult is the JSON `mezzo bench launch --json` prints.
type launchResult struct {
	Tasks     int     `json:"tasks"`
	Finished  int     `json:"finished"`
	Failed    int     `json:"failed"`
	PerSec    float64 `json:"per_s"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	ElapsedS  float64 `json:"elapsed_s"`
	Isolation string  `json:"isolation"`
	InFlight  int     `json:"max_in_flight"`
	Nproc     int     `json:"nproc"`
	Load1     string  `json:"load1"`
	// CPU (user+system) per task over the whole run, start-up and
	// shutdown included: this process (master, agent, framework), the
	// processes it started and waited for (executors, their init steps
	// and the tasks), and both. Unlike per_s these hardly depend on how
	// busy the machine is, so they compare builds on a shared machine.
	CPUMsPerTask      float64 `json:"cpu_ms_per_task"`
	BenchCPUMsPerTask float64 `json:"bench_cpu_ms_per_task"`
	TasksCPUMsPerTask float64 `json:"tasks_cpu_ms_per_task"`
}

// cpuTime is the user+system CPU of who (syscall.RUSAGE_SELF or
// RUSAGE_CHILDREN: every waited-for descendant), 0 if unknown.
func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchLaunch(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench launch", stderr)
	tasks := fs.Int("tasks", 1000, "number of tasks")
	inFlight := fs.Int("max_in_flight", 256, "most tasks launched and not yet finished at any time")
	isolation := fs.String("isolation", "auto", "'auto' (cgroups/cpu,cgroups/mem when root with cgroups mounted, else posix), or an --isolation value")
	workDir := fs.String("work_dir", "", "agent work dir (default: a new temporary directory, removed afterwards)")
	allocInterval := durationFlag(fs, "allocation_interval", 50*time.Millisecond, "the master's allocation interval")
	timeout := durationFlag(fs, "timeout", 10*time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("v", false, "log the master and agent to stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (master, agent, framework) to the file")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *tasks <= 0 || *inFlight <= 0 {
		fmt.Fprintln(stderr, "mezzo bench launch: --tasks and --max_in_flight must be positive")
		return 2
	}
	iso := *isolation
	if iso == "auto" {
		iso = autoIsolation()
	}
	dir := *workDir
	if dir == "" {
		d, err := os.MkdirTemp("", "mezzo-bench-launch-")
		if err != nil {
			fmt.Fprintf(stderr, "mezzo bench launch: %v\n", err)
			return 1
		}
		defer os.RemoveAll(d)
		dir = d
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if *verbose {
		log, _, _ = logger(stderr, "info", "text")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "mezzo bench launch: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "mezzo bench launch: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	self0, children0 := cpuTime(syscall.RUSAGE_SELF), cpuTime(syscall.RUSAGE_CHILDREN)
	res, err := runLaunchBench(ctx, launchBenchConfig{
		tasks: *tasks, inFlight: *inFlight, isolation: iso, dir: dir, allocInterval: *allocInterval, log: log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "mezzo bench launch: %v\n", err)
		return 1
	}
	// The cluster has stopped (and waited for its executors) by now.
	perTask := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(*tasks) }
	res.BenchCPUMsPerTask = perTask(cpuTime(syscall.RUSAGE_SELF) - self0)
	res.TasksCPUMsPerTask = perTask(cpuTime(syscall.RUSAGE_CHILDREN) - children0)
	res.CPUMsPerTask = res.BenchCPUMsPerTask + res.TasksCPUMsPerTask
	return report("launch", res, nil, *asJSON, stdout, stderr, func() string {
		return fmt.Sprintf("%d tasks (%d finished, %d failed) in %.2fs: %.1f tasks/s; ACCEPT→RUNNING p50 %.1f ms, p99 %.1f ms; CPU per task %.1f ms (this process %.1f, executors and tasks %.1f); isolation %s; nproc %d, load %s",
			res.Tasks, res.Finished, res.Failed, res.ElapsedS, res.PerSec, res.P50Ms, res.P99Ms,
			res.CPUMsPerTask, res.BenchCPUMsPerTask, res.TasksCPUMsPerTask, res.Isolation, res.Nproc, res.Load1)
	})
}

// autoIsolation is cgroups cpu and memory isolation when this process may
// create cgroups (root, v1 cpu and memory mounted), else the posix default.
func autoIsolation() string {
	if os.Geteuid() != 0 {
		return "posix/cpu,posix/mem"
	}
	for _, c := range []string{"cpu", "memory"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "cgroup.procs")); err != nil {
			return "posix/cpu,posix/mem"
		}
	}
	return "cgroups/cpu,cgroups/mem"
}

type launchBenchConfig struct {
	tasks, inFlight int
	isolation, dir  string
	allocInterval   time.Duration
	log             *slog.Logger
}

// runLaunchBench starts the master and agent, runs the framework and
// measures.
func runLaunchBench(ctx context.Context, cfg launchBenchConfig) (*launchResult, error) {
	clusterCtx, stopCluster := context.WithCancel(context.Background())
	defer stopCluster()

	m, err := startBenchMaster(clusterCtx, cfg.allocInterval, cfg.log)
	if err != nil {
		return nil, err
	}
	afs := flag.NewFlagSet("agent", flag.ContinueOnError)
	af := addAgentFlags(afs, true)
	af.master = m.addr()
	af.workDir = filepath.Join(cfg.dir, "agent")
	af.isolation = cfg.isolation
	af.cgroupsRoot = fmt.Sprintf("mezzo-bench-%d", os.Getpid())
	// Enough for every task in flight: the agent's own accounting adds
	// each command executor's 0.1 cpus and 32 MB on top.
	af.resources = fmt.Sprintf("cpus:%d;mem:%d;disk:1024", cfg.inFlight, 64*cfg.inFlight+1024)
	af.killOnExit = true
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a, err := startAgent(clusterCtx, af, aln, nil, cfg.log.With("component", "agent"))
	if err != nil {
		aln.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	defer func() {
		stopCluster()
		waitStopped(m, []*runningAgent{a})
		removeBenchCgroups(af.cgroupsRoot)
	}()
	if err := waitReady(ctx, m.addr(), m, 1, 30*time.Second); err != nil {
		return nil, err
	}
	res, err := runLaunchFramework(ctx, m.addr(), cfg)
	if err != nil {
		return nil, err
	}
	res.Isolation = cfg.isolation
	return res, nil
}

// removeBenchCgroups removes the (empty, by now) root cgroups the agent
// made for the benchmark.
func removeBenchCgroups(root string) {
	for _, c := range []string{"cpu", "cpuacct", "freezer", "memory"} {
		_ = os.Remove(filepath.Join("/sys/fs/cgroup", c, root))
	}
}

// launchFramework is the benchmark's scheduler: it launches tasks into
// offers (as many as fit and --max_in_flight allows) and records, per
// task, when its ACCEPT was sent and when it was RUNNING and FINISHED.
type launchFramework struct {
	cfg    launchBenchConfig
	client *scheduler.Client

	mu        sync.Mutex
	next      int // tasks launched so far
	inFlight  int
	accepted  map[string]time.Time
	running   map[string]time.Duration
	finished  int
	failed    int
	firstSent time.Time
	lastEnd   time.Time
	done      chan struct{}
	failures  []string
	acks      chan struct{} // semaphore of acknowledgements in flight
}

const (
	benchTaskCPUs = 0.01
	benchTaskMem  = 32
)

func runLaunchFramework(ctx context.Context, master string, cfg launchBenchConfig) (*launchResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &launchFramework{
		cfg:      cfg,
		accepted: make(map[string]time.Time, cfg.tasks),
		running:  make(map[string]time.Duration, cfg.tasks),
		done:     make(chan struct{}),
		acks:     make(chan struct{}, 64),
	}
	f.client = scheduler.New(scheduler.Config{
		Masters: []string{master},
		Framework: &mesos.FrameworkInfo{
			User: proto.String(currentUser()),
			Name: proto.String("mezzo bench launch"),
		},
	})
	events, err := f.client.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("scheduler stream ended: %v", f.client.Err())
			}
			switch ev.GetType() {
			case schedulerpb.Event_OFFERS:
				f.offers(ctx, ev.GetOffers().GetOffers())
			case schedulerpb.Event_UPDATE:
				f.update(ctx, ev.GetUpdate().GetStatus())
			}
		case <-f.done:
			return f.result(), nil
		case <-ctx.Done():
			f.mu.Lock()
			defer f.mu.Unlock()
			return nil, fmt.Errorf("gave up after %d of %d tasks finished (%d failed): %w", f.finished, cfg.tasks, f.failed, ctx.Err())
		}
	}
}

// offers packs tasks into each offer and accepts it in one call.
func (f *launchFramework) offers(ctx context.Context, offers []*mesos.Offer) {
	for _, o := range offers {
		var cpus, mem float64
		for _, r := range o.GetResources() {
			switch r.GetName() {
			case "cpus":
				cpus += r.GetScalar().GetValue()
			case "mem":
				mem += r.GetScalar().GetValue()
			}
		}
		fit := int(min(cpus/benchTaskCPUs, mem/benchTaskMem) + 1e-9)
		f.mu.Lock()
		n := min(fit, f.cfg.tasks-f.next, f.cfg.inFlight-f.inFlight)
		var alloc *mesos.Resource_AllocationInfo
		if len(o.GetResources()) > 0 {
			alloc = o.GetResources()[0].GetAllocationInfo()
		}
		tasks := make([]*mesos.TaskInfo, 0, max(n, 0))
		now := time.Now()
		for range max(n, 0) {
			id := fmt.Sprintf("t%06d", f.next)
			f.next++
			f.inFlight++
			f.accepted[id] = now
			tasks = append(tasks, benchTask(id, o.GetAgentId(), alloc))
		}
		if f.firstSent.IsZero() && len(tasks) > 0 {
			f.firstSent = now
		}
		f.mu.Unlock()
		var err error
		if len(tasks) == 0 {
			err = f.client.Decline(ctx, []*mesos.OfferID{o.GetId()}, scheduler.RefuseFor(0))
		} else {
			err = f.client.Launch(ctx, []*mesos.OfferID{o.GetId()}, tasks, scheduler.RefuseFor(0))
		}
		if err != nil && ctx.Err() == nil {
			f.fail("accept: " + err.Error())
		}
	}
}

// benchTask is /bin/true with the smallest allocatable resources, carrying
// the offer's allocation role (when the offer has one).
func benchTask(id string, agent *mesos.AgentID, alloc *mesos.Resource_AllocationInfo) *mesos.TaskInfo {
	scalar := func(name string, v float64) *mesos.Resource {
		return &mesos.Resource{
			Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(),
			Scalar:         &mesos.Value_Scalar{Value: proto.Float64(v)},
			AllocationInfo: alloc,
		}
	}
	return &mesos.TaskInfo{
		Name:      proto.String("bench " + id),
		TaskId:    &mesos.TaskID{Value: proto.String(id)},
		AgentId:   agent,
		Command:   &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("/bin/true"), Arguments: []string{"true"}},
		Resources: []*mesos.Resource{scalar("cpus", benchTaskCPUs), scalar("mem", benchTaskMem)},
	}
}

// update records a task's progress and acknowledges the update.
func (f *launchFramework) update(ctx context.Context, st *mesos.TaskStatus) {
	id := st.GetTaskId().GetValue()
	now := time.Now()
	f.mu.Lock()
	sent, known := f.accepted[id]
	switch st.GetState() {
	case mesos.TaskState_TASK_RUNNING:
		if known {
			if _, seen := f.running[id]; !seen {
				f.running[id] = now.Sub(sent)
			}
		}
	case mesos.TaskState_TASK_FINISHED:
		f.finished++
	case mesos.TaskState_TASK_FAILED, mesos.TaskState_TASK_KILLED, mesos.TaskState_TASK_LOST,
		mesos.TaskState_TASK_ERROR, mesos.TaskState_TASK_DROPPED, mesos.TaskState_TASK_GONE:
		f.failed++
		if len(f.failures) < 5 {
			f.failures = append(f.failures, id+": "+st.GetState().String()+": "+st.GetMessage())
		}
	}
	terminal := st.GetState() != mesos.TaskState_TASK_RUNNING && st.GetState() != mesos.TaskState_TASK_STARTING &&
		st.GetState() != mesos.TaskState_TASK_STAGING && st.GetState() != mesos.TaskState_TASK_KILLING
	if terminal && known {
		f.inFlight--
		f.lastEnd = now
		delete(f.accepted, id)
	}
	allDone := f.finished+f.failed >= f.cfg.tasks
	f.mu.Unlock()
	// Acknowledged off the event loop (bounded): one synchronous HTTP call
	// per update would make the framework, not the cluster, the
	// bottleneck.
	f.acks <- struct{}{}
	go func() {
		defer func() { <-f.acks }()
		if err := f.client.Acknowledge(ctx, st); err != nil && ctx.Err() == nil {
			f.fail("acknowledge: " + err.Error())
		}
	}()
	if allDone {
		select {
		case <-f.done:
		default:
			close(f.done)
		}
	}
}

func (f *launchFramework) fail(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failures) < 5 {
		f.failures = append(f.failures, msg)
	}
}

func (f *launchFramework) result() *launchResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	lat := make([]float64, 0, len(f.running))
	for _, d := range f.running {
		lat = append(lat, float64(d)/float64(time.Millisecond))
	}
	sort.Float64s(lat)
	elapsed := f.lastEnd.Sub(f.firstSent).Seconds()
	r := &launchResult{
		Tasks: f.cfg.tasks, Finished: f.finished, Failed: f.failed, ElapsedS: elapsed,
		P50Ms: percentile(lat, 0.50), P99Ms: percentile(lat, 0.99), InFlight: f.cfg.inFlight,
		Nproc: runtime.NumCPU(), Load1: load1(),
	}
	if elapsed > 0 {
		r.PerSec = float64(f.finished) / elapsed
	}
	if len(f.failures) > 0 {
		fmt.Fprintf(os.Stderr, "mezzo bench launch: failures (first %d): %s\n", len(f.failures), strings.Join(f.failures, "; "))
	}
	return r
}

// percentile of sorted values (nearest rank); 0 when empty.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// load1 is the 1-minute load average ("" where unknown).
func load1() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return ""
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return strconv.Itoa(os.Geteuid())
}

// startBenchMaster starts a master in this process on a free loopback
// port for a benchmark. Its flags are set by name, as a user would: the
// registry is in memory (not what is measured), and the allocation
// interval bounds how soon freed resources are offered again.
func startBenchMaster(ctx context.Context, allocInterval time.Duration, log *slog.Logger) (*runningMaster, error) {
	mfs := flag.NewFlagSet("master", flag.ContinueOnError)
	mf := addMasterFlags(mfs)
	for k, v := range map[string]string{"registry": "in_memory", "allocation_interval": allocInterval.String()} {
		if mfs.Lookup(k) != nil {
			if err := mfs.Set(k, v); err != nil {
				return nil, fmt.Errorf("master flag --%s: %w", k, err)
			}
		}
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m, err := startMaster(ctx, mf, mfs, mln, log.With("component", "master"))
	if err != nil {
		mln.Close()
		return nil, fmt.Errorf("master: %w", err)
	}
	return m, nil
}
