package flagenv

import (
	"flag"
	"strings"
	"testing"
)

func TestParseEnvironmentAndPrecedence(t *testing.T) {
	env := map[string]string{"MESOS_WORK_DIR": "/env", "MESOS_PORT": "6000", "MESOS_BAD": "x"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name     string
		args     []string
		wantDir  string
		wantPort int
	}{
		{"environment only", nil, "/env", 6000},
		{"command line wins", []string{"--work_dir=/cli"}, "/cli", 6000},
		{"both given on command line", []string{"--work_dir=/cli", "--port=7"}, "/cli", 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			dir := fs.String("work_dir", "", "")
			port := fs.Int("port", 5050, "")
			if err := Parse(fs, tc.args, lookup); err != nil {
				t.Fatal(err)
			}
			if *dir != tc.wantDir || *port != tc.wantPort {
				t.Fatalf("got %q %d, want %q %d", *dir, *port, tc.wantDir, tc.wantPort)
			}
		})
	}
}

func TestParseEnvironmentErrorNamesVariable(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("port", 5050, "")
	err := Parse(fs, nil, func(k string) (string, bool) { return "notanumber", k == "MESOS_PORT" })
	if err == nil || !strings.Contains(err.Error(), "MESOS_PORT") {
		t.Fatalf("want error naming MESOS_PORT, got %v", err)
	}
}
