package master

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/google/uuid"

	"mezzo/internal/authorizer"
	"mezzo/internal/clock"
	"mezzo/master/allocator"
)

// DefaultAllocator is the allocator built when Config.Allocator is nil.
const DefaultAllocator = "HierarchicalDRF"

// Mesos defaults (src/master/constants.hpp, src/master/flags.cpp).
const (
	DefaultAllocationInterval            = time.Second
	DefaultAgentPingTimeout              = 15 * time.Second
	DefaultMaxAgentPingTimeouts          = 5
	DefaultAgentReregisterTimeout        = 10 * time.Minute
	DefaultAllocatorRecoveryTimeout      = 10 * time.Minute
	DefaultAllocatorAgentRecoveryFactor  = 0.8
	DefaultHeartbeatInterval             = 15 * time.Second
	DefaultMaxCompletedFrameworks        = 50
	DefaultMaxCompletedTasksPerFramework = 1000
	// MaxRefuseSeconds caps Filters.refuse_seconds (one year), as Mesos does.
	MaxRefuseSeconds = 31536000
	// DefaultRefuseSeconds is Filters.refuse_seconds when a DECLINE or ACCEPT
	// carries no value.
	DefaultRefuseSeconds = 5
)

// DefaultShortTaskDuration is mezzo's: how long a task declared short by
// its label alone may run before it counts as long.
const DefaultShortTaskDuration = 10 * time.Minute

// DefaultAllocatorRecoveryHold is mezzo's: Mesos does not pause allocation
// after a failover when no role has quota.
const DefaultAllocatorRecoveryHold = 10 * time.Second

