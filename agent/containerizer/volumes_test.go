package containerizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LinkVolumes (filesystem/posix) links each volume at its path in the
// sandbox, idempotently, and refuses absolute paths, paths leaving the
// sandbox and paths already taken by something else.
func TestLinkVolumes(t *testing.T) {
	sandbox, vol, other := t.TempDir(), t.TempDir(), t.TempDir()
	vols := []Volume{{HostPath: vol, ContainerPath: "data"}, {HostPath: vol, ContainerPath: "deep/er"}}
	for range 2 {
		if err := LinkVolumes(sandbox, vols); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"data", "deep/er"} {
		if got, err := os.Readlink(filepath.Join(sandbox, p)); err != nil || got != vol {
			t.Errorf("%s -> %q, %v", p, got, err)
		}
	}
	os.WriteFile(filepath.Join(sandbox, "file"), nil, 0o644)
	for _, tc := range []struct {
		v   Volume
		err string
	}{
		{Volume{HostPath: vol, ContainerPath: "/abs"}, "needs a mount namespace"},
		{Volume{HostPath: vol, ContainerPath: "a/../../x"}, "does not name a path inside the sandbox"},
		{Volume{HostPath: vol, ContainerPath: ""}, "'container_path' is empty"},
		{Volume{HostPath: other, ContainerPath: "data"}, "already links to"},
		{Volume{HostPath: vol, ContainerPath: "file"}, "already exists in the sandbox"},
	} {
		err := LinkVolumes(sandbox, []Volume{tc.v})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want an error containing %q", tc.v, err, tc.err)
		}
	}
	if err := LinkVolumes(sandbox, []Volume{{HostPath: vol, ContainerPath: "/abs"}}); !errors.Is(err, ErrAbsoluteVolumePath) {
		t.Errorf("absolute path: %v is not ErrAbsoluteVolumePath", err)
	}
}
