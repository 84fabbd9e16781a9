// Package statusupdate is the agent's status update manager: it owns, per
// task, an ordered stream of status updates that must reach the scheduler
// reliably.
//
// The agent loop (package agent) calls Update for every status update an
// executor (or the agent itself) produces and Acknowledge for every
// acknowledgement the master forwards from the scheduler. Only the head of a
// stream (its oldest unacknowledged update) is handed to Options.Forward; it is
// re-forwarded with exponential backoff (RetryIntervalMin doubling up to
// RetryIntervalMax, Mesos's constants) until it is acknowledged, and only then
// is the next update forwarded. Duplicate updates (same uuid) are ignored.
// After a terminal update is acknowledged the stream is closed and forgotten.
//
// For checkpointing frameworks every update and acknowledgement is appended
// to a per-task file under Options.MetaDir (one length-prefixed, CRC-checked
// record per write, fsync'd before Update or Acknowledge returns), and Recover
// rebuilds the streams after an agent restart. A torn or corrupt record is
// reported with the file name and offset; the valid prefix is kept.
package statusupdate
