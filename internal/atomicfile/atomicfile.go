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
func WriteFile(path string, data []byte) error { return write(path, data, true) }

// WriteFileUnsynced replaces path with data as WriteFile does (temp file,
// rename: a crash of the writing process leaves the old or the new
// content) but without fsyncs, so a crash of the host may lose or
// truncate it. For records that a host crash makes worthless anyway.
func WriteFileUnsynced(path string, data []byte) error { return write(path, data, false) }

func write(path string, data []byte, sync bool) error {
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
	if err == nil && sync {
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
	if !sync {
		return nil
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
