// Package batch is a Hadoop-like batch framework with delay scheduling
// (the paper's §5.1 and §6.3), behind `mezzo batch`. Its jobs are sets of
// independent tasks, each reading one block of input; agents say which
// blocks they hold through an attribute (default "blocks", a comma-
// separated list: `--attributes=blocks:b1,b7,b12`). A task on an agent
// holding its block is local; elsewhere it reads its block remotely.
//
// Using it:
//
//  1. New(Config) with the masters, the jobs (LoadJobs reads a job file),
//     each task's resources and the delay;
//  2. Run(ctx) subscribes, submits each job at its time, launches tasks
//     on offers by delay scheduling (core.go), tries a failed task again
//     up to MaxAttempts, and once every job has ended tears the framework
//     down and returns a Result: each job's completion time, and the
//     fraction of tasks that ran local (locality);
//  3. Usage, from any goroutine, says what it holds meanwhile.
//
// Offers: every free slot of an offer (TaskResources) goes to the job
// with the fewest running tasks that will take it (Hadoop's fair
// scheduler between jobs). A job takes a slot on an agent holding one of
// its blocks at once; otherwise it waits, passing the slot to the next
// job, until it has waited Delay, then takes any slot until it next gets
// a local one. Unused offers are declined with a short filter
// (RefuseSeconds, 1 s) so the agent soon comes back, to this framework or
// another; with no task waiting the framework suppresses offers and
// revives them when a job arrives or a task must run again.
//
// Tasks run Job.Command through /bin/sh with MEZZO_BATCH_JOB,
// MEZZO_BATCH_TASK, MEZZO_BATCH_BLOCK and MEZZO_BATCH_LOCAL (1 or 0) set,
// so a real task knows where to read its input from. Config.Decorate may
// change a task before it is launched (the paper experiments give fake
// tasks on emulated agents a duration by locality).
package batch
