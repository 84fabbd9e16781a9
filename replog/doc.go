// Package replog is the master's replicated log: a Raft group
// (hashicorp/raft v1.7.3) whose log and stable store live in a bbolt file
// (raft-boltdb/v2) and whose snapshots are files, all under one directory
// (the master's --work_dir/registry). It drives a caller-supplied
// StateMachine (the registry's master/registrar.Machine) and implements
// master/registrar.Store: Append returns once an entry is durable on a
// quorum and applied; Barrier waits until every committed entry is applied.
//
// Raft leadership is master leadership: the master leads while this node
// leads the Raft group, learns changes from LeaderCh, fences its messages
// with Term, and calls the registrar's Recover (a Barrier, then its
// MasterInfo committed) before serving.
//
// Writes never rewrite the registry: an entry is one small batch of
// operations; snapshots, which serialize the whole registry, are taken
// when the log written since the last snapshot outgrows the snapshot
// itself, and compact the log behind them.
//
// A node that cannot write to its disk stops acknowledging: the failed
// Append returns the error, Raft steps down, and replog shuts the node
// down and reports the failure through Config.OnFatal (cmd/ exits loudly).
//
// Raft logs through Config.Logger, the process's slog logger (logging.go),
// so its lines share the process's format and level; messages Raft grades
// too loudly for an expected condition (an election at start, a peer not
// up yet while the group forms, this node's own transport closing) are
// re-graded, and a peer that stays down is reported once a minute.
//
// Single master: a one-node group on local disk that bootstraps itself.
// Only cmd/ and tests import this package.
package replog
