package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Time bounds of Kill. A frozen cgroup whose tasks sleep uninterruptibly
// (e.g. on a hung NFS server) may never reach FROZEN; Kill then signals
// anyway rather than hang the agent.
const (
	freezeTimeout = 2 * time.Second
	killTimeout   = 10 * time.Second
	pollInterval  = 5 * time.Millisecond
)

// Kill kills every process in the container's cgroups, including
// daemonized grandchildren that left its session and process group, and
// waits until the cgroups are empty. On v1 the freezer cgroup is frozen
// first so no process can fork while the pids are read and signalled; on
// v2 the kernel's cgroup.kill does the same atomically. A container whose
// cgroups do not exist is not an error.
func (m *Manager) Kill(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	_ = m.Unthrottle(id) // best effort: only a quicker end is at stake
	deadline := time.Now().Add(killTimeout)
	if m.version == V2 {
		dir := m.dir("", id)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			// Kernels before 5.14 have no cgroup.kill: freeze and signal.
			if err := m.killLoop(id, filepath.Join(dir, "cgroup.freeze"), "1", "0", deadline); err != nil {
				return err
			}
		}
		return m.waitEmpty(id, deadline)
	}
	freezer := ""
	if d := m.dir("freezer", id); d != "" {
		freezer = filepath.Join(d, "freezer.state")
	}
	if err := m.killLoop(id, freezer, "FROZEN", "THAWED", deadline); err != nil {
		return err
	}
	return m.waitEmpty(id, deadline)
}

// killLoop freezes (when stateFile exists), SIGKILLs every pid found and
// thaws, until no pid is left or the deadline passes.
func (m *Manager) killLoop(id, stateFile, frozen, thawed string, deadline time.Time) error {
	for {
		pids, err := m.pids(id)
		if err != nil {
			return fmt.Errorf("cgroups: container %s: %w", id, err)
		}
		if len(pids) == 0 {
			return nil
		}
		froze := stateFile != "" && freeze(stateFile, frozen) == nil
		if froze {
			// Re-read: a process may have forked before the freeze took.
			if more, err := m.pids(id); err == nil {
				pids = more
			}
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if froze {
			_ = os.WriteFile(stateFile, []byte(thawed), 0o644)
		}
		if err := m.waitEmpty(id, minTime(deadline, time.Now().Add(time.Second))); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return m.waitEmpty(id, deadline)
		}
	}
}

// freeze asks the freezer for state and waits (bounded) until it holds.
func freeze(stateFile, state string) error {
	if err := os.WriteFile(stateFile, []byte(state), 0o644); err != nil {
		return err
	}
	deadline := time.Now().Add(freezeTimeout)
	for {
		cur, err := os.ReadFile(stateFile)
		if err != nil {
			return err
		}
		got := strings.TrimSpace(string(cur))
		// v1 reports FROZEN; the v2 cgroup.freeze file echoes "1", and its
		// completion shows in cgroup.events, which we do not need to wait
		// for: SIGKILL reaches frozen v2 tasks.
		if got == state {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups: %s stuck at %s", stateFile, got)
		}
		time.Sleep(pollInterval)
	}
}

// waitEmpty polls until the container's cgroups hold no process.
func (m *Manager) waitEmpty(id string, deadline time.Time) error {
	for {
		pids, err := m.pids(id)
		if err == nil && len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("cgroups: container %s: %w", id, err)
			}
			return fmt.Errorf("cgroups: container %s: processes %v still running after SIGKILL", id, pids)
		}
		time.Sleep(pollInterval)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Unthrottle lifts the CPU limits of a container whose processes are about
// to be killed: cpu shares (v2: weight) back to the kernel's default for a
// group, and no CFS quota. A SIGKILLed process still has to be scheduled to
// exit, and one holding revocable cpus at 16 shares per cpu
// (--revocable_cpu_low_priority) waited 2–3 s for its turn beside a
// service using every core: the QoS correction that was to give the
// service its CPU back took that long to end. A container without a cpu
// cgroup (or one gone already) is not an error.
func (m *Manager) Unthrottle(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	var writes [][2]string // file, value
	if m.version == V2 {
		dir := m.dir("", id)
		writes = [][2]string{{filepath.Join(dir, "cpu.weight"), "100"}, {filepath.Join(dir, "cpu.max"), "max"}}
	} else if dir := m.dir("cpu", id); dir != "" {
		writes = [][2]string{{filepath.Join(dir, "cpu.shares"), "1024"}, {filepath.Join(dir, "cpu.cfs_quota_us"), "-1"}}
	}
	var first error
	for _, w := range writes {
		if err := os.WriteFile(w[0], []byte(w[1]), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = fmt.Errorf("cgroups: container %s: %w", id, err)
		}
	}
	return first
}
