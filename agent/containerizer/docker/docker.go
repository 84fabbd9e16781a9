package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/internal/clock"
)

// DefaultRemoveDelay is how long a terminated container is kept before
// it is removed (Mesos's --docker_remove_delay), for post-mortem
// inspection with `docker logs` and `docker inspect`.
const DefaultRemoveDelay = 6 * time.Hour

// Config configures a docker containerizer.
type Config struct {
	// Options are the containerizer options the agent gives every
	// containerizer: Clock (grace periods, removal delay), Logger and
	// RuntimeDir (where the log cursors are checkpointed; it also
	// identifies this agent's containers unless Owner is set).
	containerizer.Options
	// Socket is the Engine's address (--docker_socket): a socket path,
	// unix:///path or tcp://host:port (over TLS when DOCKER_CERT_PATH is
	// set; see newEngineClient). Empty: $DOCKER_HOST, else DefaultSocket.
	Socket string
	// RegistryAuth holds the registry credentials image pulls use
	// (--docker_config, LoadRegistryAuth); nil: none.
	RegistryAuth *RegistryAuth
	// SandboxDirectory is where the sandbox is mounted inside containers
	// (--sandbox_directory); empty means DefaultSandboxDirectory.
	SandboxDirectory string
	// RemoveDelay is how long a terminated container is kept
	// (--docker_remove_delay); zero means DefaultRemoveDelay, a negative
	// value removes it as soon as its termination is known.
	RemoveDelay time.Duration
	// KeepOrphans disables removing, at recovery, this agent's containers
	// that the agent does not know (the inverse of Mesos's
	// --docker_kill_orphans, which defaults to true).
	KeepOrphans bool
	// EnableCFS sets a CFS quota from the cpus request
	// (--cgroups_enable_cfs); a task's cpus limit always sets one.
	EnableCFS bool
	// RevocableCPULowPriority gives a container holding revocable cpus 16
	// cpu shares per cpu instead of 1024 (--revocable_cpu_low_priority).
	RevocableCPULowPriority bool
	// Owner is the value of the org.mezzo.owner label that marks this
	// agent's containers, so agents sharing one engine never recover or
	// remove each other's containers. Empty: the absolute RuntimeDir, or
	// a random value when there is none (then nothing can be recovered).
	Owner string
}

// Docker is the docker containerizer. It implements
// containerizer.Containerizer; it is safe for concurrent use.
type Docker struct {
	engine      *engine
	auth        *RegistryAuth
	clock       clock.Clock
	log         *slog.Logger
	runtimeDir  string
	owner       string
	sandboxDir  string
	removeDelay time.Duration
	keepOrphans bool
	enableCFS   bool
	lowPriority bool // RevocableCPULowPriority

	// bg scopes the background work (log followers, waiters, removal
	// timers); Close cancels it and leaves the containers running.
	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the background goroutines

	mu         sync.Mutex
	live       map[string]*ctr
	terminated containerizer.Terminated[*ctr]
}

var (
	_ containerizer.Containerizer      = (*Docker)(nil)
	_ containerizer.LimitationReporter = (*Docker)(nil)
	_ containerizer.UsageReporter      = (*Docker)(nil)
	_ containerizer.Recoverer          = (*Docker)(nil)
)

// ctr is one container; fields after done are guarded by Docker.mu.
type ctr struct {
	id       string // Mesos container ID
	name     string
	sandbox  string
	dockerID string // "" while launching
	pid      int
	started  time.Time
	cpus     float64 // for Usage's cpus_limit
	memLimit int64
	// cpuCapped: the container has fewer cpu shares than one cpu's or a
	// CFS quota, which Destroy lifts before SIGKILL (engine.unthrottle).
	cpuCapped bool
	logsDone  chan struct{} // closed when the follower has stopped
	done      chan struct{} // closed once term is set

	stopSignal string
	destroyed  bool
	recovered  bool
	term       containerizer.Termination
	limitation *containerizer.Limitation
}

// New builds a docker containerizer. It does not contact the engine: the
// first Launch or Recover does (and fails clearly if it is unreachable).
func New(cfg Config) (*Docker, error) {
	api, err := newEngineClient(cfg.Socket)
	if err != nil {
		return nil, err
	}
	c := cfg.Clock
	if c == nil {
		c = clock.Real
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	owner := cfg.Owner
	if owner == "" && cfg.RuntimeDir != "" {
		if owner, err = filepath.Abs(cfg.RuntimeDir); err != nil {
			return nil, err
		}
	}
	if owner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		owner = "ephemeral-" + hex.EncodeToString(b[:])
	}
	sd := cfg.SandboxDirectory
	if sd == "" {
		sd = DefaultSandboxDirectory
	}
	if !filepath.IsAbs(sd) {
		return nil, fmt.Errorf("sandbox_directory %q is not an absolute path", sd)
	}
	rd := cfg.RemoveDelay
	if rd == 0 {
		rd = DefaultRemoveDelay
	}
	bg, cancel := context.WithCancel(context.Background())
	return &Docker{
		engine: &engine{api: api}, auth: cfg.RegistryAuth, clock: c, log: log, runtimeDir: cfg.RuntimeDir, owner: owner,
		sandboxDir: sd, removeDelay: rd, keepOrphans: cfg.KeepOrphans, enableCFS: cfg.EnableCFS,
		lowPriority: cfg.RevocableCPULowPriority,
		bg:          bg, cancel: cancel,
		live: map[string]*ctr{},
	}, nil
}

