// Package sysmetrics reads the host metrics that Mesos's master and agent
// both report under system/* in /metrics/snapshot: CPUs, load averages and
// memory, from /proc as Mesos's system process reads them.
package sysmetrics

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Read returns system/cpus_total, system/load_1min, system/load_5min,
// system/load_15min, system/mem_total_bytes and system/mem_free_bytes. A
// value whose source cannot be read is left out rather than reported as 0,
// as Mesos leaves out a gauge that failed.
func Read() map[string]float64 { return ReadFrom("/proc", runtime.NumCPU()) }

// ReadFrom is Read over another proc directory and CPU count (tests).
func ReadFrom(proc string, cpus int) map[string]float64 {
	m := map[string]float64{"system/cpus_total": float64(cpus)}
	if l, err := loadavg(filepath.Join(proc, "loadavg")); err == nil {
		m["system/load_1min"], m["system/load_5min"], m["system/load_15min"] = l[0], l[1], l[2]
	}
	if total, free, err := meminfo(filepath.Join(proc, "meminfo")); err == nil {
		m["system/mem_total_bytes"] = total
		m["system/mem_free_bytes"] = free
	}
	return m
}

// loadavg parses the first three fields of /proc/loadavg.
func loadavg(path string) ([3]float64, error) {
	var out [3]float64
	b, err := os.ReadFile(path)
	if err != nil {
		return out, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return out, fmt.Errorf("%s: %q has fewer than three fields", path, b)
	}
	for i := range out {
		if out[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return out, fmt.Errorf("%s: %v", path, err)
		}
	}
	return out, nil
}

// meminfo returns MemTotal and MemFree in bytes. Mesos's free memory is
// sysinfo(2)'s freeram, which is MemFree (not MemAvailable).
func meminfo(path string) (total, free float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var haveTotal, haveFree bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "MemTotal" && name != "MemFree") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, 0, fmt.Errorf("%s: %s has no value", path, name)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %s: %v", path, name, err)
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		if name == "MemTotal" {
			total, haveTotal = v, true
		} else {
			free, haveFree = v, true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if !haveTotal || !haveFree {
		return 0, 0, fmt.Errorf("%s: MemTotal or MemFree missing", path)
	}
	return total, free, nil
}
