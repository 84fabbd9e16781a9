package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The default runtime directory is on a tmpfs, one per work directory, and
// the same for the same work directory (a restarted agent finds its
// records there).
func TestDefaultRuntimeDir(t *testing.T) {
	var st syscall.Statfs_t
	tmpfs := false
	for _, base := range []string{"/run", "/dev/shm"} {
		if syscall.Statfs(base, &st) == nil && st.Type == tmpfsMagic {
			tmpfs = true
		}
	}
	a, b := t.TempDir(), t.TempDir()
	da, db := defaultRuntimeDir(a), defaultRuntimeDir(b)
	t.Cleanup(func() {
		for _, d := range []string{da, db} {
			if d != "" {
				os.RemoveAll(d)
			}
		}
	})
	if !tmpfs {
		if da != "" {
			t.Fatalf("no tmpfs here, yet the runtime directory is %q", da)
		}
		return
	}
	if da == "" || db == "" || da == db {
		t.Fatalf("runtime directories %q and %q, want two distinct ones", da, db)
	}
	if again := defaultRuntimeDir(a); again != da {
		t.Errorf("the same work directory got %q, then %q", da, again)
	}
	if again := defaultRuntimeDir(filepath.Join(a, "x", "..")); again != da {
		t.Errorf("an equivalent path got %q, want %q", again, da)
	}
	if err := syscall.Statfs(da, &st); err != nil || st.Type != tmpfsMagic || !strings.Contains(da, "/mezzo/") {
		t.Errorf("%q is not a mezzo directory on a tmpfs (%v)", da, err)
	}
}
