package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// `mezzo bench launch` end to end with a few tasks: the real binary (the
// agent runs it as each task's command executor), a real master, agent and
// framework.
func TestBenchLaunchSmall(t *testing.T) {
	bin := testBinary(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "bench", "launch", "--tasks=8", "--max_in_flight=4", "--isolation=posix/cpu,posix/mem", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = os.Environ()
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench launch: %v\n%s", err, stderr.String())
	}
	var res launchResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("output %q: %v", stdout.String(), err)
	}
	if res.Tasks != 8 || res.Finished != 8 || res.Failed != 0 || res.PerSec <= 0 || res.P99Ms <= 0 || res.P99Ms < res.P50Ms ||
		res.Isolation != "posix/cpu,posix/mem" || res.Nproc <= 0 ||
		res.BenchCPUMsPerTask <= 0 || res.TasksCPUMsPerTask <= 0 || res.CPUMsPerTask != res.BenchCPUMsPerTask+res.TasksCPUMsPerTask {
		t.Errorf("result %+v", res)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// testBinary builds this mezzo binary once per test process (for tests
// that run it, as its subcommands start more of it), or skips under -short.
func testBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the mezzo binary")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "mezzo-cmd-test-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "mezzo")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// `mezzo bench cluster` end to end, small: a real master process, emulated
// agents and frameworks, the probe.
func TestBenchClusterSmall(t *testing.T) {
	bin := testBinary(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "bench", "cluster", "--agents=50", "--frameworks=3", "--tasks=40",
		"--allocation_interval=100ms", "--probe_interval=20ms", "--probes=5", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench cluster: %v\n%s", err, stderr.String())
	}
	var res clusterResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("output %q: %v", stdout.String(), err)
	}
	if res.LaunchResult == nil || res.Tasks != 120 || res.TasksPerS <= 0 || res.RunningPerS <= 0 || res.RunningPerS > res.TasksPerS ||
		res.Accepts <= 0 || res.MasterCPUMSPerTask <= 0 || res.CallErrors != 0 {
		t.Errorf("result %s", stdout.String())
	}
	if res.ProbeSamples < 5 || res.ProbeP99MS < res.ProbeP50MS || res.ProbeP50MS <= 0 || res.ProbeAcceptP50MS > res.ProbeP50MS {
		t.Errorf("probe quantiles: %s", stdout.String())
	}
}

func TestBytesFlag(t *testing.T) {
	var v bytesValue
	if err := v.Set("512MB"); err != nil || v != 512<<20 || v.String() != "512MB" {
		t.Errorf("Set(512MB) = %v, %v", v, err)
	}
	if err := v.Set("lots"); err == nil {
		t.Error("Set(lots) accepted")
	}
}

func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ p, want float64 }{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}} {
		if got := percentile(s, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing")
	}
}
