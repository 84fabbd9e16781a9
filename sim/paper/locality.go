package paper

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"mezzo/api/mesos"
	"mezzo/frameworks/batch"
	"mezzo/frameworks/loop"
	"mezzo/sim"
)

// LocalityConfig is Fig. 8's experiment (§6.3): Hadoop-like instances
// scanning files spread over the cluster, each on a static partition or
// all sharing it through offers with delay scheduling. Zero fields take
// the paper's shape (93 agents of 4 cpus, 16 instances, 3 replicas) and
// our scaled-down job.
type LocalityConfig struct {
	// Agents and their resources (each cpu is a slot).
	Agents         int
	AgentResources string
	// Frameworks is the number of batch frameworks (Hadoop instances).
	Frameworks int
	// Tasks per framework's job: one per block of its input file.
	Tasks int
	// Replication: how many agents hold each block.
	Replication int
	// LocalTask is a local task's mean duration; a remote one takes
	// RemoteFactor times as long (it reads its block over the network).
	// Each task's duration varies by Jitter (relative standard deviation).
	LocalTask    time.Duration
	RemoteFactor float64
	Jitter       float64
	// Delays are the delay-scheduling waits tried on the shared cluster
	// (besides the static partitions).
	Delays []time.Duration
	// Seed fixes block placement and task durations.
	Seed uint64
}

