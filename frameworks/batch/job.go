package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// Job is a job of independent tasks, each reading one block of input (a
// Hadoop map-only job). It is submitted Submit after the framework
// subscribed, and done when every task has finished.
type Job struct {
	// Name identifies the job (letters, digits, '-', '_', '.'); task IDs
	// are "<name>.<index>.<attempt>".
	Name string `json:"name"`
	// Submit is when the job arrives, after the framework subscribed.
	Submit Duration `json:"submit,omitempty"`
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

// Duration is a time.Duration written as "5s" in JSON.
type Duration time.Duration

// UnmarshalJSON reads "5s", "1m30s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if err := json.Unmarshal(b, &secs); err != nil {
			return fmt.Errorf("a duration is a string like \"5s\" or a number of seconds, not %s", b)
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as "5s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

var jobName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// validateJobs checks jobs, naming the first offending field.
func validateJobs(jobs []Job) error {
	if len(jobs) == 0 {
		return errors.New("no jobs given")
	}
	seen := map[string]bool{}
	for i, j := range jobs {
		switch {
		case !jobName.MatchString(j.Name):
			return fmt.Errorf("jobs[%d].name %q: use letters, digits, '-', '_' and '.'", i, j.Name)
		case seen[j.Name]:
			return fmt.Errorf("jobs[%d].name %q is not unique", i, j.Name)
		case j.Submit < 0:
			return fmt.Errorf("jobs[%d].submit must not be negative", i)
		case len(j.Tasks) == 0:
			return fmt.Errorf("jobs[%d].tasks: a job needs at least one task", i)
		}
		for k, t := range j.Tasks {
			if strings.ContainsAny(t.Block, ", \t\n") {
				return fmt.Errorf("jobs[%d].tasks[%d].block %q: a block name has no commas or spaces", i, k, t.Block)
			}
		}
		seen[j.Name] = true
	}
	return nil
}

// LoadJobs reads a job file: {"jobs": [{"name": …, "submit": "10s",
// "command": …, "tasks": [{"block": "b1"}, …]}, …]}. Unknown fields are
// errors (a misspelt "submit" would otherwise submit at once).
func LoadJobs(path string) ([]Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var doc struct {
		Jobs []Job `json:"jobs"`
	}
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := validateJobs(doc.Jobs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc.Jobs, nil
}
