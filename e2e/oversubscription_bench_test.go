package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `mezzo bench oversubscription` as a user runs it: a short smoke run
// (the full benchmark is `make oversubscription`, not part of the suite),
// and an interrupted run whose tenant was frozen first. Either way every
// worker process and every cgroup the benchmark made must be gone when
// it exits.

func needCgroupsV1(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the benchmark measures from cgroups: needs root")
	}
	for _, c := range []string{"cpu", "cpuacct", "memory", "freezer"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "cgroup.procs")); err != nil {
			t.Skipf("needs the cgroups v1 %s controller", c)
		}
	}
}

// benchWorker is a line of a worker's pid file.
type benchWorker struct {
	name, cgroup string
	pid          int
}

func benchWorkers(t *testing.T, dir string) []benchWorker {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "workers", "*.pid"))
	var out []benchWorker
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) < 2 {
			continue
		}
		pid, _ := strconv.Atoi(fields[0])
		out = append(out, benchWorker{name: strings.TrimSuffix(filepath.Base(f), ".pid"), pid: pid, cgroup: fields[1]})
	}
	return out
}

// alive reports whether pid is a live (not zombie) ovs-worker.
func workerAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(b), "ovs-worker") {
		return false
	}
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(st)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// assertBenchCleanedUp checks that no worker of the run in dir lives and
// no cgroup of bench process pid is left, and kills/removes what is.
func assertBenchCleanedUp(t *testing.T, dir string, pid int) {
	t.Helper()
	ws := benchWorkers(t, dir)
	if len(ws) == 0 {
		t.Errorf("no worker pid files in %s: nothing ran?", dir)
	}
	for _, w := range ws {
		if workerAlive(w.pid) {
			t.Errorf("worker %s (pid %d) outlived the benchmark", w.name, w.pid)
			syscall.Kill(w.pid, syscall.SIGKILL)
		}
	}
	left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/mezzo-bench-ovs-%d-*", pid))
	for _, d := range left {
		t.Errorf("cgroup %s outlived the benchmark", d)
	}
}

func TestBenchOversubscriptionSmoke(t *testing.T) {
	needCgroupsV1(t)
	dir := t.TempDir()
	cmd := exec.Command(mezzoBin, "bench", "oversubscription", "--json", "--duration=6s", "--rise_at=4s", "--work_dir="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bench: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(3 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(time.Minute):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		t.Fatalf("bench did not end in 3 minutes; stderr:\n%s", stderr.String())
	}
	assertBenchCleanedUp(t, dir, cmd.Process.Pid)
	var res struct {
		UtilizationGain    *float64 `json:"utilization_gain"`
		ServiceSlowdownPct *float64 `json:"service_slowdown_pct"`
		EvictionMs         *float64 `json:"eviction_ms"`
		RegularKilled      *int     `json:"regular_killed"`
		Runs               map[string]struct {
			CPUSeconds       float64 `json:"cpu_seconds"`
			TenantCPUSeconds float64 `json:"tenant_cpu_seconds"`
			TenantsLaunched  int     `json:"tenants_launched"`
			ServiceHighRPS   float64 `json:"service_high_rps"`
			Timeline         []json.RawMessage
		} `json:"runs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("bench output is not JSON: %v\n%s", err, stdout.String())
	}
	if res.UtilizationGain == nil || res.ServiceSlowdownPct == nil || res.EvictionMs == nil || res.RegularKilled == nil {
		t.Fatalf("JSON lacks utilization_gain, service_slowdown_pct, eviction_ms or regular_killed:\n%s", stdout.String())
	}
	if *res.RegularKilled != 0 {
		t.Errorf("regular_killed = %d, want 0", *res.RegularKilled)
	}
	without, with := res.Runs["without"], res.Runs["with"]
	if without.TenantsLaunched != 0 || without.TenantCPUSeconds > 0.05 {
		t.Errorf("without oversubscription the tenant launched %d tasks and used %.3f cpu·s, want none", without.TenantsLaunched, without.TenantCPUSeconds)
	}
	if with.TenantsLaunched == 0 || with.TenantCPUSeconds <= 0 {
		t.Errorf("with oversubscription the tenant launched %d tasks and used %.3f cpu·s, want some", with.TenantsLaunched, with.TenantCPUSeconds)
	}
	for mode, r := range res.Runs {
		if r.CPUSeconds <= 0 || r.ServiceHighRPS <= 0 || len(r.Timeline) == 0 {
			t.Errorf("run %s measured nothing: %+v", mode, r)
		}
	}
	t.Logf("smoke: gain %.2f, slowdown %.1f%%, eviction %.0f ms", *res.UtilizationGain, *res.ServiceSlowdownPct, *res.EvictionMs)
}

// Ctrl-C while the tenant spins in a frozen cgroup (what a previous
// attempt leaked): the benchmark exits 130 and leaves nothing behind.
func TestBenchOversubscriptionInterruptCleansUp(t *testing.T) {
	needCgroupsV1(t)
	dir := t.TempDir()
	cmd := exec.Command(mezzoBin, "bench", "oversubscription", "--modes=with", "--duration=60s", "--rise_at=50s", "--work_dir="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Children that outlive it (a failure) must not keep Wait on the pipe.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			// A process with a thread in a frozen cgroup cannot die: thaw
			// first (see the stuck-thread check below).
			thawBench(cmd.Process.Pid)
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("bench stderr:\n%s", stderr.String())
		}
	})
	var tenant benchWorker
	poll(t, "a tenant worker to run", 60*time.Second, func() bool {
		for _, w := range benchWorkers(t, dir) {
			if strings.HasPrefix(w.name, "tenant-") && workerAlive(w.pid) && w.cgroup != "" {
				tenant = w
				return true
			}
		}
		return false
	})
	state := filepath.Join("/sys/fs/cgroup/freezer", tenant.cgroup, "freezer.state")
	if err := os.WriteFile(state, []byte("FROZEN"), 0o644); err != nil {
		t.Fatalf("freezing the tenant's cgroup: %v", err)
	}
	poll(t, "the tenant's cgroup to freeze", 10*time.Second, func() bool {
		b, _ := os.ReadFile(state)
		return strings.TrimSpace(string(b)) == "FROZEN"
	})
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
		if ee, ok := waitErr.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("interrupted bench ended with %v, want exit status 130", waitErr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the bench did not exit within 60s of SIGINT%s", frozenThreads(cmd.Process.Pid))
	}
	assertBenchCleanedUp(t, dir, cmd.Process.Pid)
}

// thawBench thaws every freezer cgroup of bench process pid.
func thawBench(pid int) {
	dirs, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/freezer/mezzo-bench-ovs-%d-*", pid))
	for _, root := range dirs {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.WriteFile(filepath.Join(p, "freezer.state"), []byte("THAWED"), 0o644)
			}
			return nil
		})
	}
}

// frozenThreads names the threads of process pid that are in one of its
// containers' freezer cgroups (the agent runs in the bench's process and
// moves a thread into a container's cgroups to fork its task there; left
// there, that thread freezes with the container and the process cannot
// exit).
func frozenThreads(pid int) string {
	tids, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []string
	for _, tid := range tids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/cgroup", pid, tid.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, ":freezer:/mezzo-bench-ovs-") && strings.Count(line, "/") > 1 {
				out = append(out, tid.Name()+" in "+line)
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf(": the bench's own threads are in container freezer cgroups: %v", out)
}
