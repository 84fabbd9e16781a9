package agent

// End-to-end tests with real processes: a `mezzo master`, a `mezzo agent`
// (with cgroups isolation when this host allows it) and `mezzo run`, all
// the binary built from cmd/mezzo.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mezzo/agent/containerizer"
)

var (
	e2eOnce sync.Once
	e2eBin  string // the mezzo binary
	e2eHog  string // testdata/memhog
	e2eErr  error
)

// e2eBinaries builds cmd/mezzo and testdata/memhog once per test run.
func e2eBinaries(t *testing.T) (mezzo, memhog string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	e2eOnce.Do(func() {
		dir := filepath.Dir(testExecutor)
		e2eBin, e2eHog = filepath.Join(dir, "mezzo"), filepath.Join(dir, "memhog")
		for _, b := range [][2]string{{e2eBin, "../cmd/mezzo"}, {e2eHog, "./testdata/memhog"}} {
			cmd := exec.Command("go", "build", "-o", b[0], b[1])
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				e2eErr = fmt.Errorf("building %s: %v\n%s", b[1], err, out)
				return
			}
		}
	})
	if e2eErr != nil {
		t.Fatal(e2eErr)
	}
	return e2eBin, e2eHog
}

// cgroupsIsolation returns the --isolation for cgroups cpu and memory, or
// why this host cannot run it.
func cgroupsIsolation() (string, error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("not root")
	}
	names := []string{"cgroups/cpu", "cgroups/mem"}
	if _, err := containerizer.NewIsolators(names, containerizer.Options{}); err != nil {
		return "", err
	}
	return strings.Join(names, ","), nil
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer is an io.Writer safe for a process's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// e2eProc is a started mezzo process.
type e2eProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer // stdout
	log    *syncBuffer // stderr
	done   chan struct{}
	result error
}

func startE2E(t *testing.T, bin string, args ...string) *e2eProc {
	t.Helper()
	return startE2EIn(t, "", bin, args...)
}

// startE2EIn is startE2E with the process's working directory set to dir
// ("" for the test's own).
func startE2EIn(t *testing.T, dir, bin string, args ...string) *e2eProc {
	t.Helper()
	p := &e2eProc{cmd: exec.Command(bin, args...), out: &syncBuffer{}, log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.log
	p.cmd.Env = append(os.Environ(), "MESOS_LOGGING_LEVEL=info")
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.result = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s %s\nstdout:\n%s\nstderr (tail):\n%s", filepath.Base(bin), strings.Join(args, " "), p.out, tail(p.log.String(), 40))
		}
	})
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// wait waits for the process to exit and returns its exit code.
func (p *e2eProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%s did not exit within %v; output:\n%s", p.cmd.Args, d, p.out)
	}
	return p.cmd.ProcessState.ExitCode()
}

