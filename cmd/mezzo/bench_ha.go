package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	regbench "mezzo/replog/bench"
	simbench "mezzo/sim/bench"
)

// benchRegistrar runs `mezzo bench registrar`: admissions through the
// registrar over a one-node replicated log on local disk, then a restart.
func benchRegistrar(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench registrar", stderr)
	agents := fs.Int("agents", 50000, "agents to admit")
	concurrency := fs.Int("concurrency", 128, "admissions in flight at once (agents registering concurrently)")
	dir := fs.String("dir", "", "empty directory for the registry (default: a temporary one, removed afterwards)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	res, err := regbench.Run(regbench.Config{Agents: *agents, Dir: *dir, Concurrency: *concurrency})
	return report("registrar", res, err, *asJSON, stdout, stderr, func() string {
		return fmt.Sprintf("%d agents: %.0f admissions/s (p50 %.2f ms, p99 %.2f ms, %d writes, largest batch %d), recovery %.1f ms, %d bytes on disk",
			res.Config.Agents, res.AdmitPerS, res.AdmitP50MS, res.AdmitP99MS, res.Writes, res.LargestBatch, res.RecoverMS, res.Bytes)
	})
}

// failoverResult is `mezzo bench failover --json`.
type failoverResult struct {
	Agents     int `json:"agents"`
	Frameworks int `json:"frameworks"`
	Masters    int `json:"masters"`
	// ElectionMS is from the SIGKILL of the leader until another master
	// leads: the new leader's elected_time (when it began serving, by its
	// own clock, the same machine's), so that the answer's trip through
	// the re-registration storm does not count.
	ElectionMS float64 `json:"election_ms"`
	// MTTRMS is from the SIGKILL until every agent and framework is
	// registered with the new leader.
	MTTRMS float64 `json:"mttr_ms"`
	// AgentsMS and FrameworksMS split MTTR.
	AgentsMS     float64 `json:"agents_reregistered_ms"`
	FrameworksMS float64 `json:"frameworks_resubscribed_ms"`
	// RegisterSeconds is the initial registration of the whole fleet.
	RegisterSeconds float64 `json:"register_seconds"`
	ReregisterP50MS float64 `json:"reregister_p50_ms"`
	ReregisterP99MS float64 `json:"reregister_p99_ms"`
	// ReregisterAttempts counts agent SUBSCRIBEs after the kill.
	ReregisterAttempts int64  `json:"reregister_attempts"`
	RaftTimeout        string `json:"raft_timeout"`
	RaftLeaseTimeout   string `json:"raft_lease_timeout"`
	Backoff            string `json:"registration_backoff"`
	Procs              int    `json:"procs"`
	Killed             string `json:"killed"`
	NewLeader          string `json:"new_leader"`
	// CPU used from the kill until recovery: by the new leader, by the
	// other surviving masters together, and by this process (the emulated
	// agents and frameworks). They share the machine's cores, so these say
	// where the recovery's time went, more steadily than mttr_ms does.
	LeaderCPUMS    float64 `json:"leader_cpu_ms"`
	FollowersCPUMS float64 `json:"followers_cpu_ms"`
	EmulationCPUMS float64 `json:"emulation_cpu_ms"`
	// Sim is the emulation's own result (process costs, master metrics).
	Sim *simbench.FailoverResult `json:"sim,omitempty"`
}

// benchFailover runs `mezzo bench failover`: three `mezzo master`
// processes on loopback, N emulated agents and F emulated frameworks
// (package sim) in this process; SIGKILL the leader and measure the
// election and the time until everyone is back with the new leader.
func benchFailover(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench failover", stderr)
	agents := fs.Int("agents", 10000, "emulated agents")
	frameworks := fs.Int("frameworks", 200, "emulated frameworks")
	nMasters := fs.Int("masters", 3, "masters (odd)")
	basePort := fs.Int("port", 0, "first master HTTP port (0: free ports); Raft ports are +1000")
	raftTimeout := durationFlag(fs, "raft_timeout", 500*time.Millisecond, "the masters' --raft_timeout")
	raftLease := durationFlag(fs, "raft_lease_timeout", 0, "the masters' --raft_lease_timeout (0: their default)")
	backoff := durationFlag(fs, "registration_backoff", time.Second, "the emulated agents' registration backoff factor (Mesos default 1secs)")
	hold := durationFlag(fs, "hold", 5*time.Second, "run the registered cluster this long before the kill")
	dir := fs.String("dir", "", "work directory for the masters (default: a temporary one, removed afterwards)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("v", false, "log progress to stderr")
	cpuProfile := fs.String("cpuprofile", "",
		"write CPU profiles of the recovery: PREFIX.bench.pprof for this process (kill to recovery) and PREFIX.<port>.pprof for each surviving master (the first --profile_seconds after the kill; the masters run with --profiling)")
	profileSeconds := fs.Int("profile_seconds", 8, "length of the masters' CPU profiles with --cpuprofile")
	tune := emulationFlags(fs, max(1, runtime.NumCPU()/2))
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if err := tune(); err != nil {
		fmt.Fprintf(stderr, "mezzo bench failover: %v\n", err)
		return 2
	}
	if *nMasters < 3 || *nMasters%2 == 0 {
		fmt.Fprintln(stderr, "mezzo bench failover: --masters must be odd and at least 3")
		return 2
	}
	logf := func(string, ...any) {}
	if *verbose {
		logf = func(format string, args ...any) { fmt.Fprintf(stderr, "bench failover: "+format+"\n", args...) }
	}
	res, err := runFailoverBench(failoverBench{
		agents: *agents, frameworks: *frameworks, masters: *nMasters, basePort: *basePort,
		raftTimeout: *raftTimeout, raftLease: *raftLease, backoff: *backoff, hold: *hold, dir: *dir, logf: logf,
		cpuProfile: *cpuProfile, profileSeconds: *profileSeconds,
	})
	return report("failover", res, err, *asJSON, stdout, stderr, func() string {
		return fmt.Sprintf("%d agents, %d frameworks, %d masters: election %.0f ms, MTTR %.0f ms (agents %.0f ms, frameworks %.0f ms)",
			res.Agents, res.Frameworks, res.Masters, res.ElectionMS, res.MTTRMS, res.AgentsMS, res.FrameworksMS)
	})
}

type failoverBench struct {
	agents, frameworks, masters, basePort int
	raftTimeout, raftLease, backoff, hold time.Duration
	dir                                   string
	logf                                  func(string, ...any)
	cpuProfile                            string // file name prefix; "" for none
	profileSeconds                        int
}

// benchMaster is one `mezzo master` process of the bench.
type benchMaster struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func runFailoverBench(b failoverBench) (*failoverResult, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, done, err := benchDir(b.dir, "mezzo-bench-failover-")
	if err != nil {
		return nil, err
	}
	defer done()
	lns, err := listenMasters("127.0.0.1", b.basePort, b.masters)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(lns))
	for i, ln := range lns {
		addrs[i] = ln.Addr().String()
		ln.Close() // the master process binds it
	}
	var masters []*benchMaster
	defer func() {
		for _, m := range masters {
			m.kill()
		}
	}()
	for i, addr := range addrs {
		m, err := spawnMaster(bin, addr, filepath.Join(dir, fmt.Sprintf("master%d", i+1)),
			"--masters="+strings.Join(addrs, ","), "--quorum="+strconv.Itoa(len(addrs)/2+1),
			"--raft_timeout="+b.raftTimeout.String(), "--raft_lease_timeout="+b.raftLease.String(),
			"--profiling="+strconv.FormatBool(b.cpuProfile != ""))
		if err != nil {
			return nil, err
		}
		masters = append(masters, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := waitLeading(ctx, addrs, "", 30*time.Second); err != nil {
		return nil, err
	}
	b.logf("masters up at %s", strings.Join(addrs, ","))

	res := &failoverResult{Agents: b.agents, Frameworks: b.frameworks, Masters: b.masters,
		RaftTimeout: b.raftTimeout.String(), RaftLeaseTimeout: b.raftLease.String(), Backoff: b.backoff.String(), Procs: runtime.GOMAXPROCS(0)}
	var (
		electionMu sync.Mutex
		electionCh = make(chan error, 1)
		// CPU used so far by master address; "" is this process.
		cpuAtKill, cpuAtRecovery map[string]time.Duration
		profiles                 sync.WaitGroup
		stopProfile              = func() {}
	)
	defer profiles.Wait()
	defer func() { stopProfile() }()
	kill := func(ctx context.Context) error {
		leader, err := waitLeading(ctx, addrs, "", 10*time.Second)
		if err != nil {
			return err
		}
		var victim *benchMaster
		for _, m := range masters {
			if m.addr == leader {
				victim = m
			}
		}
		killedAt := time.Now()
		victim.kill()
		res.Killed = leader
		cpuAtKill = processCPU(masters)
		if b.cpuProfile != "" {
			stopProfile = profileRun(ctx, b.cpuProfile, b.profileSeconds, masters, b.logf, &profiles)
		}
		go func() {
			next, err := waitLeading(ctx, addrs, leader, time.Minute)
			if err == nil {
				var elected time.Time
				if elected, err = electedTime(ctx, next); err == nil {
					electionMu.Lock()
					res.ElectionMS = float64(elected.Sub(killedAt).Microseconds()) / 1000
					res.NewLeader = next
					electionMu.Unlock()
				}
			}
			electionCh <- err
		}()
		return nil
	}
	sim, err := simbench.Failover(ctx, simbench.Config{
		Agents: b.agents, Frameworks: b.frameworks, Masters: addrs,
		Hold: b.hold, RegistrationBackoff: b.backoff, Logf: b.logf,
		OnRecovered: func() {
			cpuAtRecovery = processCPU(masters)
			stopProfile()
		},
	}, kill)
	if err != nil {
		return nil, err
	}
	if err := <-electionCh; err != nil {
		return nil, fmt.Errorf("no new leader: %w", err)
	}
	electionMu.Lock()
	defer electionMu.Unlock()
	res.MTTRMS = sim.Seconds * 1000
	res.AgentsMS = sim.AgentsSeconds * 1000
	res.FrameworksMS = sim.FrameworksResubSeconds * 1000
	res.RegisterSeconds = sim.RegisterSeconds
	res.ReregisterP50MS = sim.ReregisterP50 * 1000
	res.ReregisterP99MS = sim.ReregisterP99 * 1000
	res.ReregisterAttempts = sim.ReregisterAttempts
	res.Sim = sim
	for addr, at := range cpuAtRecovery {
		ms := float64((at - cpuAtKill[addr]).Microseconds()) / 1000
		switch addr {
		case "":
			res.EmulationCPUMS = ms
		case res.NewLeader:
			res.LeaderCPUMS = ms
		default:
			res.FollowersCPUMS += ms
		}
	}
	return res, nil
}

// profileRun starts this process's CPU profile, which the returned
// function ends (calls after the first do nothing), and fetches each
// running master's for seconds (from /debug/pprof/profile: the masters run
// with --profiling), into files named PREFIX.bench.pprof and
// PREFIX.<port>.pprof.
func profileRun(ctx context.Context, prefix string, seconds int, masters []*benchMaster, logf func(string, ...any), wg *sync.WaitGroup) (stop func()) {
	stop = func() {}
	if f, err := os.Create(prefix + ".bench.pprof"); err != nil {
		logf("cpu profile: %v", err)
	} else if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		logf("cpu profile: %v", err)
	} else {
		stop = sync.OnceFunc(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
	for _, m := range masters {
		select {
		case <-m.done:
			continue
		default:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, port, _ := net.SplitHostPort(m.addr)
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", m.addr, seconds)
			if err := download(ctx, url, prefix+"."+port+".pprof"); err != nil {
				logf("cpu profile of %s: %v", m.addr, err)
			}
		}()
	}
	return stop
}

// download GETs url into the file name.
func download(ctx context.Context, url, name string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// processCPU returns the CPU used so far by each running master, by
// address, and by this process (key "").
func processCPU(masters []*benchMaster) map[string]time.Duration {
	out := map[string]time.Duration{"": cpuTime(syscall.RUSAGE_SELF)}
	for _, m := range masters {
		select {
		case <-m.done:
			continue
		default:
		}
		if d, err := procCPU(m.cmd.Process.Pid); err == nil {
			out[m.addr] = d
		}
	}
	return out
}

// procCPU is the user+system CPU of process pid so far, from
// /proc/pid/stat (utime and stime, in the kernel's USER_HZ, 100 on Linux).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from the
	// closing parenthesis: state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime %q %q", pid, f[11], f[12])
	}
	const userHZ = 100
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// emulationFlags adds --procs (default procs) and --gogc, for benches
// whose emulated agents and frameworks share the machine with the masters
// they measure; the returned function applies them.
func emulationFlags(fs *flag.FlagSet, procs0 int) (apply func() error) {
	procs := fs.Int("procs", procs0, "GOMAXPROCS of this process, which runs the emulated agents and frameworks (not of the masters)")
	gogc := fs.Int("gogc", 400, "GOGC of this process, which runs the emulated agents and frameworks (not of the masters)")
	return func() error {
		if *procs < 1 {
			return errors.New("--procs must be at least 1")
		}
		// The emulated fleet shares the machine with the masters it
		// measures (real agents run elsewhere); collecting its 20,000
		// goroutines' worth of garbage less often leaves more CPU to the
		// masters.
		debug.SetGCPercent(*gogc)
		// Real agents run on other machines. On this one the emulation
		// gets (by default) at most half the processors, so that it cannot
		// crowd out the masters it measures; at one processor it also
		// spends less on the Go scheduler (a 40,000-agent recovery took
		// 15% less of its CPU).
		runtime.GOMAXPROCS(*procs)
		return nil
	}
}

// spawnMaster starts `bin master` on addr with its work directory mdir
// (its log beside it, mdir.log) and extra flags, in its own process group.
func spawnMaster(bin, addr, mdir string, extra ...string) (*benchMaster, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(mdir + ".log")
	if err != nil {
		return nil, err
	}
	args := append([]string{"master", "--ip=127.0.0.1", "--port=" + port, "--work_dir=" + mdir, "--logging_level=warn"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	m := &benchMaster{addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		logFile.Close()
		close(m.done)
	}()
	return m, nil
}

func (m *benchMaster) kill() {
	if m.cmd.Process == nil {
		return
	}
	select {
	case <-m.done:
		return
	default:
	}
	syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	<-m.done
}

// electedTime asks the master at addr when it was elected (GET_MASTER).
func electedTime(ctx context.Context, addr string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/v1", strings.NewReader(`{"type":"GET_MASTER"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return time.Time{}, err
	}
	defer resp.Body.Close()
	var m struct {
		GetMaster struct {
			ElectedTime float64 `json:"elected_time"`
		} `json:"get_master"`
	}
	if resp.StatusCode != http.StatusOK {
		return time.Time{}, fmt.Errorf("GET_MASTER at %s: %s", addr, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return time.Time{}, fmt.Errorf("GET_MASTER at %s: %w", addr, err)
	}
	if m.GetMaster.ElectedTime == 0 {
		return time.Time{}, fmt.Errorf("GET_MASTER at %s: no elected_time", addr)
	}
	sec, frac := math.Modf(m.GetMaster.ElectedTime)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

// waitLeading polls the masters (except skip) until one serves the
// scheduler API as the leader, and returns its address. A follower
// answers 307 or 503 before anything else; the leader answers an empty
// POST with a 4xx about the request itself.
func waitLeading(ctx context.Context, addrs []string, skip string, timeout time.Duration) (string, error) {
	client := &http.Client{
		Timeout:       500 * time.Millisecond,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	deadline := time.Now().Add(timeout)
	for {
		for _, a := range addrs {
			if a == skip {
				continue
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a+"/api/v1/scheduler", strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 400 && resp.StatusCode < 500 {
				return a, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no master other than %q leads after %v", skip, timeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(2 * time.Millisecond): // polling interval, bounded by the deadline
		}
	}
}
