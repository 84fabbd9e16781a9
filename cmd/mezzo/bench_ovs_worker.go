package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// `mezzo bench ovs-worker`: the processes `mezzo bench oversubscription`
// runs as tasks, so that the work they do is known and measurable.
//
//   - kind=service: a reserved service. From --start_ms to --rise_ms it
//     serves an open-loop stream of requests (each --work iterations of a
//     fixed computation) at --low_cpus worth of CPU, recording each
//     request's latency from its scheduled arrival; from --rise_ms to
//     --end_ms its load rises beyond its reservation: every thread serves
//     requests back to back (closed loop), and the requests completed per
//     second are its throughput.
//   - kind=tenant: a best-effort batch task, CPU-bound on one thread.
//
// Both exit by themselves at --end_ms (+1 s at most), whatever happens to
// the agent or the benchmark: a worker can never be left spinning. At
// start each writes <dir>/<name>.pid ("pid cpuacct-cgroup"), which the
// benchmark uses to measure it and, on the way out, to make sure it is
// gone; a service writes its results to <dir>/<name>.json at the end.

// ovsWorkerResult is what a service worker writes at its end.
type ovsWorkerResult struct {
	LowDone     int     `json:"low_done"`
	LowP50Ms    float64 `json:"low_p50_ms"`
	LowP99Ms    float64 `json:"low_p99_ms"`
	HighDone    int     `json:"high_done"`
	HighSeconds float64 `json:"high_seconds"`
	// PerSecond counts requests completed in each second since start.
	PerSecond []int `json:"per_second"`
}

func benchOvsWorker(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench ovs-worker", stderr)
	kind := fs.String("kind", "", "service or tenant")
	name := fs.String("name", "", "the worker's name (files in --dir)")
	dir := fs.String("dir", "", "where to write the pid and results")
	startMs := fs.Int64("start_ms", 0, "unix ms: measurement start")
	riseMs := fs.Int64("rise_ms", 0, "unix ms: service load rises")
	endMs := fs.Int64("end_ms", 0, "unix ms: exit")
	lowCPUs := fs.Float64("low_cpus", 0.2, "service: CPU worth of requests per second before the rise")
	threads := fs.Int("threads", 2, "service: threads serving requests")
	work := fs.Int("work", 100000, "iterations of work per request")
	reqMs := fs.Float64("req_ms", 5, "service: CPU ms one request takes (with --work), to pace the open loop")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *name == "" || *dir == "" || *endMs == 0 || strings.ContainsAny(*name, "/\x00") {
		fmt.Fprintln(stderr, "mezzo bench ovs-worker: --name, --dir and --end_ms are required")
		return 2
	}
	end := time.UnixMilli(*endMs)
	if err := writeWorkerPid(*dir, *name); err != nil {
		fmt.Fprintf(stderr, "mezzo bench ovs-worker: %v\n", err)
		return 1
	}
	// The last guard: whatever the rest does, the process ends.
	time.AfterFunc(time.Until(end)+time.Second, func() { os.Exit(0) })
	switch *kind {
	case "tenant":
		spinUntil(end, *work)
		return 0
	case "service":
		if *threads <= 0 || *lowCPUs < 0 || *reqMs <= 0 || *work <= 0 || *startMs == 0 || *riseMs < *startMs || *endMs < *riseMs {
			fmt.Fprintln(stderr, "mezzo bench ovs-worker: need start_ms <= rise_ms <= end_ms and positive --threads, --work, --req_ms")
			return 2
		}
		res := serveLoad(serviceLoad{
			start: time.UnixMilli(*startMs), rise: time.UnixMilli(*riseMs), end: end,
			threads: *threads, lowCPUs: *lowCPUs, work: *work, req: time.Duration(*reqMs * float64(time.Millisecond)),
		})
		b, _ := json.Marshal(res)
		tmp := filepath.Join(*dir, *name+".json.tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			fmt.Fprintf(stderr, "mezzo bench ovs-worker: %v\n", err)
			return 1
		}
		if err := os.Rename(tmp, filepath.Join(*dir, *name+".json")); err != nil {
			fmt.Fprintf(stderr, "mezzo bench ovs-worker: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "mezzo bench ovs-worker: unknown --kind %q (service or tenant)\n", *kind)
	return 2
}

// writeWorkerPid writes "<pid> <cpuacct cgroup>" to dir/name.pid.
func writeWorkerPid(dir, name string) error {
	cg := ""
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		cg = cpuacctCgroup(string(b))
	}
	return os.WriteFile(filepath.Join(dir, name+".pid"), fmt.Appendf(nil, "%d %s\n", os.Getpid(), cg), 0o644)
}

// cpuacctCgroup is the cpuacct path in a /proc/<pid>/cgroup text (v1:
// "4:cpu,cpuacct:/a/b" or "5:cpuacct:/a/b"), "" if there is none.
func cpuacctCgroup(text string) string {
	for _, line := range strings.Split(text, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpuacct" {
				return parts[2]
			}
		}
	}
	return ""
}

