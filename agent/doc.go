// Package agent is mezzo's agent (Mesos's slave): one event loop per agent
// that registers with the leading master over the internal protocol
// (mezzo/api/protocol, h2c), receives tasks, launches executors through a
// containerizer (agent/containerizer), fetches their URIs (agent/fetcher),
// serves them the v1 executor API (agent/httpapi), funnels every status
// update through the status update manager (agent/statusupdate) until the
// scheduler acknowledges it, and exposes sandboxes under /files
// (agent/files).
//
// cmd/mezzo builds an Agent from flags (Config), serves Handler on the
// agent's ip:port and calls Start and Stop; the scale emulator builds many
// Agents sharing one HTTP/2 client.
//
// # One goroutine owns the state, which acts only through sinks
//
// One goroutine (run, agent.go) owns all mutable agent state: the
// registration session, frameworks, executors, tasks, counters. HTTP
// handlers, master events, container exits and timers reach it as closures
// on the inbox; slow work (fetching, launching processes, waiting on them,
// talking to the master, disk) runs on other goroutines and reports back
// the same way. One owner, rather than a lock, because a status update must
// change the task, the executor's fate and the checkpoint in one instant,
// and a master event must be fenced by the same epoch that decides the next
// SUBSCRIBE.
//
// The state below the loop (core.go) is synchronous and touches the world only
// through small injected sinks (sinks.go): containerSink (start and destroy
// containers), updateSink (the status update manager), callSink (calls to
// the master), timerSink (loop timers) and checkpointer (meta/ records);
// the registration state machine (session.go) has its own sessionSink
// (dial, hang up, checkpoint the identity and epoch, arm the retry and ping
// timers) and takes `now` as an argument. New wires the sinks to real I/O;
// the pure tests (session_test.go, core_test.go) wire recorders and a fake
// clock and drive the loop's handlers directly, with no processes or
// sleeps. The integration tests (harness_test.go and the e2e tests) run the
// real loop.
//
// # Oversubscription (oversubscription.go, lending.go)
//
// The loop runs agent/oversub's resource estimator and QoS controller
// through oversubSink (off the loop, one round of each at a time, answers
// posted back):
//
//	loop start ──► estimate ──answer──► UPDATE_RESOURCES if the total changed
//	   (after     ▲                      (or first after a registration)
//	   recovery)  └── --oversubscribed_resources_interval ──┘
//
//	every 250 ms while a revocable container lives ──► corrections ──► destroy each
//	   named revocable container (never a regular one): its tasks TASK_LOST /
//	   TASK_GONE, REASON_CONTAINER_PREEMPTED; next look ≥ --qos_correction_interval_min
//	   after a round that killed
//
// A regular launch arriving while tenants hold lent reservations runs
// oversub.PlanEviction first: the chosen tenants are destroyed the same
// way, and the launch waits (deferred, not yet in the state) until the
// evicted containers have ended.
//
// # Registration (session.go)
//
//	                 connect: SUBSCRIBE{epoch, agent info, frameworks,
//	                 executors, tasks, unacknowledged updates}
//	DISCONNECTED ──────────────────────────► REGISTERING (no agent ID yet)
//	    ▲  ▲                                 REREGISTERING (known agent ID)
//	    │  │                                        │ SUBSCRIBED(agent id):
//	    │  │ retry after rand[0, backoff];          │ identity checkpointed,
//	    │  │ backoff doubles up to 1 min,           │ ping check armed,
//	    │  │ resets once registered                 │ call sender started,
//	    │  │                                        ▼ updates resumed
//	    │  └──── stream closed, ERROR event, ── REGISTERED ── PING ─► PONG
//	    │        403 on a call, no event for         │ work events dispatched
//	    │        ping interval × max missed          │ (RUN_TASK, KILL_TASK, …)
//	    │                                            │
//	    └─ (Stop: disconnect)      SHUTDOWN event, or SUBSCRIBED with another
//	                               ID while holding tasks ─► SHUT_DOWN (the
//	                               agent stops; SHUTDOWN forgets its identity)
//
// Fencing: every event carries the master's epoch. An event from a stream
// other than the current attempt, or from an epoch below the highest seen,
// is dropped; a higher epoch is adopted and checkpointed (meta/epoch) and
// the next SUBSCRIBE carries it.
//
// # Executors and tasks
//
//	executor: REGISTERING ─subscribes─► RUNNING ─SHUTDOWN_EXECUTOR, kill,
//	    │ (--executor_registration_        │      framework shut down─┐
//	    │  timeout: destroyed)             ▼                          ▼
//	    └──────────────────────────► TERMINATING ─container ends─► TERMINATED
//	                                 (SHUTDOWN event, container     │ every task's terminal
//	                                  destroyed after the shutdown  │ update acknowledged
//	                                  grace period)                 ▼
//	                                                        completed (checkpoint removed)
//
//	task: RUN_TASK ─checkpointed─► STAGING, queued ─executor subscribes─► LAUNCH sent
//	        │ invalid: TASK_ERROR/FAILED         │ KILL_TASK: TASK_KILLED        │
//	        │ with a reason, never stored        │ (KILLED_DURING_LAUNCH)        ▼
//	        ▼                                    ▼              STARTING ─► RUNNING ─► KILLING
//	      (gone)                           terminal, kept        (executor updates) │ KILL_TASK:
//	                                       until acknowledged ◄──────────────────────┤ KILL event
//	                                            │ ACKNOWLEDGE                       │ with the grace
//	                                            ▼                                   │ period (direct
//	                                       completed (record removed)               │ tasks: destroy)
//	   executor ends first: each live task gets one agent update — the container's
//	   limitation (TASK_FAILED, e.g. REASON_CONTAINER_LIMITATION_MEMORY), else why
//	   the agent ended it, else TASK_KILLED if a kill was sent, else TASK_FAILED
//	   REASON_EXECUTOR_TERMINATED.
//
// Checkpointing and recovery (meta.go, recover.go, recovery.go): the agent
// ID, the highest master epoch, and the frameworks, executors and tasks it
// runs are checkpointed under <work_dir>/meta (atomic, checksummed writes);
// the mesos containerizer checkpoints each container's process and the
// status update manager its streams. A restarted agent (--recover=reconnect)
// re-attaches to the executors of checkpointing frameworks that are still
// running, waits --executor_reregistration_timeout for them to re-subscribe,
// kills the executors of other frameworks with one terminal update per task,
// and re-registers under its old ID with its tasks and unacknowledged
// updates. A new boot id, --recover=cleanup or an incompatible
// --resources/--attributes change (--reconfiguration_policy) are handled as
// in Mesos. A checkpoint file that cannot be read stops the agent, naming
// it, unless --strict=false (Config.LenientRecovery): then the entity it
// describes is left out and counted in slave/recovery_errors. Stop leaves
// checkpointing executors running, as Mesos's agent does when it exits;
// Shutdown and a SHUTDOWN from the master kill them all.
//
// Launching (launch.go): SECRET environment variables resolve through
// internal/secrets (VALUE secrets only; a launch with any other fails
// TASK_FAILED before anything starts); local URIs are fetched only from
// under --fetcher_allowed_dirs (agent/fetcher).
//
// Reservations and persistent volumes (checkpointed.go, volumes.go,
// reservations.go): the master's CHECKPOINT_RESOURCES sets the agent's
// dynamic reservations and volumes; the agent checkpoints them under
// <work_dir>/meta/resources, keeps a directory per volume under
// <work_dir>/volumes, reports them in every SUBSCRIBE, re-applies them to
// its flags' resources when it starts (refusing to start if they no longer
// fit) and makes each volume visible in the containers whose resources
// name it (docs/reservations.md).
//
// Isolation (isolation.go) wires the cgroups and pid namespace isolators
// into the mesos containerizer and, with --containerizers=docker,mesos,
// composes it with the docker containerizer; command tasks with a DOCKER
// ContainerInfo run directly in a container, the agent playing Mesos's
// docker executor (dockertask.go, dockerhealth.go). URIs are fetched
// through the fetcher cache in <--fetcher_cache_dir>/slaves/<agent id>; the resource monitor (monitor.go) serves
// /monitor/statistics and GET_CONTAINERS from the containerizer's usage.
package agent
