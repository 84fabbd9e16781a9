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
// Recovery seam: the agent ID, the highest master epoch and the framework
// infos are checkpointed under <work_dir>/meta (atomic writes); re-attaching
// to executors that survived an agent restart is not implemented yet (see
// recover.go).
package agent
