package main

import (
	"fmt"
	"io"
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
	var jobs []batch.Job
	switch {
	case *jobsFile != "" && *blocks != "":
		fmt.Fprintln(stderr, "mezzo batch: give --jobs or --blocks, not both")
		return 2
	case *jobsFile != "":
		var err error
		if jobs, err = batch.LoadJobs(*jobsFile); err != nil {
			fmt.Fprintf(stderr, "mezzo batch: --jobs: %v\n", err)
			return 2
		}
	case *blocks != "":
		j := batch.Job{Name: "batch", Command: commandOf(*command, fs.Args(), "")}
		if j.Command == "" {
			fmt.Fprintln(stderr, "mezzo batch: no command given: --command=CMD or -- CMD ARGS...")
			return 2
		}
		for _, b := range strings.Split(*blocks, ",") {
			j.Tasks = append(j.Tasks, batch.Task{Block: strings.TrimSpace(b)})
		}
		jobs = []batch.Job{j}
	default:
		fmt.Fprintln(stderr, "mezzo batch: no jobs given: --jobs=FILE or --blocks=b0,b1,... -- CMD")
		return 2
	}
	fw, err := batch.New(batch.Config{Config: ff.config(stderr), Jobs: jobs, TaskResources: *res, Delay: *delay,
		LocalityAttribute: *attr, RefuseSeconds: *refuse, MaxAttempts: *attempts})
	if err != nil {
		fmt.Fprintf(stderr, "mezzo batch: %v\n", err)
		return 2
	}
	ctx, cancel := ff.context()
	defer cancel()
	r, err := fw.Run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo batch: %v\n", err)
		return 1
	}
	failed := false
	for _, j := range r.Jobs {
		failed = failed || j.Failed
	}
	return ff.report(stdout, r, failed, func() {
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
