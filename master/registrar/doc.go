// Package registrar owns the registry: the master's small, authoritative,
// replicated state (leading master, admitted / unreachable / gone agents,
// weights, quota, maintenance, agents' drain and deactivation), as registrar-design and DESIGN.md "State and
// high availability" describe.
//
// Three pieces:
//
//   - Operation: one registry mutation (Admit, Readmit, MarkUnreachable,
//     MarkReachable, Remove, Prune, UpdateWeights, UpdateQuota,
//     UpdateSchedule, StartMaintenance, StopMaintenance, UpdateDrain,
//     SetMaster).
//   - Machine: the state machine. It holds the registry in memory, applies
//     log entries (each an encoded batch of operations, a small delta) and
//     serializes the whole registry only for snapshots. A Store feeds it.
//   - Registrar: the master's front end. Apply(ctx, op) validates op against
//     the registry and returns once the batch containing it is durable (or
//     failed). One goroutine owns the write path: at most one Store write is
//     in flight, and operations arriving meanwhile form the next batch.
//     Recover (a Barrier, the strict check, SetMaster) returns a Registry,
//     a read-only view whose agent infos are decoded on demand.
//
// docs/registrar.md describes the formats, replog and the benchmark.
//
// The master (cmd/ wires it) calls the Registrar; the replicated log
// (package replog) implements Store over Raft and drives the Machine; this
// package never imports replog. MemoryStore is an in-process Store for
// tests and single-process tools.
package registrar