// workSink keeps the compiler from dropping the work.
var workSink uint64

// doWork runs n iterations of a fixed computation (xorshift).
func doWork(n int) {
	x := uint64(88172645463325252) + workSink
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	workSink = x
}

// spinUntil burns one CPU until end.
func spinUntil(end time.Time, chunk int) {
	for time.Now().Before(end) {
		doWork(chunk)
	}
}

// serviceLoad is a service worker's schedule.
type serviceLoad struct {
	start, rise, end time.Time
	threads          int
	lowCPUs          float64
	work             int
	req              time.Duration
}

// interval is the time between one thread's request arrivals before the
// rise: threads together ask for lowCPUs of CPU.
func (l serviceLoad) interval() time.Duration {
	if l.lowCPUs <= 0 {
		return 0
	}
	return time.Duration(float64(l.req) * float64(l.threads) / l.lowCPUs)
}

func serveLoad(l serviceLoad) ovsWorkerResult {
	var (
		mu        sync.Mutex
		lat       []float64
		res       ovsWorkerResult
		perSecond = make([]int, int(l.end.Sub(l.start)/time.Second)+1)
	)
	done := func(now time.Time) {
		if i := int(now.Sub(l.start) / time.Second); i >= 0 && i < len(perSecond) {
			perSecond[i]++
		}
	}
	time.Sleep(time.Until(l.start))
	var wg sync.WaitGroup
	for th := range l.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			// Open loop: arrivals every interval (staggered per thread),
			// whether or not the previous request is done.
			if iv := l.interval(); iv > 0 {
				for k := 0; ; k++ {
					arrival := l.start.Add(time.Duration(th)*iv/time.Duration(l.threads) + time.Duration(k)*iv)
					if !arrival.Before(l.rise) {
						break
					}
					time.Sleep(time.Until(arrival))
					doWork(l.work)
					now := time.Now()
					mu.Lock()
					if now.Before(l.rise) {
						lat = append(lat, float64(now.Sub(arrival))/float64(time.Millisecond))
						res.LowDone++
					}
					done(now)
					mu.Unlock()
				}
			}
			time.Sleep(time.Until(l.rise))
			// Closed loop: as much as the CPU allows.
			for {
				doWork(l.work)
				now := time.Now()
				if !now.Before(l.end) {
					return
				}
				mu.Lock()
				res.HighDone++
				done(now)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Float64s(lat)
	res.LowP50Ms, res.LowP99Ms = percentile(lat, 0.50), percentile(lat, 0.99)
	res.HighSeconds = l.end.Sub(l.rise).Seconds()
	res.PerSecond = perSecond
	return res
}

// calibrateWork returns the iterations of doWork that take d of this
// thread's CPU time (not wall time: other load on the machine does not
// change it much).
func calibrateWork(d time.Duration) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	threadCPU := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	n := 100000
	for {
		t0 := threadCPU()
		doWork(n)
		used := threadCPU() - t0
		if used >= 100*time.Millisecond || n > 1<<34 {
			return max(1, int(float64(n)*float64(d)/float64(max(used, 1))))
		}
		n *= 4
	}
}
