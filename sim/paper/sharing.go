package paper

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"mezzo/api/mesos"
	"mezzo/frameworks/batch"
	"mezzo/frameworks/elastic"
	"mezzo/frameworks/gang"
	"mezzo/frameworks/loop"
	"mezzo/frameworks/run"
	"mezzo/sim"
)

// The four kinds of framework sharing the cluster (the paper's §6.1
// macrobenchmark ran two Hadoop mixes, Spark and Torque; ours are the
// frameworks mezzo ships).
const (
	KindBatch   = "batch"   // frameworks/batch: the Facebook Hadoop mix
	KindGang    = "gang"    // frameworks/gang: Torque running MPI jobs
	KindElastic = "elastic" // frameworks/elastic: the web farm
	KindShort   = "short"   // frameworks/run: one-task frameworks, `mezzo run`
)

// Kinds in the order tables and plots show them.
var Kinds = []string{KindBatch, KindGang, KindElastic, KindShort}

// SharingConfig is Table 4 / Figs. 5–6's experiment (§6.1): the four
// framework kinds on one cluster through offers, against each on a static
// quarter of it. Time is compressed: the paper's jobs ran for minutes,
// ours for seconds. Zero fields take the defaults.
type SharingConfig struct {
	// Agents (a multiple of 4) and their resources: the paper's 96 EC2
	// nodes of 4 cores and 15 GB.
	Agents         int
	AgentResources string
	// Window is when the workloads arrive (default 60 s).
	Window time.Duration
	// TimeScale multiplies every task duration and the window (smoke
	// tests shrink it).
	TimeScale float64
	// BatchJobs is the fraction of Table 3's 100 jobs the batch mix
	// submits (default 0.5); BatchSize scales their task counts (1).
	BatchJobs, BatchSize float64
	// GangRanks is the size of every gang (the paper's 24).
	GangRanks int
	// ElasticPeak is the replicas the web load needs at its peak.
	ElasticPeak int
	// ShortRate is `mezzo run` jobs per second.
	ShortRate float64
	// SampleEvery is the period of the utilization samples.
	SampleEvery time.Duration
	// Seed fixes every workload.
	Seed uint64
}

func (c SharingConfig) normalize() SharingConfig {
	c.Agents = cmpOr(c.Agents, 96)
	c.AgentResources = cmpOr(c.AgentResources, "cpus:4;mem:15360;disk:102400;ports:[31000-32000]")
	c.TimeScale = cmpOr(c.TimeScale, 1.0)
	c.Window = time.Duration(float64(cmpOr(c.Window, 60*time.Second)) * c.TimeScale)
	c.BatchJobs = cmpOr(c.BatchJobs, 0.5)
	c.BatchSize = cmpOr(c.BatchSize, 1.0)
	c.GangRanks = cmpOr(c.GangRanks, 24)
	c.ElasticPeak = cmpOr(c.ElasticPeak, 40)
	c.ShortRate = cmpOr(c.ShortRate, 2.0)
	c.SampleEvery = cmpOr(c.SampleEvery, time.Second)
	c.Seed = cmpOr(c.Seed, 1)
	return c
}

func (c SharingConfig) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.TimeScale)
}

// Workload sizes and the paper's numbers they stand for.
const (
	batchTask       = 2 * time.Second  // the paper's median Hadoop task, 23 s, compressed ~10×
	gangSmall       = 12 * time.Second // small tachyon, 261 s static, compressed ~20×
	gangLarge       = 36 * time.Second // large tachyon, 822 s static
	shortTask       = 1500 * time.Millisecond
	elasticTarget   = 100.0 // requests per second per replica
	elasticReplica  = "cpus:2;mem:1024;ports:1"
	batchResources  = "cpus:1;mem:1024"
	gangResources   = "cpus:2;mem:2048"
	shortResources  = "cpus:1;mem:128"
	sharingTaskJitr = 0.3
)

// table3 is the paper's Table 3: tasks per job and jobs of each bin of
// the Facebook Hadoop mix (map tasks; the join's 30 reduces are left out).
var table3 = []struct{ tasks, jobs int }{{1, 38}, {2, 18}, {10, 14}, {50, 12}, {100, 6}, {200, 6}, {400, 4}, {400, 2}}

// SharingResult is Table 4 and Figs. 5–6, ours.
type SharingResult struct {
	Config  SharingConfig `json:"config"`
	Machine Machine       `json:"machine"`
	Static  SharingRun    `json:"static"`
	Shared  SharingRun    `json:"shared"`
	// Speedup by kind: the static run's sum of job times over the
	// shared run's (for the elastic service: the shared run's fraction of
	// its demand met over the static one's).
	Speedup map[string]float64 `json:"speedup"`
}

