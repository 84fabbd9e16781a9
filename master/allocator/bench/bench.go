// Package bench measures the allocator the way Mesos's allocator
// benchmarks do, for `mezzo bench allocator` (cmd/mezzo) and the Go
// benchmarks: it builds a synthetic cluster on a synchronous allocator
// (allocator.Sync, no goroutines, fake time) and times allocation runs.
package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/master/allocator"
	"mezzo/master/allocator/internal/cputime"
	"mezzo/resources"
)

// Config describes a synthetic cluster.
type Config struct {
	Agents     int
	Frameworks int
	// Roles spreads frameworks round-robin over this many roles (0 means 1).
	Roles int
	// Quota gives every role a guarantee; together they cover half the
	// cluster, so runs go through the quota stage and headroom checks.
	Quota bool
	// Cycles is how many declined runs are timed (0 means 21).
	Cycles int
	// Allocator is the registered name (empty means allocator.Default).
	Allocator string
}

// Result is what Run measured. Times are in milliseconds.
type Result struct {
	Config Config `json:"config"`
	// CycleMS is the median time of one allocation run over all agents
	// when all resources are free and every framework declines every offer
	// (with a long filter), as in Mesos's DeclineOffers benchmark.
	CycleMS float64 `json:"cycle_ms"`
	// CycleMinMS and CycleMaxMS bound the timed runs.
	CycleMinMS float64 `json:"cycle_min_ms"`
	CycleMaxMS float64 `json:"cycle_max_ms"`
	// CycleCPUMS is the median CPU time of those runs on their thread
	// (Linux; 0 elsewhere). On a shared, loaded machine wall times include
	// waiting for a core; this does not (nor the collector's background
	// work).
	CycleCPUMS float64 `json:"cycle_cpu_ms"`
	// DeclineMS is the median time to hand every offer of one of those
	// runs back through RecoverResources (declined with a one-hour
	// filter), end to end; DeclineCPUMS its CPU time on the thread.
	DeclineMS    float64 `json:"decline_ms"`
	DeclineCPUMS float64 `json:"decline_cpu_ms"`
	// IdleMS is the median time of a run that allocates nothing because
	// everything is already offered.
	IdleMS float64 `json:"idle_ms"`
	// SetupMS is how long adding the agents and frameworks took.
	SetupMS float64 `json:"setup_ms"`
	// Offers is the median number of offers (framework, role, agent)
	// made by one timed run.
	Offers  int     `json:"offers"`
	Machine Machine `json:"machine"`
}

// Machine identifies where the numbers were measured.
type Machine struct {
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
}

// AgentResources is every synthetic agent's total (as Mesos's benchmarks:
// a mid-sized machine with a port range).
const AgentResources = "cpus:24;mem:4096;disk:4096;ports:[31000-32000]"

// Cluster is a synthetic cluster on a synchronous allocator.
type Cluster struct {
	Alloc  *allocator.Sync
	Clock  *clock.Fake
	offers []offer
	cfg    Config
}

type offer struct {
	fw, role, agent string
	res             resources.Resources
}

