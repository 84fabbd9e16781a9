// Package atomicfile replaces checkpoint files so that a crash leaves either
// the old or the new content, never a torn file. The agent's checkpoints
// (agent metadata and the containerizer's runtime records) use it.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data: it writes a temp file in the same
// directory (created if missing), fsyncs it, renames it over path and
// fsyncs the directory so that the rename itself is durable.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpointing %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs directory dir, making renames and new entries in it
// durable. File systems that cannot fsync a directory (EINVAL) are taken as
// having nothing to sync.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
