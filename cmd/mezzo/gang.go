package main

import (
	"fmt"
	"io"
	"slices"

	"mezzo/frameworks/gang"
)

// runGang is `mezzo gang`: run rigid jobs whose ranks start all at once
// (frameworks/gang; docs/frameworks.md).
func runGang(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("gang", stderr)
	ff := addFrameworkFlags(fs, gang.DefaultName)
	jobsFile := fs.String("jobs", "", "job file (JSON: {\"jobs\":[{\"name\",\"submit\",\"tasks\",\"command\"}]})")
	size := fs.Int("size", 0, "instead of --jobs: one job of this many ranks")
	command := fs.String("command", "", "the ranks' command for --size (or give it after --)")
	res := fs.String("resources", gang.DefaultTaskResources, "each rank's resources")
	hold := durationFlag(fs, "hold", gang.DefaultHold, "longest a job holds offers while gathering its gang")
	backoff := durationFlag(fs, "backoff", gang.DefaultBackoff, "after giving offers back, filter them and ask for none this long")
	refuse := fs.Float64("refuse_seconds", gang.DefaultRefuseSeconds, "filter on offers too small for a rank")
	attempts := fs.Int("max_attempts", gang.DefaultMaxAttempts, "starts of one gang before its job fails")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	jobs, ok := jobsOrInline(stderr, "gang", *jobsFile, *size != 0, "--size", gang.LoadJobs, func() (gang.Job, error) {
		j := gang.Job{Name: "gang", Tasks: *size, Command: commandOf(*command, fs.Args(), "")}
		if j.Command == "" {
			return j, errNoCommand
		}
		return j, nil
	})
	if !ok {
		return 2
	}
	fw, err := gang.New(gang.Config{Config: ff.config(stderr), Jobs: jobs, TaskResources: *res, Hold: *hold,
		Backoff: *backoff, RefuseSeconds: *refuse, MaxAttempts: *attempts})
	if err != nil {
		fmt.Fprintf(stderr, "mezzo gang: %v\n", err)
		return 2
	}
	return runFramework(ff, stdout, stderr, "gang", fw.Run, func(r *gang.Result) bool {
		return slices.ContainsFunc(r.Jobs, func(j gang.JobResult) bool { return j.Failed })
	}, func(r *gang.Result) {
		for _, j := range r.Jobs {
			state := "finished"
			if j.Failed {
				state = "FAILED"
			}
			fmt.Fprintf(stdout, "job %s %s: %d ranks, %d attempt(s), waited %.1fs for its gang, %.1fs in all\n",
				j.Name, state, j.Tasks, j.Attempts, j.WaitSeconds, j.Seconds)
		}
		fmt.Fprintf(stdout, "held %.1f cpu·s in offers while gathering gangs; gave offers back %d time(s)\n", r.HeldCPUSeconds, r.GiveUps)
	})
}
