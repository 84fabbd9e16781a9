// Package sim emulates mezzo agents and frameworks for scale experiments.
//
// It owns the emulated side of the cluster: Agent speaks the real
// agent<->master protocol (api/proto/mezzo/protocol/v1/protocol.proto) over
// real sockets, Fleet runs thousands of them in one process sharing a few
// cleartext HTTP/2 (h2c) connections, and Framework is a scheduler built on
// the scheduler SDK that launches fake tasks on them. Nothing here imports
// master or agent: the simulator talks to a real `mezzo master` process
// exactly as external agents and frameworks do.
//
// Callers: `mezzo bench cluster` and `mezzo bench failover` (through
// sim/bench), end-to-end scale experiments and their tests.
//
// Shape. An agent's mutable state is owned by one goroutine: the dispatch
// shard it belongs to. A Fleet has a few shards (a small multiple of
// GOMAXPROCS), each an event loop serving thousands of agents, with its own
// timer heap driven by one injected clock.Clock timer, so that an idle agent
// costs no goroutine of its own beyond the reader of its event stream (a
// blocking HTTP/2 response body needs one). Calls to the master (status
// updates, pongs, executor exits) are posted by a shared pool of poster
// goroutines, so that no event loop ever waits on the network.
//
// Fake tasks. RUN_TASK yields TASK_STARTING and TASK_RUNNING, then
// TASK_FINISHED after the configured duration (or never: Never), each
// update carrying a 16-byte uuid and re-sent until the master forwards the
// scheduler's acknowledgement (a simplified in-memory status update stream
// per task: one update in flight, the next one sent once it is acked).
// A task's duration may be overridden by the label DurationLabel ("2s",
// "never") on its TaskInfo, or by its command's environment variable
// DurationEnv.
package sim
