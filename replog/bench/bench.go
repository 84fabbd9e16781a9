// Package bench measures the replicated registry for `mezzo bench
// registrar` (cmd/mezzo): admissions through a registrar over a
// single-node replog on local disk, each acknowledged only once durable,
// with many concurrent callers so batching works as it does when a cluster
// registers; then a restart, timing how long the registry takes to load.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/master/registrar"
	"mezzo/replog"
)

// Config describes one run.
type Config struct {
	// Agents to admit (0 means 50,000).
	Agents int `json:"agents"`
	// Dir holds the registry; empty means a temporary directory, removed
	// afterwards. A given Dir must be empty.
	Dir string `json:"dir,omitempty"`
	// Concurrency is the number of callers applying admissions at once
	// (0 means 128): agents registering concurrently.
	Concurrency int `json:"concurrency"`
}

// Result is what Run measured.
type Result struct {
	Config Config `json:"config"`
	// AdmitPerS is admissions acknowledged per second, each only once
	// durable (fsynced through Raft).
	AdmitPerS float64 `json:"admit_per_s"`
	// AdmitP50MS and AdmitP99MS are admission latencies (Apply call to
	// acknowledgement).
	AdmitP50MS float64 `json:"admit_p50_ms"`
	AdmitP99MS float64 `json:"admit_p99_ms"`
	// RecoverMS is the time from opening the registry directory of a
	// stopped master to a recovered registry (Raft started, leader
	// elected, every entry applied, MasterInfo committed).
	RecoverMS float64 `json:"recover_ms"`
	// Bytes is the registry's size on disk after the admissions.
	Bytes int64 `json:"bytes"`
	// Writes is the number of log entries the admissions took, and
	// LargestBatch the most admissions in one.
	Writes       uint64 `json:"writes"`
	LargestBatch int    `json:"largest_batch"`
	// WriteMS is the mean duration of one write (Append: replicate,
	// fsync, apply).
	WriteMS float64 `json:"write_ms"`
	// GOMAXPROCS the run had.
	Procs int `json:"procs"`
}

// Run performs one measurement.
func Run(cfg Config) (Result, error) {
	if cfg.Agents <= 0 {
		cfg.Agents = 50000
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 128
	}
	res := Result{Config: cfg, Procs: runtime.GOMAXPROCS(0)}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "mezzo-bench-registrar-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return res, fmt.Errorf("bench: Dir %s is not empty", dir)
	}
	lcfg := replog.Config{Dir: dir, Bootstrap: true, LogOutput: io.Discard}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The admissions are built (and so encoded) up front, as the master's
	// handlers would before calling the registrar: the timed path is
	// Apply to durable acknowledgement. An Operation holds its encoding,
	// not the AgentInfo, so this costs a few bytes per agent.
	prefix := uuid.NewString()
	ops := make([]registrar.Operation, cfg.Agents)
	for i := range ops {
		ops[i] = registrar.Admit(agentInfo(prefix, i), "")
	}

	// Admissions.
	log, reg, err := open(ctx, lcfg, false)
	if err != nil {
		return res, err
	}
	lat := make([]time.Duration, cfg.Agents)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	start := time.Now()
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.Agents || firstErr.Load() != nil {
					return
				}
				t := time.Now()
				if err := reg.Apply(ctx, ops[i]); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	st := reg.Stats()
	reg.Close()
	if err := log.Close(); err != nil {
		return res, err
	}
	if p := firstErr.Load(); p != nil {
		return res, fmt.Errorf("bench: admit: %w", *p)
	}
	res.AdmitPerS = float64(cfg.Agents) / elapsed.Seconds()
	slices.Sort(lat)
	res.AdmitP50MS = ms(lat[len(lat)/2])
	res.AdmitP99MS = ms(lat[min(len(lat)-1, len(lat)*99/100)])
	res.Writes = st.Writes - 1 // less Recover's SetMaster
	res.LargestBatch = st.LargestBatch
	if st.Writes > 0 {
		res.WriteMS = ms(st.WriteTime / time.Duration(st.Writes))
	}
	if res.Bytes, err = replog.DirSize(dir); err != nil {
		return res, err
	}

	// Restart.
	start = time.Now()
	log, reg, err = open(ctx, lcfg, true)
	if err != nil {
		return res, fmt.Errorf("bench: recover: %w", err)
	}
	res.RecoverMS = ms(time.Since(start))
	got := reg.Stats().RegistryAgents
	reg.Close()
	log.Close()
	if got != cfg.Agents {
		return res, fmt.Errorf("bench: recovered %d agents, want %d", got, cfg.Agents)
	}
	return res, nil
}

// open starts the log and a recovered registrar on it.
func open(ctx context.Context, cfg replog.Config, strict bool) (*replog.Log, *registrar.Registrar, error) {
	m := registrar.NewMachine()
	log, err := replog.Open(cfg, m)
	if err != nil {
		return nil, nil, err
	}
	if err := log.AwaitLeader(ctx); err != nil {
		log.Close()
		return nil, nil, err
	}
	reg, err := registrar.New(registrar.Config{Store: log, Machine: m, Strict: strict})
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	master := &mesos.MasterInfo{Id: proto.String(uuid.NewString()), Ip: proto.Uint32(0x7f000001), Port: proto.Uint32(5050), Hostname: proto.String("localhost")}
	if _, err := reg.Recover(ctx, master); err != nil {
		reg.Close()
		log.Close()
		return nil, nil, err
	}
	return log, reg, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// agentInfo is a typical agent: hostname, ID in Mesos's form
// (<master UUID>-S<n>), cpus, mem, disk, a port range and two attributes.
func agentInfo(prefix string, i int) *mesos.AgentInfo {
	scalar := func(name string, v float64) *mesos.Resource {
		return &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}}
	}
	text := func(name, v string) *mesos.Attribute {
		return &mesos.Attribute{Name: proto.String(name), Type: mesos.Value_TEXT.Enum(), Text: &mesos.Value_Text{Value: proto.String(v)}}
	}
	return &mesos.AgentInfo{
		Id:       &mesos.AgentID{Value: proto.String(fmt.Sprintf("%s-S%d", prefix, i))},
		Hostname: proto.String(fmt.Sprintf("agent-%05d.dc1.example.com", i)),
		Port:     proto.Int32(5051),
		Resources: []*mesos.Resource{
			scalar("cpus", 32), scalar("mem", 256*1024), scalar("disk", 1024*1024),
			{Name: proto.String("ports"), Type: mesos.Value_RANGES.Enum(), Ranges: &mesos.Value_Ranges{Range: []*mesos.Value_Range{{Begin: proto.Uint64(31000), End: proto.Uint64(32000)}}}},
		},
		Attributes: []*mesos.Attribute{text("rack", fmt.Sprintf("r%03d", i/40)), text("zone", fmt.Sprintf("z%d", i%3))},
	}
}
