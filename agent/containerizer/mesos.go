package containerizer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
)

func init() {
	Register("mesos", func(opts Options) (Containerizer, error) { return NewMesos(opts) })
}

// Mesos is the `mesos` containerizer: each container is a plain process in
// its own session (so its own process group), with stdout and stderr
// appended to files in the sandbox, confined by the configured isolators.
// When the main process ends the rest of its process group is killed, as
// Mesos destroys a container whose executor exited.
type Mesos struct {
	clock      clock.Clock
	log        *slog.Logger
	isolators  []Isolator
	runtimeDir string
	unsynced   bool // Options.RuntimeUnsynced

	mu         sync.Mutex
	live       map[string]*proc
	terminated Terminated[*proc]
}

type proc struct {
	id        string
	pid       int
	started   time.Time
	done      chan struct{} // closed once term is set
	term      Termination
	destroyed bool // Destroy was called (guarded by Mesos.mu)
	// limitation is the first limitation an isolator reported (guarded by
	// Mesos.mu); watchers counts the goroutines reading Limiter channels.
	limitation *Limitation
	watchers   sync.WaitGroup
	// startTicks is set for a recovered process (not our child): its pid
	// may be recycled once it has ended, so signals to its process group
	// are sent only while the pid still names the same process.
	startTicks uint64
}

// signalGroup signals the container's process group, unless the container
// was recovered and its pid now names another process.
func (p *proc) signalGroup(sig syscall.Signal) {
	if p.startTicks != 0 {
		if st, err := readProcStat(p.pid); err == nil && st.startTicks != p.startTicks {
			return
		}
	}
	killGroup(p.pid, sig)
}

// NewMesos builds a mesos containerizer with opts.Isolation (default
// DefaultIsolation).
func NewMesos(opts Options) (*Mesos, error) {
	names := opts.Isolation
	if len(names) == 0 {
		names = DefaultIsolation
	}
	isos, err := NewIsolators(names, opts)
	if err != nil {
		return nil, err
	}
	c := opts.Clock
	if c == nil {
		c = clock.Real
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Mesos{clock: c, log: log, isolators: isos, runtimeDir: opts.RuntimeDir, unsynced: opts.RuntimeUnsynced,
		live: map[string]*proc{}}, nil
}

// Launch implements Containerizer.
func (m *Mesos) Launch(ctx context.Context, cfg ContainerConfig) (Container, error) {
	if cfg.ContainerID == "" {
		return Container{}, errors.New("launch: 'container_id' is empty")
	}
	if cfg.Path == "" {
		return Container{}, fmt.Errorf("launch %s: no program to run", cfg.ContainerID)
	}
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return Container{}, fmt.Errorf("launch %s: sandbox %q is not a directory", cfg.ContainerID, cfg.Dir)
	}
	m.mu.Lock()
	if m.live[cfg.ContainerID] != nil || m.terminated.Has(cfg.ContainerID) {
		m.mu.Unlock()
		return Container{}, fmt.Errorf("launch %s: %w", cfg.ContainerID, ErrDuplicate)
	}
	// Reserve the ID while launching.
	p := &proc{id: cfg.ContainerID, done: make(chan struct{})}
	m.live[cfg.ContainerID] = p
	m.mu.Unlock()

	c, err := m.start(ctx, &cfg, p)
	if err != nil {
		m.mu.Lock()
		delete(m.live, cfg.ContainerID)
		m.mu.Unlock()
		return Container{}, err
	}
	return c, nil
}

