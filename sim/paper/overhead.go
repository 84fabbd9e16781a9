package paper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/frameworks/offers"
	"mezzo/scheduler"
	"mezzo/sim"
)

// OverheadConfig is Fig. 10's experiment (§6.5): with the cluster kept
// fully allocated by 200 frameworks launching tasks of 30 ± 10 s, how
// long a new framework waits from subscribing until its task runs. Zero
// fields take the paper's shape (TR §6.6: agents of 8 cpus and 6 GB,
// tasks of 4 cpus and 3 GB, two per agent).
type OverheadConfig struct {
	// Agents are the cluster sizes measured, one fresh master each.
	Agents []int
	// Frameworks keep the cluster allocated.
	Frameworks     int
	AgentResources string
	TaskResources  string
	// TaskMean and TaskStdDev draw the tasks' durations (normal).
	TaskMean, TaskStdDev time.Duration
	// Steady is the fraction of the cluster's cpus that must be allocated
	// before the probes start (or the most that will be: see
	// OverheadPoint.Allocated).
	Steady float64
	// MaxChurn caps the tasks ending (and replaced) per second: where
	// Slots/TaskMean would exceed it, tasks run longer (0: no cap).
	MaxChurn float64
	// Probes per cluster size, one after another; a probe whose task has
	// not run after ProbeTimeout counts as taking that long.
	// ProbeBudget bounds the time spent probing one size (at least five
	// probes run).
	Probes       int
	ProbeTimeout time.Duration
	ProbeBudget  time.Duration
	// MasterFlags are added to each master's command line.
	MasterFlags []string
	// Seed fixes the task durations.
	Seed uint64
}

func (c OverheadConfig) normalize() OverheadConfig {
	if len(c.Agents) == 0 {
		c.Agents = []int{1000, 5000, 10000, 20000, 50000}
	}
	c.Frameworks = cmpOr(c.Frameworks, 200)
	c.AgentResources = cmpOr(c.AgentResources, "cpus:8;mem:6144;disk:10240;ports:[31000-32000]")
	c.TaskResources = cmpOr(c.TaskResources, "cpus:4;mem:3072")
	c.TaskMean = cmpOr(c.TaskMean, 30*time.Second)
	c.TaskStdDev = cmpOr(c.TaskStdDev, 10*time.Second)
	c.Steady = cmpOr(c.Steady, 0.95)
	c.Probes = cmpOr(c.Probes, 50)
	c.ProbeTimeout = cmpOr(c.ProbeTimeout, 30*time.Second)
	c.ProbeBudget = cmpOr(c.ProbeBudget, 90*time.Second)
	c.Seed = cmpOr(c.Seed, 1)
	return c
}

// OverheadResult is Fig. 10, ours.
type OverheadResult struct {
	Config  OverheadConfig  `json:"config"`
	Machine Machine         `json:"machine"`
	Points  []OverheadPoint `json:"points"`
}

// OverheadPoint is one cluster size.
type OverheadPoint struct {
	Agents     int `json:"agents"`
	Frameworks int `json:"frameworks"`
	// RegisterSeconds: the fleet's registration, its tasks with it;
	// RampSeconds: then until the master's account showed Steady of the
	// cpus allocated. TaskMeanSeconds is the tasks' mean length (the
	// paper's 30 s, longer where MaxChurn capped the churn).
	RegisterSeconds float64 `json:"register_seconds"`
	RampSeconds     float64 `json:"ramp_seconds"`
	TaskMeanSeconds float64 `json:"task_mean_seconds"`
	// Allocated is the fraction of the cluster's cpus the frameworks held
	// (in the master's account: tasks launched and not ended) when the
	// probes began. Below Steady, the master did not keep the cluster
	// allocated: probes then find free resources sooner.
	Allocated float64 `json:"allocated"`
	// Slots is the cluster's task slots; Running how many ran tasks (the
	// frameworks had heard TASK_RUNNING) when the probes began and
	// (RunningAfter) when they ended.
	Slots        int `json:"slots"`
	Running      int `json:"running"`
	RunningAfter int `json:"running_after"`
	// TasksPerSecond is the rate at which the frameworks' tasks finished
	// (and were replaced) while the probes ran: the master's load.
	TasksPerSecond float64 `json:"tasks_per_second"`
	// Probe latencies, milliseconds from SUBSCRIBE sent to TASK_RUNNING
	// received: the paper's overhead (which also counted the task's
	// end), as mean, median, 99th percentile and maximum.
	Probes   int     `json:"probes"`
	TimedOut int     `json:"timed_out,omitempty"`
	MeanMS   float64 `json:"mean_ms"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"max_ms"`
	// The parts' medians: SUBSCRIBE → SUBSCRIBED, SUBSCRIBED → first
	// offer that fits, ACCEPT sent → TASK_RUNNING.
	SubscribeP50MS float64 `json:"subscribe_p50_ms"`
	OfferP50MS     float64 `json:"offer_p50_ms"`
	LaunchP50MS    float64 `json:"launch_p50_ms"`
}