// NewCluster adds cfg.Agents agents and cfg.Frameworks frameworks.
func NewCluster(cfg Config) (*Cluster, error) {
	if cfg.Agents <= 0 || cfg.Frameworks <= 0 {
		return nil, fmt.Errorf("bench: Agents and Frameworks must be positive (got %d, %d)", cfg.Agents, cfg.Frameworks)
	}
	if cfg.Roles <= 0 {
		cfg.Roles = 1
	}
	if cfg.Roles > cfg.Frameworks {
		return nil, fmt.Errorf("bench: Roles (%d) must not exceed Frameworks (%d)", cfg.Roles, cfg.Frameworks)
	}
	if cfg.Allocator == "" {
		cfg.Allocator = allocator.Default
	}
	cl := &Cluster{Clock: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), cfg: cfg}
	a, err := allocator.NewSync(cfg.Allocator, allocator.Options{
		Clock:    cl.Clock,
		Interval: time.Second,
		Offer: func(fw string, o allocator.Offers) {
			for role, byAgent := range o {
				for agent, r := range byAgent {
					cl.offers = append(cl.offers, offer{fw, role, agent, r})
				}
			}
		},
	})
	if err != nil {
		return nil, err
	}
	cl.Alloc = a
	total := resources.MustParse(AgentResources)
	for i := 0; i < cfg.Agents; i++ {
		id := fmt.Sprintf("agent-%06d", i)
		a.AddAgent(id, &mesos.AgentInfo{Hostname: proto.String(id)}, total, nil)
	}
	if cfg.Quota {
		// Half the cluster guaranteed, split evenly over the roles.
		share := float64(cfg.Agents) / float64(cfg.Roles) / 2
		for r := 0; r < cfg.Roles; r++ {
			a.UpdateQuota(RoleName(r), allocator.Quota{Guarantees: map[string]float64{
				"cpus": 24 * share, "mem": 4096 * share,
			}})
		}
	}
	for i := 0; i < cfg.Frameworks; i++ {
		a.AddFramework(FrameworkID(i), &mesos.FrameworkInfo{
			User: proto.String("bench"), Name: proto.String("bench"),
			Role: proto.String(RoleName(i % cfg.Roles)),
		}, nil, true, allocator.FrameworkOptions{})
	}
	return cl, nil
}

// RoleName is the name of synthetic role r.
func RoleName(r int) string { return fmt.Sprintf("role%d", r) }

// FrameworkID is the ID of synthetic framework i.
func FrameworkID(i int) string { return fmt.Sprintf("framework-%05d", i) }

// Allocate performs one run and returns its duration and the offers made.
func (cl *Cluster) Allocate() (time.Duration, int) {
	cl.offers = cl.offers[:0]
	d := cl.Alloc.Run(cl.Clock.Now())
	return d, len(cl.offers)
}

// DeclineAll declines every outstanding offer with a filter of refuse.
func (cl *Cluster) DeclineAll(refuse time.Duration) {
	f := &mesos.Filters{RefuseSeconds: proto.Float64(refuse.Seconds())}
	for _, o := range cl.offers {
		cl.Alloc.RecoverResources(o.fw, o.agent, o.res, f)
	}
	cl.offers = cl.offers[:0]
}

// Run builds the cluster and times allocation runs: Cycles runs in which
// every offer is declined (with a long filter, so successive runs offer
// each agent to frameworks that have not seen it), then runs that
// allocate nothing.
func Run(cfg Config) (Result, error) {
	if cfg.Cycles <= 0 {
		cfg.Cycles = 21
	}
	res := Result{Config: cfg, Machine: MachineInfo()}
	start := time.Now()
	cl, err := NewCluster(cfg)
	if err != nil {
		return res, err
	}
	res.SetupMS = ms(time.Since(start))
	var times, cpu, decl, declCPU []float64
	var offers []int
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := 0; i < cfg.Cycles; i++ {
		d, n := cl.Allocate()
		times = append(times, ms(d))
		cpu = append(cpu, ms(cl.Alloc.LastRunCPU()))
		offers = append(offers, n)
		start, cpu0 := time.Now(), cputime.Thread()
		cl.DeclineAll(time.Hour)
		declCPU = append(declCPU, ms(cputime.Thread()-cpu0))
		decl = append(decl, ms(time.Since(start)))
		cl.Clock.Advance(time.Second)
	}
	// Now let one run hand everything out and time runs with nothing free.
	cl.Clock.Advance(2 * time.Hour) // filters expire
	cl.Allocate()
	var idle []float64
	for i := 0; i < 5; i++ {
		d, _ := cl.Allocate()
		idle = append(idle, ms(d))
	}
	sort.Float64s(times)
	sort.Ints(offers)
	res.CycleMS = median(times)
	res.CycleCPUMS = median(cpu)
	res.DeclineMS = median(decl)
	res.DeclineCPUMS = median(declCPU)
	res.CycleMinMS = times[0]
	res.CycleMaxMS = times[len(times)-1]
	res.Offers = offers[len(offers)/2]
	res.IdleMS = median(idle)
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MachineInfo describes this machine.
func MachineInfo() Machine {
	return Machine{
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUModel:   cpuModel(),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
	}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