func (m *Mesos) start(ctx context.Context, cfg *ContainerConfig, p *proc) (Container, error) {
	if len(cfg.Volumes) > 0 && !mountsVolumes(m.isolators) {
		// No mount namespace: the volumes are linked into the sandbox,
		// which the container shares with the host.
		if err := LinkVolumes(cfg.Dir, cfg.Volumes); err != nil {
			return Container{}, fmt.Errorf("launch %s: %w", cfg.ContainerID, err)
		}
	}
	spec := &LaunchSpec{SysProcAttr: &syscall.SysProcAttr{Setsid: true}, Env: append([]string(nil), cfg.Env...)}
	if u := cfg.User; u != nil {
		spec.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
	}
	prepared := 0
	cleanup := func() {
		for i := prepared - 1; i >= 0; i-- {
			if err := m.isolators[i].Cleanup(context.WithoutCancel(ctx), cfg.ContainerID); err != nil {
				m.log.Warn("isolator cleanup failed", "isolator", m.isolators[i].Name(), "container", cfg.ContainerID, "err", err)
			}
		}
	}
	for _, iso := range m.isolators {
		if err := iso.Prepare(ctx, cfg, spec); err != nil {
			cleanup()
			return Container{}, fmt.Errorf("launch %s: isolator %s: %w", cfg.ContainerID, iso.Name(), err)
		}
		prepared++
	}
	stdout, err := openLog(filepath.Join(cfg.Dir, "stdout"))
	if err != nil {
		cleanup()
		return Container{}, fmt.Errorf("launch %s: %w", cfg.ContainerID, err)
	}
	defer stdout.Close()
	stderr, err := openLog(filepath.Join(cfg.Dir, "stderr"))
	if err != nil {
		cleanup()
		return Container{}, fmt.Errorf("launch %s: %w", cfg.ContainerID, err)
	}
	defer stderr.Close()
	if u := cfg.User; u != nil {
		// The task's output is its user's, as the rest of its sandbox.
		for _, f := range []*os.File{stdout, stderr} {
			if err := f.Chown(int(u.UID), int(u.GID)); err != nil {
				cleanup()
				return Container{}, fmt.Errorf("launch %s: giving %s to user %s: %w", cfg.ContainerID, f.Name(), u.Name, err)
			}
		}
	}

	cmd := &exec.Cmd{
		Path:        cfg.Path,
		Args:        cfg.Args,
		Env:         spec.Env,
		Dir:         cfg.Dir,
		Stdout:      stdout, // *os.File: the child gets the descriptor itself,
		Stderr:      stderr, // no copying goroutines in the agent
		SysProcAttr: spec.SysProcAttr,
	}
	if len(cmd.Args) == 0 {
		cmd.Args = []string{cfg.Path}
	}
	if err := startCmd(cmd, spec.OnForkThread); err != nil {
		cleanup()
		return Container{}, fmt.Errorf("launch %s: %w", cfg.ContainerID, err)
	}
	m.mu.Lock()
	p.pid = cmd.Process.Pid
	p.started = m.clock.Now()
	m.mu.Unlock()
	abort := func(err error) (Container, error) {
		killGroup(p.pid, syscall.SIGKILL)
		_ = cmd.Wait()
		cleanup()
		m.forgetRuntime(cfg.ContainerID)
		return Container{}, fmt.Errorf("launch %s: %w", cfg.ContainerID, err)
	}
	// Checkpoint the process before Isolate, so an agent crash cannot
	// leave an executor nobody knows about.
	if err := m.checkpointRuntime(cfg.ContainerID, p.pid, p.started); err != nil {
		return abort(err)
	}
	for _, iso := range m.isolators {
		if err := iso.Isolate(ctx, cfg.ContainerID, p.pid); err != nil {
			return abort(fmt.Errorf("isolator %s: %w", iso.Name(), err))
		}
	}
	m.watchLimitations(p)
	go m.reap(cmd, p, cleanup)
	return Container{ID: cfg.ContainerID, Pid: p.pid, Started: p.started}, nil
}