// Overhead measures each cluster size in turn.
func Overhead(ctx context.Context, env Env, cfg OverheadConfig) (*OverheadResult, error) {
	cfg = cfg.normalize()
	res := &OverheadResult{Config: cfg, Machine: machine()}
	for _, n := range cfg.Agents {
		env.logf("overhead: %d agents, %d frameworks", n, cfg.Frameworks)
		p, err := overheadPoint(ctx, env, cfg, n)
		if err != nil {
			return nil, fmt.Errorf("%d agents: %w", n, err)
		}
		env.logf("overhead: %d agents: p50 %.1f ms, p99 %.1f ms (%d probes, %d timed out; medians: subscribe %.1f, offer %.1f, launch %.1f ms; %.0f tasks/s, %.0f%% allocated)",
			n, p.P50MS, p.P99MS, p.Probes, p.TimedOut, p.SubscribeP50MS, p.OfferP50MS, p.LaunchP50MS, p.TasksPerSecond, 100*p.Allocated)
		res.Points = append(res.Points, *p)
	}
	return res, nil
}

func overheadPoint(ctx context.Context, env Env, cfg OverheadConfig, agents int) (*OverheadPoint, error) {
	need, err := offers.ParseNeed(cfg.TaskResources)
	if err != nil {
		return nil, err
	}
	avail, err := resourcesOf(cfg.AgentResources)
	if err != nil {
		return nil, err
	}
	taskRes, err := resourcesOf(cfg.TaskResources)
	if err != nil {
		return nil, err
	}
	perAgent := offers.Count(avail, need, offers.NoRevocable)
	pt := &OverheadPoint{Agents: agents, Frameworks: cfg.Frameworks, Slots: agents * perAgent}
	// The paper's churn is Slots/TaskMean tasks per second; past what the
	// master here sustains (MaxChurn), tasks run longer, so that the probes
	// meet a master keeping up with its cluster rather than a backlog that
	// grows without bound.
	taskMean, sd := cfg.TaskMean, cfg.TaskStdDev
	if cfg.MaxChurn > 0 && float64(pt.Slots)/taskMean.Seconds() > cfg.MaxChurn {
		f := float64(pt.Slots) / cfg.MaxChurn / taskMean.Seconds()
		taskMean, sd = time.Duration(float64(taskMean)*f), time.Duration(float64(sd)*f)
	}
	pt.TaskMeanSeconds = taskMean.Seconds()
	c, err := startMaster(ctx, env, cfg.MasterFlags...)
	if err != nil {
		return nil, err
	}
	defer c.close()

	// The frameworks subscribe first: the agents come with their tasks.
	// HTTP/1.1, as most Mesos frameworks speak: one connection per call in
	// flight, kept for the next call rather than closed and dialed again.
	const inFlight = 16
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inFlight * cfg.Frameworks}}
	cfgs := make([]sim.FrameworkConfig, cfg.Frameworks)
	for i := range cfgs {
		cfgs[i] = sim.FrameworkConfig{Masters: []string{c.addr}, Name: "load-" + strconv.Itoa(i), Tasks: math.MaxInt32,
			TaskResources: cfg.TaskResources, TaskDuration: taskMean, TaskDurationStdDev: sd,
			Seed: cfg.Seed + uint64(i), TasksPerOffer: 1, HTTPClient: client, CallsInFlight: inFlight}
	}
	fws, err := sim.StartFrameworks(ctx, cfgs, 16)
	defer func() {
		for _, fw := range fws {
			fw.Stop()
		}
	}()
	if err != nil {
		return nil, err
	}
	infos := make([]*mesos.FrameworkInfo, len(fws))
	for i, fw := range fws {
		infos[i] = &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String(fw.ID())},
			Name: proto.String(cfgs[i].Name), User: proto.String("sim")}
	}
	// Steady state at once, as the paper waited for it: every agent comes
	// with its slots busy (reported when it registers, as after a master
	// failover), each task partway through a drawn length, so that they end
	// spread over a task length, as in a cluster that has been busy.
	t0 := time.Now()
	err = c.startFleet(ctx, env, sim.FleetConfig{Agents: agents, Agent: sim.AgentConfig{Resources: cfg.AgentResources},
		// Real agents post their calls each on its own; the fleet's
		// posters stand in for them. Each call waits for the master's
		// loop, so under this load the default 64 would pace the agents'
		// status updates, not the master.
		Posters: 512,
		Vary: func(a int) sim.AgentVariant {
			r := rng(cfg.Seed, "busy-"+strconv.Itoa(a))
			v := sim.AgentVariant{}
			for k := range perAgent {
				slot := a*perAgent + k
				v.Tasks = append(v.Tasks, sim.RunningTask{Framework: infos[slot%len(infos)],
					TaskID: "busy-" + strconv.Itoa(slot), Resources: taskRes.Proto(),
					Duration: time.Duration(r.Float64() * float64(sim.NormalDuration(r, taskMean, sd)))})
			}
			return v
		}})
	if err != nil {
		return nil, err
	}
	pt.RegisterSeconds = time.Since(t0).Seconds()
	t1 := time.Now()
	stats := func() (running, ended int) {
		for _, fw := range fws {
			s := fw.Stats()
			running += s.Running
			ended += s.Finished + s.Failed
		}
		return running, ended
	}
	// Steady state, as the paper defines it: the frameworks hold all the
	// resources (Steady of the cpus allocated, in the master's account),
	// or, if the master on this machine cannot keep that much allocated,
	// the most it reaches: no new high for a fifth of a task length, or
	// three task lengths gone. The point records which.
	mclient := &http.Client{Timeout: 10 * time.Second}
	allocated := func() float64 {
		var m map[string]float64
		if err := getJSON(ctx, mclient, "http://"+c.addr+"/metrics/snapshot", &m); err != nil || m["master/cpus_total"] == 0 {
			return 0
		}
		return m["master/cpus_used"] / m["master/cpus_total"]
	}
	best, bestAt := 0.0, time.Now()
	lastLog := time.Now()
	for {
		a := allocated()
		if a > best+0.001 {
			best, bestAt = a, time.Now()
		}
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			r, _ := stats()
			fs := c.fleet.Stats()
			env.logf("overhead: %d agents: %.1f%% allocated, %d/%d slots running; agents launched %d, finished %d, updates %d sent %d acked",
				agents, 100*a, r, pt.Slots, fs.TasksLaunched, fs.TasksFinished, fs.UpdatesSent, fs.UpdatesAcked)
		}
		if a >= cfg.Steady || time.Since(bestAt) > taskMean/5 || time.Since(t1) > 3*taskMean {
			pt.Allocated = a
			pt.Running, _ = stats()
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond): // polling the master's metrics
		}
	}
	pt.RampSeconds = time.Since(t1).Seconds()
	env.logf("overhead: %d agents: %.1f%% allocated, %d/%d slots running after %.1fs", agents, 100*pt.Allocated, pt.Running, pt.Slots, pt.RampSeconds)
	// Let the churn settle: the first tasks to end are being replaced.
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(3 * time.Second):
	}

	_, endedBefore := stats()
	probeStart := time.Now()
	var total, sub, offer, launch []float64
	probeClient := &http.Client{}
	for i := range cfg.Probes {
		if i >= 5 && time.Since(probeStart) > cfg.ProbeBudget {
			env.logf("overhead: %d agents: probing for %v, stopping after %d probes", agents, cfg.ProbeBudget, i)
			break
		}
		r, err := probe(ctx, c.addr, probeClient, i, cfg.TaskResources, cfg.ProbeTimeout)
		if errors.Is(err, errProbeTimeout) {
			// A probe that never saw its task run counts as the timeout:
			// the percentiles then say at least that much.
			env.logf("overhead: %d agents: probe %d: no TASK_RUNNING within %v (subscribed after %v, offered %v, launched %v)",
				agents, i, cfg.ProbeTimeout, r.subscribed, r.offered, r.launched)
			pt.TimedOut++
			total = append(total, ms(cfg.ProbeTimeout))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("probe %d: %w", i, err)
		}
		if r.running > slowProbe {
			env.logf("overhead: %d agents: probe %d: TASK_RUNNING after %v (subscribed after %v, offered %v, launched %v)",
				agents, i, r.running, r.subscribed, r.offered, r.launched)
		}
		total = append(total, ms(r.running))
		sub = append(sub, ms(r.subscribed))
		offer = append(offer, ms(r.offered-r.subscribed))
		launch = append(launch, ms(r.running-r.launched))
	}
	running, endedAfter := stats()
	pt.RunningAfter = running
	pt.TasksPerSecond = float64(endedAfter-endedBefore) / time.Since(probeStart).Seconds()
	pt.Probes = len(total)
	pt.MeanMS = mean(total)
	pt.P50MS, pt.P99MS, pt.MaxMS = quantile(total, 0.5), quantile(total, 0.99), quantile(total, 1)
	pt.SubscribeP50MS, pt.OfferP50MS, pt.LaunchP50MS = quantile(sub, 0.5), quantile(offer, 0.5), quantile(launch, 0.5)
	return pt, nil
}

