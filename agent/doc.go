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
// Concurrency: one goroutine (run) owns all mutable agent state. HTTP
// handlers, master events, container exits and timers reach it as closures
// on the inbox; slow work (fetching, launching processes, waiting on them,
// talking to the master) runs on other goroutines and reports back the same
// way.
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
