// Package run is the framework behind `mezzo run`: like Mesos's
// mesos-execute, it runs one command on the cluster and follows it to the
// end. cmd/mezzo wires flags into Options and calls Run.
//
// Run, in order:
//
//  1. subscribes a new framework (user, role, checkpoint; capability
//     RESERVATION_REFINEMENT, so offers carry the reservations[] format)
//     through package scheduler;
//  2. waits for an offer that contains the requested resources (unreserved,
//     or reserved to the framework's role) and launches exactly one command
//     task on it, declining every other offer for an hour and then
//     suppressing offers: it needs no more;
//  3. prints one line per status update of its task to Options.Out (format
//     below) and acknowledges each update that carries a uuid;
//  4. on a terminal state tears the framework down and returns the exit
//     code: 0 for TASK_FINISHED, 1 for any other end (or a timeout), 2 for a
//     usage error or when the cluster cannot be reached or drops us.
//
// A status line reads (bracketed parts only when the update has them):
//
//	<task-id> <STATE> [source=<SOURCE>] [reason=<REASON>] [message="<text>"]
//
// Offers that are too small before the launch are declined with Mesos's
// default 5 s filter only, so that resources freed later are offered again.
// After a re-subscription (master failover) Run reconciles its task. With
// several masters it survives a leader change even in the middle of the
// launch: an ACCEPT that failed because the master went away (or answered
// 307 or 503) is settled by explicit reconciliation before any new launch;
// failover.go states the rule.
package run
