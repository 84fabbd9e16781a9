package pidns

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"mezzo/agent/containerizer"
)

// filesystem/linux always asks for a mount namespace; with volumes it puts
// the init step in front of the program with the resolved bind mounts
// (relative paths created in the sandbox), and refuses volumes it could not
// mount before anything starts.
func TestLinuxFSPrepare(t *testing.T) {
	sandbox, vol, hostDir := t.TempDir(), t.TempDir(), t.TempDir()
	cases := []struct {
		name   string
		vols   []containerizer.Volume
		mounts []bindMount // nil: no step
		err    string
	}{
		{name: "no volumes"},
		{name: "relative and absolute", vols: []containerizer.Volume{
			{HostPath: vol, ContainerPath: "data/db"},
			{HostPath: vol, ContainerPath: hostDir, ReadOnly: true},
		}, mounts: []bindMount{
			{Source: vol, Target: filepath.Join(sandbox, "data/db")},
			{Source: vol, Target: hostDir, RO: true},
		}},
		{name: "absolute path missing on the host", vols: []containerizer.Volume{{HostPath: vol, ContainerPath: "/nonexistent/x"}},
			err: "must name an existing directory"},
		{name: "leaves the sandbox", vols: []containerizer.Volume{{HostPath: vol, ContainerPath: "../x"}},
			err: "does not name a path inside the sandbox"},
		{name: "volume directory missing", vols: []containerizer.Volume{{HostPath: filepath.Join(vol, "nope"), ContainerPath: "d"}},
			err: "is not a directory on the host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &containerizer.ContainerConfig{Path: "/bin/sh", Args: []string{"sh"}, Dir: sandbox, Volumes: tc.vols}
			spec := &containerizer.LaunchSpec{SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
			err := LinuxFS{}.Prepare(context.Background(), cfg, spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Prepare: %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.SysProcAttr.Cloneflags&syscall.CLONE_NEWNS == 0 {
				t.Error("no mount namespace")
			}
			var got []bindMount
			for _, kv := range spec.Env {
				if v, ok := strings.CutPrefix(kv, VolumesEnv+"="); ok {
					if err := json.Unmarshal([]byte(v), &got); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !slices.Equal(got, tc.mounts) {
				t.Errorf("mounts %+v, want %+v", got, tc.mounts)
			}
			if (tc.mounts != nil) != (cfg.Path == selfExe) {
				t.Errorf("program %q with mounts %v", cfg.Path, tc.mounts)
			}
			for _, m := range tc.mounts {
				if st, err := os.Stat(m.Target); err != nil || !st.IsDir() {
					t.Errorf("mount point %s: %v", m.Target, err)
				}
			}
		})
	}
}
