// Package containerizer runs the agent's executors in containers. It owns the
// Containerizer interface the agent loop (package agent) launches, waits on
// and destroys executors through, the `mesos` containerizer (executors as
// plain processes, each in its own session and process group, with an
// isolators for cgroups and namespaces that may report limitations and
// usage), the runtime checkpoint of each container's process with which a
// restarted agent re-attaches to its executors (Recover), and a
// name→factory registry that the agent's --containerizers and --isolation
// flags select from.
package containerizer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
)

// ContainerConfig describes one container to launch: the executor's
// program, its environment and its sandbox.
type ContainerConfig struct {
	// ContainerID names the container; unique among live containers.
	ContainerID string
	// Path is the program to run; Args its argv (Args[0] is the program's
	// name as it sees it). For a shell command: "/bin/sh", {"sh", "-c", cmd}.
	Path string
	Args []string
	// Env is the complete environment ("K=V"); the agent's own environment is
	// not inherited, as in Mesos.
	Env []string
	// Dir is the sandbox: the working directory, where the files "stdout"
	// and "stderr" receive the process's output. It must exist.
	Dir string
	// Resources the container may use (for isolators).
	Resources []*mesos.Resource
	// ExecutorInfo of the executor the container runs (for isolators).
	ExecutorInfo *mesos.ExecutorInfo
	// Volumes are the persistent volumes of Resources, to be made visible
	// at their container paths (see VolumeMounter and LinkVolumes).
	Volumes []Volume
	// User, when set, is who the container's process runs as (the agent's
	// --switch_user); nil runs it as the agent's own user.
	User *User
}

// User is an operating-system user a container runs as.
type User struct {
	Name     string
	UID, GID uint32
	// Groups are the supplementary groups.
	Groups []uint32
}

// Container is a launched container.
type Container struct {
	ID string
	// Pid of the container's main process (leader of its process group).
	Pid     int
	Started time.Time
}

// Termination says how a container ended.
type Termination struct {
	// Status is the raw wait status of the main process, as Mesos reports it
	// in ExitedExecutorMessage.status.
	Status int
	// ExitCode is the exit code, or -1 if the process was killed by a signal.
	ExitCode int
	// Signal is the terminating signal's number, 0 if the process exited.
	Signal int
	// Destroyed is true when the container ended because Destroy was called.
	Destroyed bool
	// Message describes the termination for status updates, e.g.
	// "Command exited with status 1".
	Message string
	// Limitation is set when an isolator ended the container for exceeding
	// a resource limit (e.g. the memory limit); it takes precedence over
	// Destroyed when the agent reports the end.
	Limitation *Limitation
	// Recovered is true for a container re-attached after an agent restart:
	// its process was not a child of this process, so its exit status is
	// unknown (Status 0, ExitCode -1).
	Recovered bool
}

// Limitation says that a container hit a resource limit and was ended
// for it, as Mesos's isolators report a ContainerLimitation. The agent
// turns it into TASK_FAILED with Reason and Message.
type Limitation struct {
	// Reason is the TaskStatus reason, e.g.
	// REASON_CONTAINER_LIMITATION_MEMORY.
	Reason mesos.TaskStatus_Reason
	// Message explains the limitation ("Memory limit exceeded: ...").
	Message string
	// Resources is what was exceeded (e.g. mem with the usage reached).
	Resources []*mesos.Resource
}

// Errors returned by containerizers; compare with errors.Is.
var (
	ErrUnknownContainer = errors.New("unknown container")
	ErrDuplicate        = errors.New("container already exists")
)

// Containerizer launches and manages containers. Implementations are safe
// for concurrent use.
type Containerizer interface {
	// Launch starts a container. The error names what failed (isolator,
	// program start); nothing is left running on error.
	Launch(ctx context.Context, cfg ContainerConfig) (Container, error)
	// Wait blocks until the container has terminated (or ctx is done) and
	// returns how. It may be called any number of times, also after the end.
	Wait(ctx context.Context, id string) (Termination, error)
	// Destroy kills the container: SIGTERM to its whole process group, then
	// SIGKILL once grace has passed, and waits for the end. Destroying an
	// already terminated container is not an error.
	Destroy(ctx context.Context, id string, grace time.Duration) error
	// Containers lists the IDs of the live containers, sorted.
	Containers() []string
}

// The optional interfaces below are implemented by the mesos containerizer;
// the agent finds them by type assertion, so other containerizers (docker)
// need not provide them.

// LimitationReporter reports resource limitations early.
type LimitationReporter interface {
	// Limitation returns the resource limitation an isolator reported for
	// the container, as soon as it is known (the container may still be
	// being destroyed).
	Limitation(id string) (Limitation, bool)
}

// UsageReporter measures containers for /monitor/statistics.
type UsageReporter interface {
	// Usage measures a live container's resource usage: the first Usager
	// isolator's ResourceStatistics, else the cpu times and resident memory
	// of its processes from /proc (as Mesos's posix isolators).
	Usage(ctx context.Context, id string) (*mesos.ResourceStatistics, error)
}