// slowProbe: a probe slower than the target's 99th percentile is logged
// with its phases (-v), to say where its time went.
const slowProbe = 100 * time.Millisecond

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// probeTimes are a probe's moments, from its SUBSCRIBE.
type probeTimes struct {
	subscribed, offered, launched, running time.Duration
}

// errProbeTimeout: the probe's task did not run within the timeout.
var errProbeTimeout = errors.New("no TASK_RUNNING in time")

// probe is the paper's test framework: it subscribes, takes the first
// offer with room for one task (a 10 s one), and returns once the task
// runs, tearing itself down.
func probe(ctx context.Context, addr string, client *http.Client, i int, taskResources string, timeout time.Duration) (probeTimes, error) {
	need, err := offers.ParseNeed(taskResources)
	if err != nil {
		return probeTimes{}, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	timedOut := func(err error) error {
		if ctx.Err() != nil && parent.Err() == nil {
			return errProbeTimeout
		}
		return err
	}
	c := scheduler.New(scheduler.Config{Masters: []string{addr}, HTTPClient: client,
		Framework: &mesos.FrameworkInfo{User: proto.String("sim"), Name: proto.String("probe-" + strconv.Itoa(i))}})
	defer func() {
		tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer tcancel()
		c.Teardown(tctx)
	}()
	var pt probeTimes
	start := time.Now()
	events, err := c.Subscribe(ctx)
	if err != nil {
		return pt, timedOut(err)
	}
	taskID := &mesos.TaskID{Value: proto.String("probe-" + strconv.Itoa(i))}
	launched := false
	for ev := range events {
		switch ev.GetType() {
		case schedulerpb.Event_SUBSCRIBED:
			pt.subscribed = time.Since(start)
		case schedulerpb.Event_OFFERS:
			var decline []*mesos.OfferID
			for _, o := range ev.GetOffers().GetOffers() {
				got, _, ok := offers.Take(offers.Available(o), need, offers.NoRevocable)
				if launched || !ok {
					decline = append(decline, o.GetId())
					continue
				}
				pt.offered = time.Since(start)
				task := &mesos.TaskInfo{Name: proto.String("probe"), TaskId: taskID, AgentId: o.GetAgentId(),
					Resources: got.Proto(), Labels: sim.DurationLabels(10 * time.Second),
					Command: &mesos.CommandInfo{Shell: proto.Bool(true), Value: proto.String("sleep 10")}}
				pt.launched = time.Since(start)
				if err := c.Launch(ctx, []*mesos.OfferID{o.GetId()}, []*mesos.TaskInfo{task}, nil); err != nil {
					return pt, timedOut(err)
				}
				launched = true
			}
			if len(decline) > 0 {
				c.Decline(ctx, decline, nil)
			}
		case schedulerpb.Event_UPDATE:
			st := ev.GetUpdate().GetStatus()
			c.Acknowledge(ctx, st)
			if st.GetTaskId().GetValue() != taskID.GetValue() {
				continue
			}
			if st.GetState() == mesos.TaskState_TASK_RUNNING {
				pt.running = time.Since(start)
				return pt, nil
			}
			if mesos.IsTerminal(st.GetState()) {
				return pt, fmt.Errorf("the probe task ended %s: %s", st.GetState(), st.GetMessage())
			}
		}
	}
	return pt, timedOut(fmt.Errorf("the subscription ended: %v", c.Err()))
}
