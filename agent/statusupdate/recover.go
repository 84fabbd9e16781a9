package statusupdate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Recover reloads the checkpointed streams from Options.MetaDir; call it
// before Start and before any Update. Streams whose terminal update was
// acknowledged are deleted. A torn or corrupt record is reported (a
// *CorruptError naming the file, joined with any others); the valid prefix of
// that file is recovered and the file is cut back to it, so later appends
// stay readable. Recovered heads are forwarded when the loop runs (and not
// paused).
func (m *Manager) Recover() error {
	if m.opts.MetaDir == "" {
		return nil
	}
	fws, err := os.ReadDir(m.opts.MetaDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recovering status updates: %w", err)
	}
	var errs []error
	for _, fw := range fws {
		if !fw.IsDir() {
			continue
		}
		fwDir := filepath.Join(m.opts.MetaDir, fw.Name())
		tasks, err := os.ReadDir(fwDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("recovering status updates: %w", err))
			continue
		}
		for _, t := range tasks {
			if !t.IsDir() {
				continue
			}
			path := filepath.Join(fwDir, t.Name(), updatesFile)
			if err := m.recoverFile(path); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// recoverFile replays one checkpoint file into a stream.
func (m *Manager) recoverFile(path string) error {
	recs, _, readErr := readRecords(path)
	if errors.Is(readErr, os.ErrNotExist) {
		return nil
	}
	var corrupt *CorruptError
	if readErr != nil && !errors.As(readErr, &corrupt) {
		return fmt.Errorf("recovering status updates: %w", readErr)
	}

	var s *stream
	var good int64 // end of the last record replayed successfully
	var replayErr error
	closed := false
	for _, r := range recs {
		var err error
		switch r.kind {
		case recordUpdate:
			err = m.replayUpdate(&s, path, r)
		case recordAck:
			if s == nil {
				err = errors.New("acknowledgement before any update")
				break
			}
			if err = s.checkAck(r.ack); err == nil && s.applyAck(r.ack) {
				closed = true
			}
		}
		if err != nil {
			replayErr = &CorruptError{File: path, Offset: good, Reason: err.Error()}
			break
		}
		good = r.end
		if closed {
			break
		}
	}

	if closed || s == nil || len(s.received) == 0 {
		// Finished stream (or nothing usable): nothing to resend.
		if rmErr := os.RemoveAll(filepath.Dir(path)); rmErr != nil && replayErr == nil && readErr == nil {
			return fmt.Errorf("recovering status updates: %w", rmErr)
		}
		return errors.Join(readErr, replayErr)
	}
	bad := readErr != nil || replayErr != nil
	if bad {
		if err := os.Truncate(path, good); err != nil {
			return errors.Join(readErr, replayErr, fmt.Errorf("truncating %s: %w", path, err))
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.streams[s.key]; dup {
		return errors.Join(readErr, replayErr, fmt.Errorf("recovering %s: stream for %s already exists", path, s.key))
	}
	m.streams[s.key] = s
	m.wakeLocked()
	return errors.Join(readErr, replayErr)
}

// replayUpdate applies an update record, creating the stream on the first.
func (m *Manager) replayUpdate(sp **stream, path string, r record) error {
	key, id, err := validate(r.update)
	if err != nil {
		return err
	}
	if *sp == nil {
		s := newStream(key)
		s.checkpoint, s.path = true, path
		*sp = s
	}
	s := *sp
	if key != s.key {
		return fmt.Errorf("update for %s in the stream of %s", key, s.key)
	}
	ok, err := s.check(r.update, id)
	if err != nil {
		return err
	}
	if ok {
		s.apply(r.update, id)
	}
	return nil
}