// Updater changes a live container's limits: the agent calls it when a
// running executor gets more tasks or one of its tasks ends, as Mesos's
// agent calls its containerizer's update.
type Updater interface {
	// Update sizes the container for resources, the executor's and its
	// live tasks' together. An unknown or ended container is
	// ErrUnknownContainer.
	Update(ctx context.Context, id string, resources []*mesos.Resource) error
}

// Recoverer re-attaches to containers after an agent restart.
type Recoverer interface {
	// Recover re-attaches to the containers a previous process launched
	// with the same Options.RuntimeDir (an agent restart). It returns them
	// sorted by ID: live ones can be waited on and destroyed as if launched
	// by this process; those whose process ended meanwhile are returned
	// with Ended set and Wait reports their termination. A corrupt
	// checkpoint is an error naming the file. Call it once, before Launch.
	Recover(ctx context.Context) ([]Recovered, error)
}

var (
	_ LimitationReporter = (*Mesos)(nil)
	_ UsageReporter      = (*Mesos)(nil)
	_ Recoverer          = (*Mesos)(nil)
	_ Updater            = (*Mesos)(nil)
)

// Recovered is a container found by Recover.
type Recovered struct {
	Container
	// Ended: the process had exited before Recover looked.
	Ended bool
}

// Options are given to containerizer and isolator factories.
type Options struct {
	// Isolation lists the isolators to use, by registered name
	// (--isolation). Empty means DefaultIsolation.
	Isolation []string
	// Clock times the grace period of Destroy; nil means clock.Real.
	Clock clock.Clock
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// RuntimeDir is where the containerizer checkpoints each live
	// container's process (pid and start time) so that Recover can
	// re-attach to it after a restart, like Mesos's --runtime_dir. Empty
	// disables checkpointing and recovery.
	RuntimeDir string
	// RuntimeUnsynced writes the RuntimeDir records atomically (temp file
	// and rename, so an agent process crash leaves a whole record) but
	// without fsyncs. Only for a caller that discards RuntimeDir after a
	// host crash, the one event an fsync guards against (the agent does
	// when it knows the host's boot id): the fsyncs then protect nothing
	// and delay every launch.
	RuntimeUnsynced bool
	// Adapt, when set, is applied to every isolator built from Isolation:
	// it lets the wiring expose isolator packages' own limitation and usage
	// hooks through the Limiter and Usager interfaces declared here.
	Adapt func(Isolator) Isolator
}

// DefaultIsolation is Mesos's default --isolation.
var DefaultIsolation = []string{"posix/cpu", "posix/mem"}

// Factory builds a containerizer.
type Factory func(opts Options) (Containerizer, error)

// IsolatorFactory builds an isolator.
type IsolatorFactory func(opts Options) (Isolator, error)

var (
	regMu         sync.Mutex
	containerizes = map[string]Factory{}
	isolators     = map[string]IsolatorFactory{}
)

// Register makes a containerizer available under name; it panics on a
// duplicate name (a programming error at init time).
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := containerizes[name]; dup {
		panic("containerizer: duplicate containerizer " + name)
	}
	containerizes[name] = f
}

// RegisterIsolator makes an isolator available under name (e.g.
// "cgroups/cpu"); it panics on a duplicate name.
func RegisterIsolator(name string, f IsolatorFactory) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := isolators[name]; dup {
		panic("containerizer: duplicate isolator " + name)
	}
	isolators[name] = f
}

// Names returns the registered containerizer names, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	return sortedKeys(containerizes)
}

// IsolatorNames returns the registered isolator names, sorted.
func IsolatorNames() []string {
	regMu.Lock()
	defer regMu.Unlock()
	return sortedKeys(isolators)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New builds the containerizer selected by a --containerizers value
// ("mesos"; comma separated). Only one containerizer at a time is supported
// for now; several names are an error, as are unknown or duplicate ones.
func New(containerizers string, opts Options) (Containerizer, error) {
	if strings.TrimSpace(containerizers) == "" {
		containerizers = "mesos"
	}
	names := strings.Split(containerizers, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(names) {
		return nil, fmt.Errorf("containerizers: duplicate entries in %q", containerizers)
	}
	if len(names) > 1 {
		return nil, fmt.Errorf("containerizers: %q: composing several containerizers is not supported yet", containerizers)
	}
	regMu.Lock()
	f, ok := containerizes[names[0]]
	regMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("containerizers: unknown or unsupported containerizer %q (known: %s)", names[0], strings.Join(Names(), ", "))
	}
	return f(opts)
}

// NewIsolators builds the isolators named in names, in order.
func NewIsolators(names []string, opts Options) ([]Isolator, error) {
	var out []Isolator
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if seen[n] {
			return nil, fmt.Errorf("isolation: duplicate isolator %q", n)
		}
		seen[n] = true
		regMu.Lock()
		f, ok := isolators[n]
		regMu.Unlock()
		if !ok {
			return nil, fmt.Errorf("isolation: unknown isolator %q (known: %s)", n, strings.Join(IsolatorNames(), ", "))
		}
		iso, err := f(opts)
		if err != nil {
			return nil, fmt.Errorf("isolation: %s: %w", n, err)
		}
		if opts.Adapt != nil {
			iso = opts.Adapt(iso)
		}
		out = append(out, iso)
	}
	return out, nil
}