// startCmd starts cmd, first running setup on the OS thread that forks it
// (LaunchSpec.OnForkThread) and undoing it there afterwards. That thread
// is locked to its goroutine and never unlocked, so Go terminates it when
// the goroutine returns instead of reusing it: whatever the setup did to
// it (an undo that failed) ends with it.
//
// Except on the main thread, which Go wedges instead of ending: had its
// undo failed, it would stay in the container's cgroups for good, and the
// kill that freezes the container would freeze the agent (an agent thread
// was once found in a container's freezer cgroup). So a goroutine that
// lands on the main thread keeps it (the goroutine it starts then cannot
// run there) and forks from another.
func startCmd(cmd *exec.Cmd, setup []func(tid int) (func(), error)) error {
	if len(setup) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := startLocked(cmd, setup)
		if syscall.Gettid() == syscall.Getpid() {
			runtime.UnlockOSThread() // the main thread, which did not fork
		}
		errc <- err
	}()
	return <-errc
}

// startLocked is startCmd's work on a goroutine locked to its thread.
func startLocked(cmd *exec.Cmd, setup []func(tid int) (func(), error)) error {
	tid := syscall.Gettid()
	if tid == syscall.Getpid() {
		return startCmd(cmd, setup)
	}
	var undos []func()
	err := func() error {
		for _, f := range setup {
			undo, err := f(tid)
			if err != nil {
				return err
			}
			undos = append(undos, undo)
		}
		return cmd.Start()
	}()
	for i := len(undos) - 1; i >= 0; i-- {
		undos[i]()
	}
	return err
}

func openLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}

// reap waits for the main process, then kills what is left of its process
// group, runs the isolators' cleanup and publishes the termination.
func (m *Mesos) reap(cmd *exec.Cmd, p *proc, cleanup func()) {
	err := cmd.Wait()
	killGroup(p.pid, syscall.SIGKILL)
	cleanup()
	m.finish(p, termination(cmd, err))
}

// watchLimitations starts one goroutine per Limiter isolator: a reported
// limitation is recorded and the container destroyed at once.
func (m *Mesos) watchLimitations(p *proc) {
	for _, iso := range m.isolators {
		l, ok := iso.(Limiter)
		if !ok {
			continue
		}
		ch := l.Limitations(p.id)
		p.watchers.Add(1)
		go func() {
			defer p.watchers.Done()
			for lim := range ch {
				m.mu.Lock()
				first := p.limitation == nil
				if first {
					p.limitation = &lim
				}
				m.mu.Unlock()
				if first {
					m.log.Info("container reached a limit; destroying it", "container", p.id, "reason", lim.Reason.String())
					go m.Destroy(context.Background(), p.id, 0)
				}
			}
		}()
	}
}

// finish publishes a container's termination once its isolators are
// cleaned up: it waits for the limitation watchers (their channels close
// when Cleanup returns) so a limitation found at cleanup is included.
func (m *Mesos) finish(p *proc, term Termination) {
	p.watchers.Wait()
	m.forgetRuntime(p.id)

	m.mu.Lock()
	term.Destroyed = p.destroyed
	term.Limitation = p.limitation
	p.term = term
	delete(m.live, p.id)
	m.terminated.Add(p.id, p)
	m.mu.Unlock()
	close(p.done)
}

func termination(cmd *exec.Cmd, err error) Termination {
	st := cmd.ProcessState
	if st == nil {
		return Termination{ExitCode: -1, Message: fmt.Sprintf("Failed to wait for the executor: %v", err)}
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	t := Termination{Status: int(ws), ExitCode: st.ExitCode()}
	switch {
	case ws.Signaled():
		t.Signal = int(ws.Signal())
		t.Message = fmt.Sprintf("Command terminated with signal %s", signalName(ws.Signal()))
	default:
		t.Message = fmt.Sprintf("Command exited with status %d", ws.ExitStatus())
	}
	return t
}

// signalName renders a signal as strsignal does ("Terminated", "Killed").
func signalName(s syscall.Signal) string {
	name := s.String()
	if name == "" {
		return fmt.Sprintf("%d", int(s))
	}
	if r := []rune(name); len(r) > 0 && r[0] >= 'a' && r[0] <= 'z' {
		r[0] -= 'a' - 'A'
		return string(r)
	}
	return name
}

// killGroup signals the process group led by pid; "no such process" (the
// group is empty already) is not an error worth reporting.
func killGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// Wait implements Containerizer.
func (m *Mesos) Wait(ctx context.Context, id string) (Termination, error) {
	p := m.lookup(id)
	if p == nil {
		return Termination{}, fmt.Errorf("wait %s: %w", id, ErrUnknownContainer)
	}
	select {
	case <-p.done:
		return p.term, nil
	case <-ctx.Done():
		return Termination{}, ctx.Err()
	}
}

func (m *Mesos) lookup(id string) *proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.live[id]; p != nil {
		return p
	}
	p, _ := m.terminated.Get(id)
	return p
}