func (c LocalityConfig) normalize() LocalityConfig {
	c.Agents = cmpOr(c.Agents, 93)
	c.AgentResources = cmpOr(c.AgentResources, "cpus:4;mem:15360;disk:102400;ports:[31000-32000]")
	c.Frameworks = cmpOr(c.Frameworks, 16)
	c.Tasks = cmpOr(c.Tasks, 60)
	c.Replication = cmpOr(c.Replication, 3)
	c.LocalTask = cmpOr(c.LocalTask, 4*time.Second)
	c.RemoteFactor = cmpOr(c.RemoteFactor, 2.0)
	c.Jitter = cmpOr(c.Jitter, 0.1)
	if c.Delays == nil {
		c.Delays = []time.Duration{0, time.Second, 5 * time.Second}
	}
	c.Seed = cmpOr(c.Seed, 1)
	return c
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// LocalityResult is Fig. 8, ours.
type LocalityResult struct {
	Config    LocalityConfig     `json:"config"`
	Machine   Machine            `json:"machine"`
	Scenarios []LocalityScenario `json:"scenarios"`
}

// LocalityScenario is one bar pair of Fig. 8.
type LocalityScenario struct {
	Name string `json:"name"`
	// Locality is the fraction of tasks that ran on an agent holding
	// their block.
	Locality float64 `json:"locality"`
	// JobSeconds is the mean job completion time; JobSecondsEach lists
	// every framework's.
	JobSeconds     float64   `json:"job_seconds"`
	JobSecondsEach []float64 `json:"job_seconds_each"`
	// WallSeconds is from the frameworks' start until the last job ended.
	WallSeconds float64 `json:"wall_seconds"`
	Tasks       int     `json:"tasks"`
}

// Locality runs Fig. 8's scenarios one after another, each on a fresh
// master and fleet: static partitions, then offers with each delay.
func Locality(ctx context.Context, env Env, cfg LocalityConfig) (*LocalityResult, error) {
	cfg = cfg.normalize()
	res := &LocalityResult{Config: cfg, Machine: machine()}
	place := placeBlocks(cfg)
	scenarios := []struct {
		name   string
		static bool
		delay  time.Duration
	}{{name: "static partitioning", static: true}}
	for _, d := range cfg.Delays {
		name := "offers, no delay scheduling"
		if d > 0 {
			name = "offers, " + d.String() + " delay"
		}
		scenarios = append(scenarios, struct {
			name   string
			static bool
			delay  time.Duration
		}{name: name, delay: d})
	}
	for _, s := range scenarios {
		env.logf("locality: %s", s.name)
		sc, err := localityScenario(ctx, env, cfg, place, s.static, s.delay)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		sc.Name = s.name
		env.logf("locality: %s: %.1f%% local, jobs %.1fs", s.name, 100*sc.Locality, sc.JobSeconds)
		res.Scenarios = append(res.Scenarios, *sc)
	}
	return res, nil
}

// blockName is block k of framework f's file.
func blockName(f, k int) string { return "f" + strconv.Itoa(f) + "b" + strconv.Itoa(k) }

// placeBlocks spreads every block on Replication distinct agents chosen
// at random (HDFS's default placement on one rack): agent → its blocks.
func placeBlocks(cfg LocalityConfig) [][]string {
	r := rng(cfg.Seed, "blocks")
	out := make([][]string, cfg.Agents)
	for f := range cfg.Frameworks {
		for k := range cfg.Tasks {
			for _, a := range r.Perm(cfg.Agents)[:min(cfg.Replication, cfg.Agents)] {
				out[a] = append(out[a], blockName(f, k))
			}
		}
	}
	return out
}

// partitionRole is the role of static partition i.
func partitionRole(i int) string { return "part" + strconv.Itoa(i) }

func localityScenario(ctx context.Context, env Env, cfg LocalityConfig, place [][]string, static bool, delay time.Duration) (*LocalityScenario, error) {
	fc := sim.FleetConfig{Agents: cfg.Agents, Agent: sim.AgentConfig{Resources: cfg.AgentResources},
		Vary: func(i int) sim.AgentVariant {
			v := sim.AgentVariant{Attributes: map[string]string{batch.DefaultLocalityAttribute: strings.Join(place[i], ",")}}
			if static {
				// Agent i belongs to partition i mod F: 5-6 agents each.
				v.Resources = reserveAll(cfg.AgentResources, partitionRole(i%cfg.Frameworks))
			}
			return v
		}}
	c, err := startCluster(ctx, env, fc)
	if err != nil {
		return nil, err
	}
	defer c.close()
	fws := make([]*batch.Framework, cfg.Frameworks)
	for f := range fws {
		job := batch.Job{Name: "scan", Command: "true"}
		for k := range cfg.Tasks {
			job.Tasks = append(job.Tasks, batch.Task{Block: blockName(f, k)})
		}
		role := "*"
		if static {
			role = partitionRole(f)
		}
		durations := rng(cfg.Seed, "durations-"+strconv.Itoa(f))
		local := make([]time.Duration, cfg.Tasks)
		for k := range local {
			local[k] = jitter(durations, cfg.LocalTask, cfg.Jitter)
		}
		fws[f], err = batch.New(batch.Config{
			Config:        loop.Config{Masters: []string{c.addr}, Name: "hadoop-" + strconv.Itoa(f), Role: role, User: "sim"},
			Jobs:          []batch.Job{job},
			TaskResources: "cpus:1;mem:2048",
			Delay:         delay,
			Decorate: func(ti *mesos.TaskInfo, p batch.Placement) {
				d := local[p.Task]
				if !p.Local {
					d = time.Duration(float64(d) * cfg.RemoteFactor)
				}
				ti.Labels = sim.DurationLabels(d)
			},
		})
		if err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	results := make([]*batch.Result, len(fws))
	var runs []func() error
	for i, fw := range fws {
		runs = append(runs, func() error {
			r, err := fw.Run(ctx)
			results[i] = r
			return err
		})
	}
	if err := runAll(runs...); err != nil {
		return nil, err
	}
	sc := &LocalityScenario{WallSeconds: time.Since(t0).Seconds()}
	local := 0
	for _, r := range results {
		sc.Tasks += r.Tasks
		local += r.Local
		for _, j := range r.Jobs {
			sc.JobSecondsEach = append(sc.JobSecondsEach, j.Seconds)
		}
	}
	if sc.Tasks > 0 {
		sc.Locality = float64(local) / float64(sc.Tasks)
	}
	sc.JobSeconds = mean(sc.JobSecondsEach)
	slices.Sort(sc.JobSecondsEach)
	return sc, nil
}

// reserveAll writes resources text with every scalar and range reserved
// to role: "cpus:4;mem:10" → "cpus(role):4;mem(role):10".
func reserveAll(text, role string) string {
	var out []string
	for _, tok := range strings.Split(text, ";") {
		if name, v, ok := strings.Cut(strings.TrimSpace(tok), ":"); ok {
			out = append(out, name+"("+role+"):"+v)
		}
	}
	return strings.Join(out, ";")
}
