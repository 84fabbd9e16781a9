package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"mezzo/frameworks/batch"
)

// runBatch is `mezzo batch`: run jobs of block-reading tasks with delay
// scheduling (frameworks/batch; docs/frameworks.md).
func runBatch(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("batch", stderr)
	ff := addFrameworkFlags(fs, batch.DefaultName)
	jobsFile := fs.String("jobs", "", "job file (JSON: {\"jobs\":[{\"name\",\"submit\",\"command\",\"tasks\":[{\"block\"}]}]})")
	blocks := fs.String("blocks", "", "instead of --jobs: one job with one task per block, e.g. b0,b1,b2")
	command := fs.String("command", "", "the tasks' command for --blocks (or give it after --)")
	res := fs.String("resources", batch.DefaultTaskResources, "each task's resources")
	delay := durationFlag(fs, "delay", batch.DefaultDelay, "how long a job waits for an agent holding its block before taking any (0: no delay scheduling)")
	attr := fs.String("locality_attribute", batch.DefaultLocalityAttribute, "the agents' attribute listing the blocks they hold, comma-separated")
	refuse := fs.Float64("refuse_seconds", batch.DefaultRefuseSeconds, "filter on offers declined while tasks wait")
	attempts := fs.Int("max_attempts", batch.DefaultMaxAttempts, "attempts per task before its job fails")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	jobs, ok := jobsOrInline(stderr, "batch", *jobsFile, *blocks != "", "--blocks", batch.LoadJobs, func() (batch.Job, error) {
		j := batch.Job{Name: "batch", Command: commandOf(*command, fs.Args(), "")}
		if j.Command == "" {
			return j, errNoCommand
		}
		for _, b := range strings.Split(*blocks, ",") {
			j.Tasks = append(j.Tasks, batch.Task{Block: strings.TrimSpace(b)})
		}
		return j, nil
	})
	if !ok {
		return 2
	}
	fw, err := batch.New(batch.Config{Config: ff.config(stderr), Jobs: jobs, TaskResources: *res, Delay: *delay,
		LocalityAttribute: *attr, RefuseSeconds: *refuse, MaxAttempts: *attempts})
	if err != nil {
		fmt.Fprintf(stderr, "mezzo batch: %v\n", err)
		return 2
	}
	return runFramework(ff, stdout, stderr, "batch", fw.Run, func(r *batch.Result) bool {
		return slices.ContainsFunc(r.Jobs, func(j batch.JobResult) bool { return j.Failed })
	}, func(r *batch.Result) {
		for _, j := range r.Jobs {
			state := "finished"
			if j.Failed {
				state = "FAILED"
			}
			fmt.Fprintf(stdout, "job %s %s: %d tasks (%d local) in %.1fs\n", j.Name, state, j.Tasks, j.Local, j.Seconds)
		}
		fmt.Fprintf(stdout, "locality %.0f%% (%d of %d tasks local), %d attempts\n", 100*r.Locality, r.Local, r.Tasks, r.Attempts)
	})
}
