package loop

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"time"
)

// Duration is a time.Duration written as "5s" in job files.
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

// validName is what a job name may hold: it becomes part of task IDs.
var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// CheckName says what is wrong with a job name, field naming it.
func CheckName(field, name string, seen map[string]bool) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("%s %q: use letters, digits, '-', '_' and '.'", field, name)
	}
	if seen[name] {
		return fmt.Errorf("%s %q is not unique", field, name)
	}
	seen[name] = true
	return nil
}

// DecodeFile decodes the JSON file at path into v, refusing unknown
// fields (a misspelt "submit" would otherwise submit a job at once).
func DecodeFile(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// LoadJobs reads a job file, {"jobs": [...]}, with DecodeFile's strictness,
// and checks the jobs with validate.
func LoadJobs[J any](path string, validate func([]J) error) ([]J, error) {
	var doc struct {
		Jobs []J `json:"jobs"`
	}
	if err := DecodeFile(path, &doc); err != nil {
		return nil, err
	}
	if err := validate(doc.Jobs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc.Jobs, nil
}