// Destroy implements Containerizer.
func (m *Mesos) Destroy(ctx context.Context, id string, grace time.Duration) error {
	m.mu.Lock()
	p := m.live[id]
	if p == nil {
		known := m.terminated.Has(id)
		m.mu.Unlock()
		if known {
			return nil
		}
		return fmt.Errorf("destroy %s: %w", id, ErrUnknownContainer)
	}
	if p.pid == 0 {
		m.mu.Unlock()
		return fmt.Errorf("destroy %s: the container is still launching", id)
	}
	p.destroyed = true
	m.mu.Unlock()

	if grace > 0 {
		p.signalGroup(syscall.SIGTERM)
		t := m.clock.NewTimer(grace)
		select {
		case <-p.done:
			t.Stop()
			return nil
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
		}
	}
	m.beforeKill(id)
	p.signalGroup(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("destroy %s: %w", id, ctx.Err())
	}
}

// beforeKill lets the Killer isolators lift what would slow the
// container's death.
func (m *Mesos) beforeKill(id string) {
	for _, iso := range m.isolators {
		if k, ok := iso.(Killer); ok {
			if err := k.BeforeKill(id); err != nil {
				m.log.Warn("isolator could not prepare the kill", "isolator", iso.Name(), "container", id, "err", err)
			}
		}
	}
}

// Update implements Updater: each UpdatingIsolator in turn sizes the live
// container for resources.
func (m *Mesos) Update(ctx context.Context, id string, resources []*mesos.Resource) error {
	m.mu.Lock()
	p := m.live[id]
	m.mu.Unlock()
	if p == nil || p.pid == 0 {
		return fmt.Errorf("update %s: %w", id, ErrUnknownContainer)
	}
	for _, iso := range m.isolators {
		if u, ok := iso.(UpdatingIsolator); ok {
			if err := u.Update(ctx, id, resources); err != nil {
				return fmt.Errorf("update %s: isolator %s: %w", id, iso.Name(), err)
			}
		}
	}
	return nil
}

// Limitation implements Containerizer.
func (m *Mesos) Limitation(id string) (Limitation, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.live[id]
	if p == nil {
		p, _ = m.terminated.Get(id)
	}
	if p == nil || p.limitation == nil {
		return Limitation{}, false
	}
	return *p.limitation, true
}

// Usage implements Containerizer: the first Usager isolator's answer, or
// without one, the posix measurement of the container's session.
func (m *Mesos) Usage(_ context.Context, id string) (*mesos.ResourceStatistics, error) {
	m.mu.Lock()
	p := m.live[id]
	m.mu.Unlock()
	if p == nil || p.pid == 0 {
		return nil, fmt.Errorf("usage %s: %w", id, ErrUnknownContainer)
	}
	var errs []error
	for _, iso := range m.isolators {
		u, ok := iso.(Usager)
		if !ok {
			continue
		}
		st, err := u.Usage(id)
		if err == nil {
			return st, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", iso.Name(), err))
	}
	if len(errs) == 0 {
		st, err := posixUsage(p.pid, m.clock.Now())
		if err != nil {
			return nil, fmt.Errorf("usage %s: %w", id, err)
		}
		return st, nil
	}
	return nil, fmt.Errorf("usage %s: %w", id, errors.Join(errs...))
}

// Containers implements Containerizer.
func (m *Mesos) Containers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.live))
	for id, p := range m.live {
		if p.pid > 0 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
