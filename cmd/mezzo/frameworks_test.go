package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The frameworks' commands refuse bad input before subscribing, exit 2
// and say which flag or field was wrong.
func TestFrameworkCommandUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"jobs":[{"name":"j","sumbit":"5s","tasks":[{}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"batch"}, "no jobs given"},
		{[]string{"batch", "--blocks=b0"}, "no command given"},
		{[]string{"batch", "--jobs=" + bad, "--blocks=b0"}, "not both"},
		{[]string{"batch", "--jobs=" + bad}, `unknown field "sumbit"`},
		{[]string{"batch", "--blocks=b0", "--resources=cpus:-1", "--", "true"}, "task resources"},
		{[]string{"batch", "--blocks=b0", "--delay=-1s", "--", "true"}, "delay"},
		{[]string{"gang"}, "no jobs given"},
		{[]string{"gang", "--size=-2", "--", "true"}, "jobs[0].tasks must be at least 1"},
		{[]string{"gang", "--size=2", "--hold=-1s", "--", "true"}, "negative duration"},
		{[]string{"elastic", "--load=fast"}, "--load"},
		{[]string{"elastic", "--min=5", "--max=2", "--listen=127.0.0.1:0"}, "min replicas 5 is above max 2"},
		{[]string{"elastic", "replica"}, "--port must be 1-65535"},
		{[]string{"elastic", "load", "--profile=10"}, "--profile"},
		{[]string{"bench", "paper"}, "usage: mezzo bench paper"},
		{[]string{"bench", "paper", "nosuch"}, "unknown experiment"},
		{[]string{"bench", "paper", "overhead", "--agents=10,x"}, "--agents"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(c.args, &out, &errb)
		if code != 2 && !(c.args[0] == "bench" && code == 1) || !strings.Contains(errb.String(), c.want) {
			t.Errorf("mezzo %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errb.String(), c.want)
		}
	}
}
