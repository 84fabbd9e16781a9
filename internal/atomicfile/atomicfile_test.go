package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name string
		prev []byte // nil: no previous file
		data []byte
	}{
		{"new file in a new directory", nil, []byte("hello")},
		{"replaces previous content", []byte("old content, longer"), []byte("new")},
		{"empty data", []byte("old"), []byte{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a", "b")
			path := filepath.Join(dir, "file")
			if tt.prev != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tt.prev, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, tt.data); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(tt.data) {
				t.Errorf("content %q, want %q", got, tt.data)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the file (no temp files left)", len(entries))
			}
		})
	}
}

func TestWriteFileErrorNamesPath(t *testing.T) {
	dir := t.TempDir()
	// A directory in the way makes the rename fail.
	path := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(path, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, []byte("x"))
	if err == nil {
		t.Fatal("WriteFile over a non-empty directory succeeded")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp file left behind: %d entries", len(entries))
	}
}

func TestSyncDirMissing(t *testing.T) {
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("SyncDir of a missing directory succeeded")
	}
}
