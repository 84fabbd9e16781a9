package gang

import (
	"fmt"

	"mezzo/frameworks/loop"
)

// Job is a rigid job (an MPI program): Tasks copies of Command that must
// all run at once, submitted Submit after the framework subscribed.
type Job struct {
	// Name identifies the job (letters, digits, '-', '_', '.'); task IDs
	// are "<name>.<attempt>.<rank>".
	Name string `json:"name"`
	// Submit is when the job arrives, after the framework subscribed.
	Submit loop.Duration `json:"submit,omitempty"`
	// Tasks is the gang's size: how many tasks must start together.
	Tasks int `json:"tasks"`
	// Command is run by each task through /bin/sh, with MEZZO_GANG_JOB,
	// MEZZO_GANG_RANK (0…Tasks-1), MEZZO_GANG_SIZE and MEZZO_GANG_HOSTS
	// (every rank's host, comma-separated, in rank order) set.
	Command string `json:"command"`
}

func validateJobs(jobs []Job) error {
	return loop.CheckJobs(len(jobs), func(i int) string { return jobs[i].Name }, func(i int) loop.Duration { return jobs[i].Submit },
		func(i int) error {
			if jobs[i].Tasks < 1 {
				return fmt.Errorf("jobs[%d].tasks must be at least 1, got %d", i, jobs[i].Tasks)
			}
			return nil
		})
}

// LoadJobs reads a job file: {"jobs": [{"name": …, "submit": "10s",
// "tasks": 24, "command": …}, …]}.
func LoadJobs(path string) ([]Job, error) { return loop.LoadJobs(path, validateJobs) }
