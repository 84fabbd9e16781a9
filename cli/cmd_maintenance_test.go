package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The maintenance walk-through of docs/maintenance.md with the CLI against
// a real master (agent a1 at 10.0.0.2): schedule from a file, show it,
// status DRAINING, down (the agent leaves), status DOWN, up.
func TestMaintenanceAgainstRealMaster(t *testing.T) {
	rm := startRealMaster(t, "cpus:4;mem:1024")
	e, _ := testEnv()
	master := "--master=" + rm.addr
	file := filepath.Join(t.TempDir(), "schedule.json")
	// 2023-11-15T00:00:00Z, two hours.
	os.WriteFile(file, []byte(`{"windows":[{"machine_ids":[{"hostname":"a1","ip":"10.0.0.2"}],
		"unavailability":{"start":{"nanoseconds":1700006400000000000},"duration":{"nanoseconds":7200000000000}}}]}`), 0o644)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"maintenance", "schedule", master}, "No maintenance scheduled.\n"},
		{[]string{"maintenance", "schedule", file, master}, "Maintenance schedule updated: 1 window(s), 1 machine(s).\n"},
		{[]string{"maintenance", "schedule", master}, `
WINDOW  MACHINE      START                 DURATION
0       a1/10.0.0.2  2023-11-15T00:00:00Z  2h0m0s
`},
		{[]string{"maintenance", "status", master}, `
MACHINE      MODE      INVERSE OFFERS
a1/10.0.0.2  DRAINING  -
`},
		{[]string{"maintenance", "down", "a1/10.0.0.2", master},
			"Machines DOWN: their agents are shut down and may not register until they are UP (a1/10.0.0.2).\n"},
		{[]string{"maintenance", "status", master}, `
MACHINE      MODE  INVERSE OFFERS
a1/10.0.0.2  DOWN  -
`},
		{[]string{"maintenance", "up", "a1/10.0.0.2", master},
			"Machines UP: they left the schedule and their agents may register again (a1/10.0.0.2).\n"},
		{[]string{"maintenance", "status", master}, "No machine is in maintenance.\n"},
	}
	for _, s := range steps {
		code, out, errs := run(e, s.args[0], s.args[1:]...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", s.args, code, errs)
		}
		if want := strings.TrimPrefix(s.want, "\n"); out != want {
			t.Fatalf("%v: got\n%s\nwant\n%s", s.args, out, want)
		}
		if s.args[1] == "down" {
			for _, a := range rm.m.Snapshot().Agents {
				if a.Info.GetId().GetValue() == rm.agent {
					t.Fatal("the agent of a DOWN machine is still registered")
				}
			}
		}
	}
}

func TestMaintenanceCLIErrors(t *testing.T) {
	rm := startRealMaster(t, "cpus:4;mem:1024")
	e, _ := testEnv()
	master := "--master=" + rm.addr
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"maintenance", master}, 2, "expecting 1 argument(s)"},
		{[]string{"maintenance", "reboot", master}, 2, "unknown subcommand"},
		{[]string{"maintenance", "down", master}, 2, "at least one MACHINE"},
		{[]string{"maintenance", "down", "/", master}, 2, "expecting HOST, IP or HOST/IP"},
		{[]string{"maintenance", "down", "a1", master}, 1, "is not part of a maintenance schedule"},
		{[]string{"maintenance", "up", "10.0.0.2", master}, 1, "is not in DOWN mode"},
		{[]string{"maintenance", "status", "x", master}, 2, "takes no argument"},
	} {
		code, _, errs := run(e, tc.args[0], tc.args[1:]...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want %d containing %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

func TestMaintenanceStatusJSON(t *testing.T) {
	rm := startRealMaster(t, "cpus:4;mem:1024")
	e, _ := testEnv()
	master := "--master=" + rm.addr
	file := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(file, []byte(`{"windows":[{"machine_ids":[{"hostname":"a1"}],"unavailability":{"start":{"nanoseconds":1}}}]}`), 0o644)
	if code, _, errs := run(e, "maintenance", "schedule", file, master); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := run(e, "maintenance", "status", "--json", master)
	var got []machineStatus
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 || got[0].Machine != "a1" || got[0].Mode != "DRAINING" {
		t.Fatalf("exit %d out %q err %q", code, out, errs)
	}
	// schedule --json prints the Schedule as the master renders it.
	code, out, errs = run(e, "maintenance", "schedule", "--json", master)
	if code != 0 || !strings.Contains(out, `"machine_ids":[{"hostname":"a1"}]`) {
		t.Fatalf("schedule --json: exit %d out %q err %q", code, out, errs)
	}
	code, out, errs = run(e, "maintenance", "down", "a1", "--json", master)
	var down struct {
		Machines []string `json:"machines"`
		Mode     string   `json:"mode"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &down) != nil || down.Mode != "DOWN" || len(down.Machines) != 1 || down.Machines[0] != "a1" {
		t.Fatalf("down --json: exit %d out %q err %q", code, out, errs)
	}
}