// Close stops following, waiting on and removing containers; the
// containers themselves keep running (as when the agent process exits),
// for a later Recover to pick up. Wait calls on live containers block
// until their context is done. Close returns once the background work
// has stopped (output copied so far is in the sandbox files and the log
// cursors are checkpointed).
func (d *Docker) Close() error {
	d.cancel()
	d.wg.Wait()
	return d.engine.api.Close()
}

// goBG runs f as background work that Close waits for.
func (d *Docker) goBG(f func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
}

// Owner returns the org.mezzo.owner label value of this containerizer's
// containers.
func (d *Docker) Owner() string { return d.owner }

// Wait implements containerizer.Containerizer.
func (d *Docker) Wait(ctx context.Context, id string) (containerizer.Termination, error) {
	c := d.lookup(id)
	if c == nil {
		return containerizer.Termination{}, fmt.Errorf("wait %s: %w", id, containerizer.ErrUnknownContainer)
	}
	select {
	case <-c.done:
		return c.term, nil
	case <-ctx.Done():
		return containerizer.Termination{}, ctx.Err()
	}
}

func (d *Docker) lookup(id string) *ctr {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.live[id]; c != nil {
		return c
	}
	c, _ := d.terminated.Get(id)
	return c
}

// Destroy implements containerizer.Containerizer: the container's stop
// signal (SIGTERM unless the image or a "stop-signal" parameter says
// otherwise), then SIGKILL once grace has passed on the injected clock
// (as `docker stop -t grace`, with sub-second precision), and it waits
// for the termination.
func (d *Docker) Destroy(ctx context.Context, id string, grace time.Duration) error {
	d.mu.Lock()
	c := d.live[id]
	if c == nil {
		known := d.terminated.Has(id)
		d.mu.Unlock()
		if known {
			return nil
		}
		return fmt.Errorf("destroy %s: %w", id, containerizer.ErrUnknownContainer)
	}
	if c.dockerID == "" {
		d.mu.Unlock()
		return fmt.Errorf("destroy %s: the container is still launching", id)
	}
	c.destroyed = true
	sig := c.stopSignal
	d.mu.Unlock()
	if sig == "" {
		sig = "SIGTERM"
	}
	if grace > 0 {
		if err := d.engine.kill(ctx, c.dockerID, sig); err != nil {
			d.log.Warn("signalling container", "container", id, "signal", sig, "err", err)
		}
		t := d.clock.NewTimer(grace)
		select {
		case <-c.done:
			t.Stop()
			return nil
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
		}
	}
	if c.cpuCapped {
		// A process killed at 16 shares beside a busy service waits
		// seconds to be scheduled and exit (see cgroups.Manager.Unthrottle).
		if err := d.engine.unthrottle(context.WithoutCancel(ctx), c.dockerID); err != nil {
			d.log.Warn("lifting the cpu limits of a container before killing it", "container", id, "err", err)
		}
	}
	if err := d.engine.kill(context.WithoutCancel(ctx), c.dockerID, "SIGKILL"); err != nil {
		return fmt.Errorf("destroy %s: %w", id, err)
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("destroy %s: %w", id, ctx.Err())
	}
}

// Containers implements containerizer.Containerizer.
func (d *Docker) Containers() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.live))
	for id, c := range d.live {
		if c.dockerID != "" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// DockerID returns the engine's ID of a known container.
func (d *Docker) DockerID(id string) (string, bool) {
	c := d.lookup(id)
	if c == nil {
		return "", false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return c.dockerID, c.dockerID != ""
}

// Limitation implements containerizer.LimitationReporter: a container the
// kernel's OOM killer ended reports REASON_CONTAINER_LIMITATION_MEMORY
// once its termination is known.
func (d *Docker) Limitation(id string) (containerizer.Limitation, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.live[id]
	if c == nil {
		c, _ = d.terminated.Get(id)
	}
	if c == nil || c.limitation == nil {
		return containerizer.Limitation{}, false
	}
	return *c.limitation, true
}

// cursorPath is where a container's log cursor is checkpointed.
func (d *Docker) cursorPath(id string) string {
	if d.runtimeDir == "" {
		return ""
	}
	return filepath.Join(d.runtimeDir, "docker", id, "logs.cursor")
}

func (d *Docker) forgetCursor(id string) {
	if d.runtimeDir == "" {
		return
	}
	_ = os.RemoveAll(filepath.Join(d.runtimeDir, "docker", id))
}
