package containerizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"mezzo/internal/atomicfile"
)

// The runtime checkpoint, after Mesos's --runtime_dir: one directory per
// live container holding the file "pid", a JSON object
//
//	{"pid": 1234, "start_ticks": 5678, "started": 1700000000.5}
//
// start_ticks is the process's start time in clock ticks since boot
// (/proc/<pid>/stat field 22), so a recycled pid is never mistaken for the
// executor. The file is written atomically (temp file, fsync, rename)
// before the process may run, and removed once the container has ended.
const runtimePidFile = "pid"

type runtimeRecord struct {
	Pid        int     `json:"pid"`
	StartTicks uint64  `json:"start_ticks"`
	Started    float64 `json:"started"`
}

func (m *Mesos) runtimePath(id string) string {
	return filepath.Join(m.runtimeDir, id, runtimePidFile)
}

// checkpointRuntime records a started container's process.
func (m *Mesos) checkpointRuntime(id string, pid int, started time.Time) error {
	if m.runtimeDir == "" {
		return nil
	}
	ticks, err := processStartTicks(pid)
	if err != nil {
		return fmt.Errorf("checkpointing the container's pid: %w", err)
	}
	b, _ := json.Marshal(runtimeRecord{Pid: pid, StartTicks: ticks, Started: float64(started.UnixNano()) / 1e9})
	if m.unsynced {
		return atomicfile.WriteFileUnsynced(m.runtimePath(id), append(b, '\n'))
	}
	return atomicfile.WriteFile(m.runtimePath(id), append(b, '\n'))
}

// forgetRuntime removes an ended container's checkpoint.
func (m *Mesos) forgetRuntime(id string) {
	if m.runtimeDir == "" {
		return
	}
	if err := os.RemoveAll(filepath.Join(m.runtimeDir, id)); err != nil {
		m.log.Warn("removing the container checkpoint", "container", id, "err", err)
	}
}

// readRuntime reads one container's checkpoint; errors name the file.
func readRuntime(path string) (runtimeRecord, error) {
	var r runtimeRecord
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("corrupt container checkpoint %s: %v", path, err)
	}
	if r.Pid <= 0 {
		return r, fmt.Errorf("corrupt container checkpoint %s: 'pid' %d is not a process id", path, r.Pid)
	}
	return r, nil
}

// Recover implements Containerizer. Isolators that implement
// RecoveringIsolator re-adopt the recovered containers (and sweep orphans)
// before the containers are waited on, so a recovered container's
// limitation (an OOM kill) is reported as for a launched one.
func (m *Mesos) Recover(ctx context.Context) ([]Recovered, error) {
	if m.runtimeDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(m.runtimeDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("recovering containers: %w", err)
	}
	type found struct {
		p *proc
		w *processWatch
	}
	var out []Recovered
	var procs []found
	var errs []error
	// known lists every checkpointed container, also those whose checkpoint
	// is unreadable: their processes may run, so their cgroups are kept.
	var known []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id := e.Name()
		path := m.runtimePath(id)
		rec, err := readRuntime(path)
		if errors.Is(err, os.ErrNotExist) {
			// Launch died between creating the directory and the file.
			os.RemoveAll(filepath.Join(m.runtimeDir, id))
			continue
		}
		known = append(known, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		started := time.Unix(0, int64(rec.Started*1e9))
		p := &proc{id: id, pid: rec.Pid, started: started, done: make(chan struct{}), startTicks: rec.StartTicks}
		m.mu.Lock()
		if m.live[id] != nil || m.terminated.Has(id) {
			m.mu.Unlock()
			errs = append(errs, fmt.Errorf("recovering container %s: %w", id, ErrDuplicate))
			continue
		}
		m.live[id] = p
		m.mu.Unlock()

		w, alive := watchProcess(rec.Pid, rec.StartTicks)
		r := Recovered{Container: Container{ID: id, Pid: rec.Pid, Started: started}, Ended: !alive}
		out = append(out, r)
		procs = append(procs, found{p, w})
		m.log.Info("recovered container", "container", id, "pid", rec.Pid, "running", alive)
	}
	for _, iso := range m.isolators {
		if ri, ok := iso.(RecoveringIsolator); ok {
			if err := ri.Recover(ctx, known); err != nil {
				errs = append(errs, fmt.Errorf("recovering containers: isolator %s: %w", iso.Name(), err))
			}
		}
	}
	for _, f := range procs {
		m.watchLimitations(f.p)
		go m.reapRecovered(ctx, f.p, f.w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errors.Join(errs...)
}

// reapRecovered waits for a recovered container's process (not a child of
// this process: its exit status is unknown), then kills what is left of it
// and cleans up its isolators, which find its cgroups by their
// conventional paths.
func (m *Mesos) reapRecovered(ctx context.Context, p *proc, w *processWatch) {
	w.wait()
	p.signalGroup(syscall.SIGKILL)
	for i := len(m.isolators) - 1; i >= 0; i-- {
		if err := m.isolators[i].Cleanup(context.WithoutCancel(ctx), p.id); err != nil {
			m.log.Warn("isolator cleanup failed", "isolator", m.isolators[i].Name(), "container", p.id, "err", err)
		}
	}
	m.finish(p, Termination{
		ExitCode:  -1,
		Recovered: true,
		Message:   "Executor exited (its exit status is unknown: it was recovered after an agent restart)",
	})
}
