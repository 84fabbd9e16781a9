package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What `mezzo bench oversubscription` does with cgroups itself: it reads
// cpuacct counters to measure the CPU tasks really used, and on its way
// out (error and Ctrl-C included) it removes every cgroup its agent made,
// killing whatever is still inside, frozen or not.

// cgroupV1Base is where the v1 controllers are mounted.
var cgroupV1Base = "/sys/fs/cgroup"

// cpuacctUsage reads cpuacct.usage (ns of CPU, the cgroup and its
// descendants, dead ones included: the kernel charges every ancestor) of
// the cpuacct cgroup at rel.
func cpuacctUsage(rel string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(cgroupV1Base, "cpuacct", rel, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpuacct.usage of %s: %w", rel, err)
	}
	return time.Duration(n), nil
}

// sweepCgroups removes the cgroup root (relative to each mounted v1
// controller) and everything below it: per cgroup, deepest first, it thaws
// it (a frozen process cannot die), SIGKILLs every process in it, waits
// up to wait for it to empty and removes it. It returns what it could not
// remove, with the processes it could not kill.
func sweepCgroups(root string, wait time.Duration) error {
	if root == "" || strings.Contains(root, "..") || strings.Trim(root, "/") == "" {
		return fmt.Errorf("refusing to sweep cgroup root %q", root)
	}
	ctrls, err := os.ReadDir(cgroupV1Base)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	// Freezer first: thawing must come before killing anywhere.
	sort.SliceStable(ctrls, func(i, j int) bool { return ctrls[i].Name() == "freezer" && ctrls[j].Name() != "freezer" })
	var errs []error
	for _, c := range ctrls {
		top := filepath.Join(cgroupV1Base, c.Name(), root)
		if _, err := os.Stat(top); err != nil {
			continue
		}
		var dirs []string
		filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		// Deepest first: a cgroup with children cannot be removed.
		sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
		if c.Name() == "freezer" {
			for _, d := range dirs {
				_ = os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0o644)
			}
		}
		for _, d := range dirs {
			if err := emptyCgroup(d, wait); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// sweepCgroupsSettled sweeps root until it stays gone for half a second
// (at most settle in all): a component that has not quite stopped may
// still make a cgroup (a launch in flight) after the first sweep.
func sweepCgroupsSettled(root string, settle time.Duration) error {
	deadline := time.Now().Add(settle)
	for {
		if err := sweepCgroups(root, settle); err != nil {
			return err
		}
		quiet := time.Now().Add(500 * time.Millisecond)
		for cgroupRootExists(root) == "" && time.Now().Before(quiet) {
			time.Sleep(50 * time.Millisecond) // watching for a late cgroup, bounded by quiet
		}
		if left := cgroupRootExists(root); left == "" {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("%s keeps coming back", left)
		}
	}
}

// cgroupRootExists returns a v1 controller's directory of root if one
// exists, else "".
func cgroupRootExists(root string) string {
	ctrls, _ := os.ReadDir(cgroupV1Base)
	for _, c := range ctrls {
		p := filepath.Join(cgroupV1Base, c.Name(), root)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// emptyCgroup kills every process of the cgroup at dir until none is left
// or wait has passed.
func emptyCgroup(dir string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		pids := cgroupPids(dir)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still has processes %v after %v", dir, pids, wait)
		}
		_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0o644)
		for _, pid := range pids {
			if pid == os.Getpid() {
				// The agent runs in this process and moves a thread into a
				// container's cgroups to fork its task there; one left
				// behind is moved out, never killed with us.
				rescueOwnThreads(dir)
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond) // the kernel's exit, bounded by the deadline
	}
}

// rescueOwnThreads moves this process's threads listed in the cgroup at
// dir to the root cgroup of its hierarchy.
func rescueOwnThreads(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "tasks"))
	if err != nil {
		return
	}
	rel, err := filepath.Rel(cgroupV1Base, dir)
	if err != nil {
		return
	}
	ctrl := strings.SplitN(rel, string(filepath.Separator), 2)[0]
	for _, f := range strings.Fields(string(b)) {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%s", f)); err == nil {
			_ = os.WriteFile(filepath.Join(cgroupV1Base, ctrl, "tasks"), []byte(f), 0o644)
		}
	}
}

// cgroupPids lists the processes in the cgroup at dir (none if it is gone).
func cgroupPids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			pids = append(pids, n)
		}
	}
	return pids
}

// workerPid is one line of a worker's pid file.
type workerPid struct {
	name, cgroup string
	pid          int
}

// readWorkerPids reads the pid files workers wrote in dir.
func readWorkerPids(dir string) []workerPid {
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	var out []workerPid
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil || pid <= 0 {
			continue
		}
		w := workerPid{name: strings.TrimSuffix(filepath.Base(f), ".pid"), pid: pid}
		if len(fields) > 1 {
			w.cgroup = fields[1]
		}
		out = append(out, w)
	}
	return out
}

// killWorkers SIGKILLs every worker of dir that is still alive (and still
// a worker: a pid reused by another process is left alone), for the case
// the agent could not stop them (posix isolation has no cgroup to sweep).
// It returns the workers still alive after wait.
func killWorkers(dir string, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	for {
		var alive []int
		for _, w := range readWorkerPids(dir) {
			if isOvsWorker(w.pid) {
				alive = append(alive, w.pid)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		for _, pid := range alive {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond) // the kernel's exit, bounded by the deadline
	}
}

// isOvsWorker reports whether pid is a live (not zombie) ovs-worker.
func isOvsWorker(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(b), "ovs-worker") {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// State is the field after the command in parentheses.
	s := string(st)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
