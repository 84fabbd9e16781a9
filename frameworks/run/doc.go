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
//     or reserved to the framework's role), saying why while none fits
//     (waiting.go: "no agent has cpus:5; largest is cpus:2"), and launches
//     exactly one command task on it, its ID the name and a random suffix,
//     declining every other offer for an hour and then suppressing offers:
//     it needs no more;
//  3. prints one line per status update of its task to Options.Out (format
//     below), acknowledges each update that carries a uuid, and once the
//     task runs follows its stdout and stderr through Options.Output
//     (output.go);
//  4. on a terminal state reads the rest of the output, tears the framework
//     down and returns the exit code of exitcode.go: the task's own exit
//     status, or one of mezzo's (124 timeout, 125 mezzo failed, 126 lost,
//     130 interrupted, 137 killed).
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