// SharingRun is one scenario: every kind's outcome and the cluster's use
// over time.
type SharingRun struct {
	Kinds map[string]KindOutcome `json:"kinds"`
	// Samples of the cpus each kind used (tasks running, in the master's
	// account), every SampleEvery.
	Samples []ShareSample `json:"samples"`
	// Utilization is the mean fraction of the cluster's cpus in use
	// while work remained (until the last job ended).
	Utilization float64 `json:"utilization"`
	WallSeconds float64 `json:"wall_seconds"`
	TotalCPUs   float64 `json:"total_cpus"`
}

// KindOutcome is one kind's result.
type KindOutcome struct {
	Jobs int `json:"jobs"`
	// SumSeconds is the sum of its jobs' completion times (Table 4's
	// measure), MeanSeconds their mean.
	SumSeconds  float64 `json:"sum_seconds"`
	MeanSeconds float64 `json:"mean_seconds"`
	Failed      int     `json:"failed,omitempty"`
	// DemandMet, for the elastic service: replica·s running over replica·s
	// wanted (capped per tick); LoadServed: requests it had capacity for
	// over requests offered.
	DemandMet  float64 `json:"demand_met,omitempty"`
	LoadServed float64 `json:"load_served,omitempty"`
	// Extra holds kind-specific measures (gang: held cpu·s).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// ShareSample is the cluster's use at one moment.
type ShareSample struct {
	Seconds float64            `json:"t"`
	CPUs    map[string]float64 `json:"cpus"`
}

// Sharing runs the static scenario, then the shared one, on fresh
// masters and fleets, with the same workloads.
func Sharing(ctx context.Context, env Env, cfg SharingConfig) (*SharingResult, error) {
	cfg = cfg.normalize()
	if cfg.Agents%4 != 0 {
		return nil, fmt.Errorf("sharing: %d agents do not split into four quarters", cfg.Agents)
	}
	res := &SharingResult{Config: cfg, Machine: machine(), Speedup: map[string]float64{}}
	for _, static := range []bool{true, false} {
		name := map[bool]string{true: "static quarters", false: "shared"}[static]
		env.logf("sharing: %s", name)
		r, err := sharingRun(ctx, env, cfg, static)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, k := range Kinds {
			o := r.Kinds[k]
			env.logf("sharing: %s: %s: %d jobs, sum %.1fs, demand met %.2f", name, k, o.Jobs, o.SumSeconds, o.DemandMet)
		}
		if static {
			res.Static = *r
		} else {
			res.Shared = *r
		}
	}
	for _, k := range Kinds {
		s, m := res.Static.Kinds[k], res.Shared.Kinds[k]
		if k == KindElastic {
			if s.DemandMet > 0 {
				res.Speedup[k] = m.DemandMet / s.DemandMet
			}
		} else if m.SumSeconds > 0 {
			res.Speedup[k] = s.SumSeconds / m.SumSeconds
		}
	}
	return res, nil
}

// batchJobs is the Facebook mix: Table 3's bins, scaled, at random times
// in the window.
func batchJobs(cfg SharingConfig) []batch.Job {
	r := rng(cfg.Seed, "batch-jobs")
	var jobs []batch.Job
	for b, bin := range table3 {
		n := max(1, int(math.Round(float64(bin.jobs)*cfg.BatchJobs)))
		tasks := max(1, int(math.Round(float64(bin.tasks)*cfg.BatchSize)))
		for range n {
			jobs = append(jobs, batch.Job{Name: fmt.Sprintf("bin%d-%d", b+1, len(jobs)), Command: "true",
				Tasks: make([]batch.Task, tasks), Submit: loop.Duration(time.Duration(r.Float64() * float64(cfg.Window)))})
		}
	}
	return jobs
}

// gangJobs is the Torque queue: six small and two large tachyon runs at
// evenly spaced times.
func gangJobs(cfg SharingConfig) ([]gang.Job, map[string]time.Duration) {
	r := rng(cfg.Seed, "gang-jobs")
	large := r.Perm(8)[:2]
	var jobs []gang.Job
	dur := map[string]time.Duration{}
	for i := range 8 {
		name, d := "small-"+strconv.Itoa(i), gangSmall
		if slices.Contains(large, i) {
			name, d = "large-"+strconv.Itoa(i), gangLarge
		}
		jobs = append(jobs, gang.Job{Name: name, Tasks: cfg.GangRanks, Command: "true",
			Submit: loop.Duration(cfg.Window * time.Duration(i) / 8)})
		dur[name] = jitter(r, cfg.scaled(d), 0.05)
	}
	return jobs, dur
}

// elasticProfile rises from a tenth of the peak to the peak over 40% of
// the window, holds it for 20%, and falls back over 40%.
func elasticProfile(cfg SharingConfig) elastic.Profile {
	peak := float64(cfg.ElasticPeak) * elasticTarget
	w := cfg.Window
	return elastic.Profile{{From: peak / 10, To: peak, Duration: w * 4 / 10}, {From: peak, To: peak, Duration: w * 2 / 10},
		{From: peak, To: peak / 10, Duration: w * 4 / 10}}
}

// shortJobs are arrival times (Poisson) and durations of the `mezzo run`
// jobs.
func shortJobs(cfg SharingConfig) (at, dur []time.Duration) {
	r := rng(cfg.Seed, "short-jobs")
	for t := time.Duration(r.ExpFloat64() / cfg.ShortRate * float64(time.Second)); t < cfg.Window; t += time.Duration(r.ExpFloat64() / cfg.ShortRate * float64(time.Second)) {
		at = append(at, t)
		dur = append(dur, jitter(r, cfg.scaled(shortTask), sharingTaskJitr))
	}
	return at, dur
}

func sharingRun(ctx context.Context, env Env, cfg SharingConfig, static bool) (*SharingRun, error) {
	quarter := cfg.Agents / 4
	fc := sim.FleetConfig{Agents: cfg.Agents, Agent: sim.AgentConfig{Resources: cfg.AgentResources}}
	if static {
		fc.Vary = func(i int) sim.AgentVariant {
			return sim.AgentVariant{Resources: reserveAll(cfg.AgentResources, Kinds[i/quarter])}
		}
	}
	c, err := startCluster(ctx, env, fc)
	if err != nil {
		return nil, err
	}
	defer c.close()
	sub := func(name, role string) loop.Config {
		return loop.Config{Masters: []string{c.addr}, Name: name, Role: role, User: "sim"}
	}

	bfw, err := batch.New(batch.Config{Config: sub("facebook-mix", KindBatch), Jobs: batchJobs(cfg),
		TaskResources: batchResources, Decorate: func(ti *mesos.TaskInfo, p batch.Placement) {
			// Each task's duration is drawn from its own stream: the same
			// on every run, whenever it is launched.
			r := rng(cfg.Seed, p.Job+"/"+strconv.Itoa(p.Task))
			ti.Labels = sim.DurationLabels(jitter(r, cfg.scaled(batchTask), sharingTaskJitr))
		}})
	if err != nil {
		return nil, err
	}
	gjobs, gdur := gangJobs(cfg)
	gfw, err := gang.New(gang.Config{Config: sub("torque", KindGang), Jobs: gjobs, TaskResources: gangResources,
		Hold: cfg.scaled(10 * time.Second), Backoff: cfg.scaled(2 * time.Second),
		Decorate: func(ti *mesos.TaskInfo, p gang.Placement) { ti.Labels = sim.DurationLabels(gdur[p.Job]) }})
	if err != nil {
		return nil, err
	}
	profile := elasticProfile(cfg)
	start := time.Now()
	efw, err := elastic.New(elastic.Config{Config: sub("web-farm", KindElastic), TaskResources: elasticReplica,
		Target: elasticTarget, Min: 2, Max: cfg.Agents, ScaleDownAfter: cfg.scaled(5 * time.Second),
		Load:     func(now time.Time) float64 { return profile.Rate(now.Sub(start)) },
		Decorate: func(ti *mesos.TaskInfo) { ti.Labels = sim.DurationLabels(sim.Never) }})
	if err != nil {
		return nil, err
	}

	var (
		mu        sync.Mutex
		shortSecs []float64
		shortFail int
	)
	var samples []ShareSample
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	kindOf := func(id string) string {
		switch id {
		case bfw.ID():
			return KindBatch
		case gfw.ID():
			return KindGang
		case efw.ID():
			return KindElastic
		}
		return KindShort
	}
	go func() {
		defer close(sampled)
		client := &http.Client{Timeout: 5 * time.Second}
		t := time.NewTicker(cfg.SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
			fws, err := masterFrameworks(ctx, client, c.addr)
			if err != nil {
				env.logf("sharing: sampling: %v", err)
				continue
			}
			s := ShareSample{Seconds: time.Since(start).Seconds(), CPUs: map[string]float64{}}
			for _, f := range fws {
				s.CPUs[kindOf(f.ID)] += f.UsedCPUs
			}
			samples = append(samples, s)
		}
	}()

	var bres *batch.Result
	var gres *gang.Result
	var eres *elastic.Result
	shortAt, shortDur := shortJobs(cfg)
	var lastJob time.Time
	var lastMu sync.Mutex
	ended := func() {
		lastMu.Lock()
		lastJob = time.Now()
		lastMu.Unlock()
	}
	err = runAll(
		func() (err error) { bres, err = bfw.Run(ctx); ended(); return err },
		func() (err error) { gres, err = gfw.Run(ctx); ended(); return err },
		func() (err error) {
			// The web load ends with the window; then the service stops.
			go func() {
				t := time.NewTimer(profile.Length() + time.Second)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				efw.Stop()
			}()
			eres, err = efw.Run(ctx)
			return err
		},
		func() error {
			client := &http.Client{}
			var wg sync.WaitGroup
			for i, at := range shortAt {
				if d := time.Until(start.Add(at)); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					t0 := time.Now()
					code, err := run.Run(ctx, run.Options{Masters: []string{c.addr}, Name: "run-" + strconv.Itoa(i),
						Command: []string{"true"}, Resources: shortResources, Role: KindShort, User: "sim",
						Env: []string{sim.DurationEnv + "=" + shortDur[i].String()}, Out: io.Discard, HTTPClient: client})
					mu.Lock()
					defer mu.Unlock()
					if err != nil || code != 0 {
						shortFail++
						env.logf("sharing: short job %d: exit %d: %v", i, code, err)
						return
					}
					shortSecs = append(shortSecs, time.Since(t0).Seconds())
				}()
			}
			wg.Wait()
			ended()
			return nil
		},
	)
	close(stopSampling)
	<-sampled
	if err != nil {
		return nil, err
	}
	out := &SharingRun{Kinds: map[string]KindOutcome{}, Samples: samples, WallSeconds: time.Since(start).Seconds()}
	out.TotalCPUs = float64(cfg.Agents) * resourcesCPUs(cfg.AgentResources)
	out.Kinds[KindBatch] = jobOutcome(len(bres.Jobs), func(i int) (float64, bool) { return bres.Jobs[i].Seconds, bres.Jobs[i].Failed })
	g := jobOutcome(len(gres.Jobs), func(i int) (float64, bool) { return gres.Jobs[i].Seconds, gres.Jobs[i].Failed })
	g.Extra = map[string]float64{"held_cpu_seconds": gres.HeldCPUSeconds, "give_ups": float64(gres.GiveUps)}
	out.Kinds[KindGang] = g
	out.Kinds[KindShort] = jobOutcome(len(shortSecs), func(i int) (float64, bool) { return shortSecs[i], false })
	sk := out.Kinds[KindShort]
	sk.Failed = shortFail
	out.Kinds[KindShort] = sk
	out.Kinds[KindElastic] = elasticOutcome(eres)
	// Utilization while work remained.
	var used []float64
	for _, s := range samples {
		if s.Seconds > lastJob.Sub(start).Seconds() {
			break
		}
		tot := 0.0
		for _, v := range s.CPUs {
			tot += v
		}
		used = append(used, tot/out.TotalCPUs)
	}
	out.Utilization = mean(used)
	return out, nil
}

func jobOutcome(n int, job func(int) (secs float64, failed bool)) KindOutcome {
	o := KindOutcome{Jobs: n}
	for i := range n {
		s, failed := job(i)
		if failed {
			o.Failed++
		}
		o.SumSeconds += s
	}
	if n > 0 {
		o.MeanSeconds = o.SumSeconds / float64(n)
	}
	return o
}

// elasticOutcome measures how much of its demand the service met.
func elasticOutcome(r *elastic.Result) KindOutcome {
	var want, got, load, served float64
	for _, s := range r.Samples {
		want += float64(s.Desired)
		got += float64(min(s.Running, s.Desired))
		load += s.Load
		served += min(s.Load, float64(s.Running)*elasticTarget)
	}
	o := KindOutcome{Jobs: r.Launched}
	if want > 0 {
		o.DemandMet = got / want
	}
	if load > 0 {
		o.LoadServed = served / load
	}
	o.Extra = map[string]float64{"lost": float64(r.Lost)}
	return o
}

// resourcesCPUs is the cpus of a resources text.
func resourcesCPUs(text string) float64 {
	r, err := resourcesOf(text)
	if err != nil {
		return 0
	}
	return r.Scalar("cpus")
}