// Config configures a Master. The zero value of each optional field means
// the Mesos default; validate fills them in.
type Config struct {
	// Hostname is advertised in MasterInfo and in the leader's redirects.
	Hostname string
	// IP is the address the master's HTTP server is reachable on ("127.0.0.1").
	IP string
	// Port is the master's HTTP port (Mesos default 5050).
	Port int
	// Version is the mezzo version string reported in MasterInfo and /version.
	Version string
	// ID is the master's unique id; prefix of every framework, agent and
	// offer id it assigns. Empty means a new random UUID.
	ID string
	// Epoch is the leadership epoch stamped on every agent event (fencing).
	// A later issue sets it to the Raft term; 0 means 1.
	Epoch uint64

	// Allocator decides offers. Nil builds the allocator registered as
	// AllocatorName with Options{Interval: AllocationInterval, Clock: Clock}
	// and the master's callbacks. A caller-provided allocator must deliver
	// its offers to Master.AllocatorOffer and Master.AllocatorRescind.
	Allocator allocator.Allocator
	// AllocatorName selects the registered allocator (--allocator) when
	// Allocator is nil; empty means DefaultAllocator ("HierarchicalDRF").
	AllocatorName string
	// MinAllocatable is --min_allocatable_resources for the built allocator
	// (nil: Mesos's default, cpus:0.01|mem:32).
	MinAllocatable []map[string]float64
	// Weights are the initial role weights (--weights). The master reports
	// them (GET_WEIGHTS, /master/weights) and hands them to the allocator:
	// through Options.Weights when it builds one, through UpdateWeights
	// when one is given.
	Weights map[string]float64
	// Revocation turns on the allocator's revocation policy (paper §3.3.3;
	// --revocation, off by default): when a role below its quota guarantee
	// wants offers and nothing is free, tasks of frameworks above their fair
	// share are killed (their kill policy's grace period applies) and report
	// TASK_KILLED with REASON_CONTAINER_PREEMPTED. Applies to the built
	// allocator (Options.Revoke = Master.AllocatorRevoke); a caller-provided
	// allocator is wired by the caller.
	Revocation bool
	// LendIdleReservations lends reserved-but-unallocated resources
	// (oversubscription for reservations; --lend_idle_reservations, off
	// by default): the built allocator offers them, unreserved and
	// revocable without throttle_info, to frameworks with the
	// REVOCABLE_RESOURCES capability (allocator.Options.
	// OfferIdleReservations), and rescinds those offers when the
	// reservation's role is allocated them. The agents' revocable totals
	// in the state and metrics then include what may be lent. A
	// caller-provided allocator is configured by the caller.
	LendIdleReservations bool
	// OfferConstraintsMaxProgramSize bounds the regexes of frameworks'
	// offer constraints (--offer_constraints_re2_max_program_size, default
	// 100; counted in Go's regexp instructions, see
	// allocator.NewOfferConstraints).
	OfferConstraintsMaxProgramSize int
	// LongTaskFraction bounds, per agent, the resources long tasks may use
	// to this fraction of its total (tech report §3.3.2; mezzo's
	// --long_task_fraction, 0: off, the default): offers carry their
	// long part as attributes, and long tasks beyond it get TASK_ERROR.
	LongTaskFraction float64
	// ShortTaskDuration is how long a task declared short by its label
	// alone (no max_completion_time) is expected to take
	// (--short_task_duration, default DefaultShortTaskDuration).
	ShortTaskDuration time.Duration
	// AllocationInterval is --allocation_interval (default 1s).
	AllocationInterval time.Duration
	// OfferTimeout rescinds offers outstanding this long (--offer_timeout);
	// 0 means offers never time out.
	OfferTimeout time.Duration
	// AgentPingTimeout is the interval between pings to an agent and the
	// time it has to answer each (--agent_ping_timeout, default 15s).
	AgentPingTimeout time.Duration
	// MaxAgentPingTimeouts is how many consecutive pings may go unanswered
	// before the agent is marked unreachable (--max_agent_ping_timeouts, 5).
	MaxAgentPingTimeouts int
	// HeartbeatInterval is the scheduler-stream HEARTBEAT period (15s).
	HeartbeatInterval time.Duration
	// MaxCompletedFrameworks bounds the removed frameworks kept for
	// /master/state (--max_completed_frameworks, default 50).
	MaxCompletedFrameworks int
	// MaxCompletedTasksPerFramework bounds completed tasks kept per
	// framework (--max_completed_tasks_per_framework, default 1000).
	MaxCompletedTasksPerFramework int
	// Flags are the effective flags, reported by /master/flags and GET_FLAGS.
	Flags []Flag

	// AgentReregisterTimeout is how long a newly elected master waits for
	// the agents admitted in the registry to re-register before marking
	// them unreachable (--agent_reregister_timeout, default 10 mins).
	AgentReregisterTimeout time.Duration
	// A newly elected master pauses allocation until this fraction of the
	// agents in its registry are back (--allocator_agent_recovery_factor,
	// default 0.8) or AllocatorRecoveryTimeout passes
	// (--allocator_recovery_timeout, default 10 mins), as Mesos's allocator
	// recovery does. Mesos pauses only when quota is set; mezzo also
	// pauses without quota, for at most AllocatorRecoveryHold.
	AllocatorRecoveryTimeout     time.Duration
	AllocatorAgentRecoveryFactor float64
	// AllocatorRecoveryHold bounds the pause when no role has quota
	// (--allocator_recovery_hold, mezzo only, default 10 s; negative: no
	// pause without quota, as Mesos).
	AllocatorRecoveryHold time.Duration
	// AgentRemovalInterval spaces out marking agents unreachable (after
	// missed pings or the re-registration timeout): at most one removal
	// per interval (--agent_removal_rate_limit "1/10mins" is 10 mins; 0,
	// the default, means no limit).
	AgentRemovalInterval time.Duration

	// Election makes the master follow a replicated log's leadership: it
	// starts as a follower (307/503, no state), and each time it is
	// elected it recovers the registry (Registrar must implement
	// Recoverer), commits its MasterInfo, and serves with epoch Term();
	// when deposed it drops all soft state. Nil: the master leads from
	// the start with Epoch.
	Election Election
	// OnFatal is called (once, on its own goroutine) when the master
	// cannot go on: e.g. strict recovery found an empty registry. cmd/
	// exits loudly. Nil: log only.
	OnFatal func(error)

	// Authorizer decides what each principal may do and see (--acls with
	// --authorizers=local): the write entry points consult it on the loop,
	// the read endpoints while rendering. Nil allows everything, as Mesos
	// without --acls.
	Authorizer authorizer.Authorizer
	// RefuseRootSubmissions refuses frameworks whose user is root
	// (--root_submissions=false; Mesos allows them by default).
	RefuseRootSubmissions bool

	// Clock drives timers (offer, ping and failover timeouts). Nil means clock.Real.
	Clock clock.Clock
	// Registrar makes agent admission and removal durable. Nil means an
	// in-memory registrar (state lost on restart).
	Registrar Registrar
	// Logger receives the master's structured logs. Nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Hostname == "" {
		c.Hostname = "localhost"
	}
	if c.IP == "" {
		c.IP = "127.0.0.1"
	}
	if ip := net.ParseIP(c.IP); ip == nil {
		return fmt.Errorf("master: Config.IP %q is not an IP address", c.IP)
	}
	if c.Port == 0 {
		c.Port = 5050
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("master: Config.Port %d out of range", c.Port)
	}
	if c.ID == "" {
		c.ID = uuid.NewString()
	}
	if c.Epoch == 0 {
		c.Epoch = 1
	}
	if c.AllocationInterval == 0 {
		c.AllocationInterval = DefaultAllocationInterval
	}
	if c.AllocationInterval < 0 {
		return errors.New("master: Config.AllocationInterval must be positive")
	}
	if c.OfferTimeout < 0 {
		return errors.New("master: Config.OfferTimeout must not be negative")
	}
	if !(c.LongTaskFraction >= 0 && c.LongTaskFraction <= 1) {
		return fmt.Errorf("master: Config.LongTaskFraction (--long_task_fraction) must be in [0, 1], got %v", c.LongTaskFraction)
	}
	if c.ShortTaskDuration == 0 {
		c.ShortTaskDuration = DefaultShortTaskDuration
	}
	if c.ShortTaskDuration < 0 {
		return errors.New("master: Config.ShortTaskDuration (--short_task_duration) must be positive")
	}
	if c.OfferConstraintsMaxProgramSize == 0 {
		c.OfferConstraintsMaxProgramSize = allocator.DefaultRegexMaxProgramSize
	}
	if c.OfferConstraintsMaxProgramSize < 0 {
		return errors.New("master: Config.OfferConstraintsMaxProgramSize (--offer_constraints_re2_max_program_size) must be positive")
	}
	if c.AgentPingTimeout == 0 {
		c.AgentPingTimeout = DefaultAgentPingTimeout
	}
	if c.AgentPingTimeout < 0 {
		return errors.New("master: Config.AgentPingTimeout must be positive")
	}
	if c.MaxAgentPingTimeouts == 0 {
		c.MaxAgentPingTimeouts = DefaultMaxAgentPingTimeouts
	}
	if c.MaxAgentPingTimeouts < 0 {
		return errors.New("master: Config.MaxAgentPingTimeouts must be positive")
	}
	if c.AgentReregisterTimeout == 0 {
		c.AgentReregisterTimeout = DefaultAgentReregisterTimeout
	}
	if c.AgentReregisterTimeout < 0 {
		return errors.New("master: Config.AgentReregisterTimeout must be positive")
	}
	if c.AllocatorRecoveryTimeout == 0 {
		c.AllocatorRecoveryTimeout = DefaultAllocatorRecoveryTimeout
	}
	if c.AllocatorRecoveryTimeout < 0 {
		return errors.New("master: Config.AllocatorRecoveryTimeout must be positive")
	}
	if c.AllocatorAgentRecoveryFactor == 0 {
		c.AllocatorAgentRecoveryFactor = DefaultAllocatorAgentRecoveryFactor
	}
	if !(c.AllocatorAgentRecoveryFactor > 0 && c.AllocatorAgentRecoveryFactor <= 1) {
		return errors.New("master: Config.AllocatorAgentRecoveryFactor must be in (0, 1]")
	}
	if c.AllocatorRecoveryHold == 0 {
		c.AllocatorRecoveryHold = DefaultAllocatorRecoveryHold
	}
	if c.AgentRemovalInterval < 0 {
		return errors.New("master: Config.AgentRemovalInterval must not be negative")
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HeartbeatInterval < 0 {
		return errors.New("master: Config.HeartbeatInterval must be positive")
	}
	if c.MaxCompletedFrameworks == 0 {
		c.MaxCompletedFrameworks = DefaultMaxCompletedFrameworks
	}
	if c.MaxCompletedTasksPerFramework == 0 {
		c.MaxCompletedTasksPerFramework = DefaultMaxCompletedTasksPerFramework
	}
	if c.MaxCompletedFrameworks < 0 || c.MaxCompletedTasksPerFramework < 0 {
		return errors.New("master: Config.MaxCompleted* must not be negative")
	}
	if err := validateConfigWeights(c.Weights); err != nil {
		return err
	}
	if c.AllocatorName == "" {
		c.AllocatorName = DefaultAllocator
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Registrar == nil {
		c.Registrar = NewMemoryRegistrar()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Election != nil {
		if _, ok := c.Registrar.(Recoverer); !ok {
			return errors.New("master: Config.Election needs a Registrar that implements Recoverer")
		}
	}
	return nil
}
