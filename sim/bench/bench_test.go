package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"mezzo/sim/internal/mastertest"
)

var (
	mezzoBin string
	buildErr error
)

func TestMain(m *testing.M) {
	root, err := filepath.Abs("../..")
	if err == nil {
		mezzoBin, buildErr = mastertest.Build(root)
	} else {
		buildErr = err
	}
	os.Exit(m.Run())
}

// startMaster runs a real master on port, its registry under dir.
func startMaster(t *testing.T, port int, dir string) *mastertest.Master {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return mastertest.Start(t, mezzoBin, port, dir)
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no agents", Config{Masters: []string{"h:1"}}},
		{"no masters", Config{Agents: 1}},
		{"negative frameworks", Config{Agents: 1, Frameworks: -1, Masters: []string{"h:1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Scale(context.Background(), tc.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := Failover(context.Background(), Config{Agents: 1, Masters: []string{"h:1"}}, nil); err == nil {
		t.Fatal("Failover without a kill function was accepted")
	}
	if _, err := Launch(context.Background(), LaunchConfig{Config: Config{Agents: 1, Masters: []string{"h:1"}}}); err == nil {
		t.Fatal("Launch without frameworks or tasks was accepted")
	}
}

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{3}, 0.99, 3},
		{[]float64{5, 1, 4, 2, 3}, 0.5, 3},
		{[]float64{5, 1, 4, 2, 3}, 1, 5},
		{[]float64{5, 1, 4, 2, 3}, 0, 1},
	} {
		if got := quantile(append([]float64(nil), tc.xs...), tc.q); got != tc.want {
			t.Errorf("quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
}

// Scale against a real master: every agent and framework registers and
// the master's metrics come back.
func TestScale(t *testing.T) {
	m := startMaster(t, mastertest.FreePort(t), t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Scale(ctx, Config{Agents: 300, Frameworks: 3, TasksPerFramework: 5, Masters: []string{m.Addr}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	t.Logf("%s", b)
	if res.Agents != 300 || res.AgentsPerSecond <= 0 || res.RegisterP99 > res.RegisterSeconds+0.01 || res.Process.OpenFDs <= 0 {
		t.Fatalf("result %+v", res)
	}
	if res.Master["master/slaves_active"] != 300 || res.Master["master/frameworks_active"] != 3 {
		t.Fatalf("master metrics: slaves_active %v frameworks_active %v", res.Master["master/slaves_active"], res.Master["master/frameworks_active"])
	}
}

// Failover: SIGKILL the master and start a fresh one on the same port;
// the agents and frameworks come back.
func TestFailover(t *testing.T) {
	port, dir := mastertest.FreePort(t), t.TempDir()
	m := startMaster(t, port, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kill := func(context.Context) error {
		m.Kill()
		startMaster(t, port, dir)
		return nil
	}
	res, err := Failover(ctx, Config{Agents: 300, Frameworks: 3, Masters: []string{m.Addr},
		RegistrationBackoff: 200 * time.Millisecond, Logf: t.Logf}, kill)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	t.Logf("%s", b)
	if res.Seconds <= 0 || res.AgentsSeconds > res.Seconds || res.ReregisterAttempts < 300 {
		t.Fatalf("result %+v", res)
	}
}

// TestScaleLarge is the experiment docs/sim.md records; it runs only when
// SIM_BENCH_AGENTS is set (e.g. 10000), with SIM_BENCH_FRAMEWORKS
// frameworks, and with SIM_BENCH_FAILOVER=1 measures a failover too.
func TestScaleLarge(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SIM_BENCH_AGENTS"))
	if n <= 0 {
		t.Skip("set SIM_BENCH_AGENTS to run")
	}
	fws, _ := strconv.Atoi(os.Getenv("SIM_BENCH_FRAMEWORKS"))
	port, dir := mastertest.FreePort(t), t.TempDir()
	m := startMaster(t, port, dir)
	ctx := context.Background()
	hold, _ := time.ParseDuration(os.Getenv("SIM_BENCH_HOLD"))
	cfg := Config{Agents: n, Frameworks: fws, Masters: []string{m.Addr}, Hold: hold, Logf: t.Logf}
	var out any
	if os.Getenv("SIM_BENCH_FAILOVER") == "1" {
		res, err := Failover(ctx, cfg, func(context.Context) error {
			m.Kill()
			m = startMaster(t, port, dir)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		out = res
	} else {
		res, err := Scale(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		out = res
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	t.Logf("%s", b)
	t.Logf("master RSS %d MiB", m.RSS()>>20)
	if os.Getenv("SIM_BENCH_MASTER_LOG") != "" {
		log := m.Log()
		t.Logf("master log (last 4 KiB):\n%s", log[max(0, len(log)-4096):])
	}
}
