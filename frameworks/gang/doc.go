// Package gang is a rigid, all-or-nothing framework (the paper's Torque
// and MPI ports, §4.2, §4.4, §5.2), behind `mezzo gang`. A job is a gang
// of N ranks that must all start together; it cannot start on fewer and
// does not grow when more is offered.
//
// Using it:
//
//  1. New(Config) with the masters, the jobs (LoadJobs reads a job file),
//     one rank's resources, the holding bound and the back-off;
//  2. Run(ctx) subscribes, queues each job at its time, gathers and
//     launches gangs (core.go), restarts a gang whose rank failed (up to
//     MaxAttempts), and once every job has ended tears the framework down
//     and returns a Result: each job's completion and waiting time, and
//     the cpu·s it held in offers without running anything;
//  3. Usage, from any goroutine, says what it runs and holds meanwhile.
//
// Offers and the paper's point about rigid frameworks. The job at the
// head of the queue keeps every offer with room for a rank, unanswered,
// until the offers it holds have room for the whole gang; then it accepts
// them all at once (one ACCEPT per offer; if one fails, the ranks already
// launched are killed: all or nothing). Held offers count towards the
// framework's share, so the master offers them to nobody else, and they
// run nothing meanwhile: that is a rigid framework's cost (§4.2: its
// utilization is β/(1/2+β) where an elastic one's is 1), reported as
// HeldCPUSeconds. To bound it, a gang that has not gathered its ranks
// within Hold declines everything it holds with a filter of Backoff and
// suppresses offers for that long, leaving the resources to others; an
// offer too small for one rank is declined at once with RefuseSeconds.
//
// Each rank runs Job.Command through /bin/sh with MEZZO_GANG_JOB,
// MEZZO_GANG_RANK, MEZZO_GANG_SIZE and MEZZO_GANG_HOSTS (every rank's
// host in rank order: an MPI host file) set.
package gang
