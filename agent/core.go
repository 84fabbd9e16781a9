package agent

import (
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
// The Agent embeds it: the handlers are still methods on *Agent (they
// also read Agent's immutable configuration), but the I/O handles they
// must not touch live outside core.
type core struct {
	// sess is the registration state machine (session.go); sess.agentID
	// is the agent's ID once a master assigned one.
	sess session

	// The sinks: real I/O from New, recorders in pure tests.
	sum        updateSink
	containers containerSink
	calls      callSink
	timers     timerSink
	cp         checkpointer

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
func newCore(total resources.Resources) core {
	return core{
		total:       total,
		frameworks:  map[string]*framework{},
		keptVolumes: map[string]*mesos.Resource{},
	}
}