func poll(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// e2eCgroupRoot is the --cgroups_root of the end-to-end agents.
const e2eCgroupRoot = "mezzo-e2e"

// e2eCluster is a master and one agent.
type e2eCluster struct {
	t          *testing.T
	bin        string
	master     string
	agentAddr  string
	agentArgs  []string
	agent      *e2eProc
	agentStart int
}

func startE2ECluster(t *testing.T, bin, isolation string, agentFlags ...string) *e2eCluster {
	t.Helper()
	dir := t.TempDir()
	c := &e2eCluster{t: t, bin: bin}
	// Runs last: the containers' cgroups are gone by then; remove the
	// (empty) root cgroups the agent made.
	t.Cleanup(func() {
		roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + e2eCgroupRoot)
		roots = append(roots, "/sys/fs/cgroup/"+e2eCgroupRoot)
		for _, r := range roots {
			os.Remove(r)
		}
	})
	mport, aport := freePort(t), freePort(t)
	c.master = fmt.Sprintf("127.0.0.1:%d", mport)
	c.agentAddr = fmt.Sprintf("127.0.0.1:%d", aport)
	startE2E(t, bin, "master", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", mport), "--work_dir="+filepath.Join(dir, "master"))
	c.agentArgs = []string{"agent", "--master=" + c.master, "--ip=127.0.0.1", fmt.Sprintf("--port=%d", aport),
		"--work_dir=" + filepath.Join(dir, "agent"), "--resources=cpus:2;mem:1024;disk:1024;ports:[31000-32000]",
		"--cgroups_root=" + e2eCgroupRoot}
	if isolation != "" {
		c.agentArgs = append(c.agentArgs, "--isolation="+isolation)
	}
	c.agentArgs = append(c.agentArgs, agentFlags...)
	c.startAgent()
	return c
}

// startAgent starts the agent and waits until it is registered.
func (c *e2eCluster) startAgent() {
	c.t.Helper()
	c.agent = startE2E(c.t, c.bin, c.agentArgs...)
	poll(c.t, "the agent to register", 30*time.Second, func() bool {
		m, err := getMetrics("http://" + c.agentAddr + "/metrics/snapshot")
		return err == nil && m["slave/registered"] == 1
	})
}

func getMetrics(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]float64
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

// executorPids asks the agent's GET_CONTAINERS for executor pids by
// executor id.
func (c *e2eCluster) executorPids() map[string]int {
	pids, _ := c.containers()
	return pids
}

// containers asks the agent's GET_CONTAINERS for executor pids and
// resource statistics by executor id.
func (c *e2eCluster) containers() (map[string]int, map[string]map[string]any) {
	resp, err := http.Post("http://"+c.agentAddr+"/api/v1", "application/json", strings.NewReader(`{"type":"GET_CONTAINERS"}`))
	if err != nil {
		return nil, nil
	}
	defer resp.Body.Close()
	var v struct {
		GetContainers struct {
			Containers []struct {
				ExecutorID struct {
					Value string `json:"value"`
				} `json:"executor_id"`
				ContainerStatus struct {
					ExecutorPid int `json:"executor_pid"`
				} `json:"container_status"`
				ResourceStatistics map[string]any `json:"resource_statistics"`
			} `json:"containers"`
		} `json:"get_containers"`
	}
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return nil, nil
	}
	pids, stats := map[string]int{}, map[string]map[string]any{}
	for _, ct := range v.GetContainers.Containers {
		pids[ct.ExecutorID.Value] = ct.ContainerStatus.ExecutorPid
		stats[ct.ExecutorID.Value] = ct.ResourceStatistics
	}
	return pids, stats
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// terminalLines are the status lines of `mezzo run` in a terminal state.
func terminalLines(out string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[1] {
		case "TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR", "TASK_DROPPED", "TASK_GONE", "TASK_GONE_BY_OPERATOR":
			got = append(got, l)
		}
	}
	return got
}

// A task that allocates more memory than its container may hold ends
// TASK_FAILED with REASON_CONTAINER_LIMITATION_MEMORY.
func TestE2EMemoryLimit(t *testing.T) {
	isolation, err := cgroupsIsolation()
	if err != nil {
		t.Skipf("cgroups cpu and memory isolation unavailable here (%v); the memory limit scenario needs them", err)
	}
	bin, hog := e2eBinaries(t)
	c := startE2ECluster(t, bin, isolation)
	run := startE2E(t, bin, "run", "--stream=false", "--task_id=hog", "--master="+c.master, "--name=hog", "--resources=cpus:0.1;mem:32", "--timeout=60secs", "--", hog, "200")
	if code := run.wait(t, 60*time.Second); code == 0 {
		t.Errorf("mezzo run exited 0 for a task over its memory limit")
	}
	last := lastLine(run.out.String())
	if !strings.Contains(last, "TASK_FAILED") || !strings.Contains(last, "reason=REASON_CONTAINER_LIMITATION_MEMORY") ||
		!strings.Contains(last, "Memory limit exceeded") {
		t.Errorf("last status %q, want TASK_FAILED with REASON_CONTAINER_LIMITATION_MEMORY", last)
	}
	if n := len(terminalLines(run.out.String())); n != 1 {
		t.Errorf("%d terminal updates, want 1:\n%s", n, run.out)
	}
}

