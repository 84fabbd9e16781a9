package paper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"mezzo/resources"
	"mezzo/sim"
)

// Env is what the experiments run on: a way to start a real master, and
// a log.
type Env struct {
	// Master starts a fresh `mezzo master` process with the extra flags
	// and returns its "host:port" and a function that stops it.
	Master func(ctx context.Context, flags ...string) (addr string, stop func(), err error)
	// Logf receives progress lines (default: discarded).
	Logf func(format string, args ...any)
}

func (e Env) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

// Machine describes where a run happened, for docs/paper.md. The load
// averages say how much else the machine was running: on a shared
// machine they explain much of the spread between runs.
type Machine struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go"`
	Date      string `json:"date"`
	// LoadStart is /proc/loadavg's 1, 5 and 15-minute averages when the
	// experiment started.
	LoadStart [3]float64 `json:"load_start"`
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339)}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Sscan(string(b), &m.LoadStart[0], &m.LoadStart[1], &m.LoadStart[2])
	}
	return m
}

// cluster is one experiment's master and emulated agents.
type cluster struct {
	addr  string
	stop  func()
	fleet *sim.Fleet
}

// startCluster starts a master with flags and registers a fleet.
func startCluster(ctx context.Context, env Env, fc sim.FleetConfig, flags ...string) (*cluster, error) {
	c, err := startMaster(ctx, env, flags...)
	if err != nil {
		return nil, err
	}
	if err := c.startFleet(ctx, env, fc); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// startMaster starts a master with flags; startFleet adds the agents.
func startMaster(ctx context.Context, env Env, flags ...string) (*cluster, error) {
	addr, stop, err := env.Master(ctx, flags...)
	if err != nil {
		return nil, fmt.Errorf("starting the master: %w", err)
	}
	return &cluster{addr: addr, stop: stop}, nil
}

// startFleet registers a fleet with the cluster's master.
func (c *cluster) startFleet(ctx context.Context, env Env, fc sim.FleetConfig) error {
	fc.Agent.Masters = []string{c.addr}
	fleet, err := sim.NewFleet(fc)
	if err != nil {
		return err
	}
	t0 := time.Now()
	fleet.Start()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := fleet.WaitRegistered(wctx, fc.Agents); err != nil {
		fleet.Stop()
		return err
	}
	env.logf("%d agents registered with %s in %.1fs", fc.Agents, c.addr, time.Since(t0).Seconds())
	c.fleet = fleet
	return nil
}

func (c *cluster) close() {
	if c.fleet != nil {
		c.fleet.Stop()
	}
	c.stop()
}

// rng returns a generator for one stream of an experiment's randomness:
// the same seed and name give the same draws on every run.
func rng(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	io.WriteString(h, name)
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// jitter draws a duration around mean with a relative standard
// deviation, at least a tenth of the mean.
func jitter(r *rand.Rand, mean time.Duration, rel float64) time.Duration {
	return max(time.Duration(float64(mean)*(1+rel*r.NormFloat64())), mean/10)
}

// quantile of xs (sorted in place), nearest rank.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// frameworkUse is one framework's resources in the master's view.
type frameworkUse struct {
	ID         string
	UsedCPUs   float64
	OfferedCPU float64
}

// masterFrameworks reads every framework's used and offered cpus from
// /master/state-summary: the master's own account, independent of what
// the frameworks believe.
func masterFrameworks(ctx context.Context, client *http.Client, addr string) ([]frameworkUse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/master/state-summary", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /master/state-summary: %s", resp.Status)
	}
	var doc struct {
		Frameworks []struct {
			ID      string         `json:"id"`
			Used    map[string]any `json:"used_resources"`
			Offered map[string]any `json:"offered_resources"`
		} `json:"frameworks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, err
	}
	out := make([]frameworkUse, 0, len(doc.Frameworks))
	for _, f := range doc.Frameworks {
		used, _ := f.Used["cpus"].(float64)
		offered, _ := f.Offered["cpus"].(float64)
		out = append(out, frameworkUse{ID: f.ID, UsedCPUs: used, OfferedCPU: offered})
	}
	return out, nil
}

// runAll runs fns concurrently and returns their errors joined.
func runAll(fns ...func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(fns))
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// resourcesOf parses a resources text.
func resourcesOf(text string) (resources.Resources, error) { return resources.Parse(text, "*") }

// getJSON GETs url into v.
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
