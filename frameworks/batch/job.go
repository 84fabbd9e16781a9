package batch

import (
	"fmt"
	"strings"

	"mezzo/frameworks/loop"
)

// Job is a job of independent tasks, each reading one block of input (a
// Hadoop map-only job). It is submitted Submit after the framework
// subscribed, and done when every task has finished.
type Job struct {
	// Name identifies the job (letters, digits, '-', '_', '.'); task IDs
	// are "<name>.<index>.<attempt>".
	Name string `json:"name"`
	// Submit is when the job arrives, after the framework subscribed.
	Submit loop.Duration `json:"submit,omitempty"`
	// Command is run by each task through /bin/sh, with MEZZO_BATCH_JOB,
	// MEZZO_BATCH_TASK, MEZZO_BATCH_BLOCK and MEZZO_BATCH_LOCAL (1 when
	// the task runs on an agent holding its block, else 0) set.
	Command string `json:"command"`
	// Tasks are the job's tasks.
	Tasks []Task `json:"tasks"`
}

// Task is one task of a job.
type Task struct {
	// Block is the input the task reads, as the agents' locality
	// attribute names it; "" means the task has no preference.
	Block string `json:"block,omitempty"`
}

// validateJobs checks jobs, naming the first offending field.
func validateJobs(jobs []Job) error {
	return loop.CheckJobs(len(jobs), func(i int) string { return jobs[i].Name }, func(i int) loop.Duration { return jobs[i].Submit },
		func(i int) error {
			if len(jobs[i].Tasks) == 0 {
				return fmt.Errorf("jobs[%d].tasks: a job needs at least one task", i)
			}
			for k, t := range jobs[i].Tasks {
				if strings.ContainsAny(t.Block, ", \t\n") {
					return fmt.Errorf("jobs[%d].tasks[%d].block %q: a block name has no commas or spaces", i, k, t.Block)
				}
			}
			return nil
		})
}

// LoadJobs reads a job file: {"jobs": [{"name": …, "submit": "10s",
// "command": …, "tasks": [{"block": "b1"}, …]}, …]}.
func LoadJobs(path string) ([]Job, error) { return loop.LoadJobs(path, validateJobs) }