// kill -9 the agent while a checkpointing and a non-checkpointing task
// run, restart it with the same flags: the checkpointing task's executor
// keeps running (same pid), re-subscribes and the task finishes normally;
// the other task gets exactly one terminal update.
func TestE2EAgentKillRestart(t *testing.T) {
	isolation, err := cgroupsIsolation()
	if err != nil {
		t.Logf("running without cgroups isolation: %v", err)
	}
	bin, _ := e2eBinaries(t)
	c := startE2ECluster(t, bin, isolation)
	ckpt := startE2E(t, bin, "run", "--stream=false", "--task_id=ckpt", "--master="+c.master, "--checkpoint", "--name=ckpt", "--timeout=60secs", "--", "sleep", "4")
	plain := startE2E(t, bin, "run", "--stream=false", "--task_id=plain", "--master="+c.master, "--name=plain", "--timeout=60secs", "--", "sleep", "60")
	var pids map[string]int
	poll(t, "both tasks running", 30*time.Second, func() bool {
		pids = c.executorPids()
		return strings.Contains(ckpt.out.String(), "TASK_RUNNING") && strings.Contains(plain.out.String(), "TASK_RUNNING") &&
			pids["ckpt"] > 0 && pids["plain"] > 0
	})
	before := pids["ckpt"]
	// The resource monitor: limits are what the executor and its task were
	// given (0.1+0.1 cpus, 32+32 MB), usage is measured.
	_, stats := c.containers()
	st := stats["ckpt"]
	if st["cpus_limit"] != 0.2 || st["mem_limit_bytes"] != float64(64<<20) || st["timestamp"] == nil ||
		st["cpus_user_time_secs"] == nil || st["mem_rss_bytes"] == nil {
		t.Errorf("GET_CONTAINERS statistics of the checkpointing executor: %v", st)
	}
	var monitor []map[string]any
	if resp, err := http.Get("http://" + c.agentAddr + "/monitor/statistics"); err != nil {
		t.Error(err)
	} else {
		json.NewDecoder(resp.Body).Decode(&monitor)
		resp.Body.Close()
	}
	if len(monitor) != 2 {
		t.Errorf("/monitor/statistics lists %d executors, want 2: %v", len(monitor), monitor)
	}

	c.agent.cmd.Process.Kill() // SIGKILL
	c.agent.wait(t, 10*time.Second)
	if !alive(before) {
		t.Fatalf("the checkpointing executor (pid %d) died with the agent", before)
	}
	c.startAgent()
	after := 0
	poll(t, "the recovered executor in GET_CONTAINERS", 10*time.Second, func() bool {
		after = c.executorPids()["ckpt"]
		return after > 0 || strings.Contains(ckpt.out.String(), "TASK_FINISHED")
	})
	if after != 0 && after != before {
		t.Errorf("executor pid changed across the agent restart: %d, then %d", before, after)
	}

	if code := ckpt.wait(t, 30*time.Second); code != 0 {
		t.Errorf("checkpointing task: mezzo run exited %d", code)
	}
	if last := lastLine(ckpt.out.String()); !strings.Contains(last, "TASK_FINISHED") {
		t.Errorf("checkpointing task ended with %q, want TASK_FINISHED", last)
	}
	if n := terminalLines(ckpt.out.String()); len(n) != 1 {
		t.Errorf("checkpointing task: terminal updates %q, want exactly one", n)
	}

	plain.wait(t, 30*time.Second)
	term := terminalLines(plain.out.String())
	if len(term) != 1 || !strings.Contains(term[0], "reason=REASON_AGENT_RESTARTED") {
		t.Errorf("non-checkpointing task: terminal updates %q, want exactly one with REASON_AGENT_RESTARTED", term)
	}
	if alive(pids["plain"]) {
		t.Errorf("the non-checkpointing executor (pid %d) survived the agent restart", pids["plain"])
	}
	m, err := getMetrics("http://" + c.agentAddr + "/metrics/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"slave/recovery_errors", "slave/recovery_time_secs", "slave/tasks_finished",
		"slave/executors_running", "containerizer/mesos/container_destroy_errors"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metric %s missing after recovery", k)
		}
	}
	if m["slave/recovery_errors"] != 0 {
		t.Errorf("slave/recovery_errors = %v", m["slave/recovery_errors"])
	}
}
