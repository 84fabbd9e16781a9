package agent

import (
	"log/slog"
	"mezzo/internal/clock"
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// core is the agent's loop-owned state: the registration session, the
// frameworks, executors and tasks, the counters, and the sinks through
// which all of it acts (sinks.go). Only the loop goroutine (Agent.run)
// touches it; nothing in it blocks or does I/O itself, so pure tests build
// an Agent around a core with recording sinks (core_harness_test.go).
//
// The Agent embeds it. Handlers that need nothing but the core are
// methods on *core: the kill path (killTask, killQueued, killDirectTask,
// shutdownExecutor, shutdownFramework, registrationTimeout), the
// agent's own status updates (agentUpdate, handleStatus), acknowledgements
// and the retirement of tasks, executors and frameworks, UPDATE_FRAMEWORK,
// RECONCILE and framework messages. Their receiver keeps the name a that
// it had on *Agent, so the move changed only their signatures. The rest
// (launching, an executor's exit, recovery, reservations, the HTTP
// backend) still need an Agent handle (sandboxes, /files, the docker
// containerizer, recovery state) and remain methods on *Agent.
type core struct {
	// cfg, log and clock are read-only: the configuration, the logger and
	// the injected time source (a fake one in tests).
	cfg   Config
	log   *slog.Logger
	clock clock.Clock

	// sess is the registration state machine (session.go); sess.agentID
	// is the agent's ID once a master assigned one.
	sess session

	// The sinks: real I/O from New, recorders in pure tests.
	sum        updateSink
	containers containerSink
	calls      callSink
	timers     timerSink
	cp         checkpointer
	// ovsSink runs the resource estimator and the QoS controller off the
	// loop (oversubscription.go); nil when both are noop.
	ovsSink oversubSink
	// ovs is the oversubscription state: estimates, corrections, counters.
	ovs oversubState
	// deferred are regular launches waiting for evicted tenants of lent
	// reservations to end (lending.go), first come first started.
	deferred []*deferredLaunch

	// total is the agent's resources: Agent.flagsTotal with the
	// checkpointed resources applied.
	total resources.Resources

	frameworks map[string]*framework
	fwOrder    []string
	completedF []*framework
	metrics    counters
	// reregWait are the recovered executors of checkpointing frameworks
	// that have not re-subscribed yet; the agent registers with the master
	// once they have or --executor_reregistration_timeout has passed.
	reregWait  map[*executor]bool
	reregTimer *loopTimer
	// recoveryTime is how long recovery took (slave/recovery_time_secs);
	// recovered is set once it is done.
	recoveryTime time.Duration
	recovered    bool
	// checkpointed are the dynamic reservations and persistent volumes the
	// master told the agent to keep (reservations.go); cpFiles is what New
	// found in meta/resources, until it has been applied.
	checkpointed resources.Resources
	cpFiles      checkpointedFiles
	// keptVolumes are directories of volumes no longer checkpointed that a
	// container still used when they were dropped, to be removed once none
	// does.
	keptVolumes map[string]*mesos.Resource
}

// newCore is an empty core for an agent with the given total; the caller
// wires the session and the sinks.
func newCore(cfg Config, total resources.Resources) core {
	return core{
		cfg:         cfg,
		log:         cfg.Logger,
		clock:       cfg.Clock,
		total:       total,
		frameworks:  map[string]*framework{},
		keptVolumes: map[string]*mesos.Resource{},
	}
}
