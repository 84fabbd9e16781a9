package statusupdate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
)

func TestCheckpointRecoverRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := New(Options{MetaDir: dir})
	a := mkUpdate("fw/1", "task.1", mesos.TaskState_TASK_STARTING)
	b := mkUpdate("fw/1", "task.1", mesos.TaskState_TASK_RUNNING)
	c := mkUpdate("fw/1", "task.1", mesos.TaskState_TASK_FAILED)
	other := mkUpdate("fw/1", "..", mesos.TaskState_TASK_RUNNING) // hostile id stays inside MetaDir
	uncheck := mkUpdate("fw2", "x", mesos.TaskState_TASK_RUNNING)
	mustUpdate(t, m, a, true)
	mustUpdate(t, m, b, true)
	mustUpdate(t, m, c, true)
	mustUpdate(t, m, other, true)
	mustUpdate(t, m, uncheck, false)
	mustAck(t, m, a)

	rec := &recorder{}
	m2 := New(Options{MetaDir: dir, Forward: rec.forward})
	if err := m2.Recover(); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	p := m2.Pending("fw/1", "task.1")
	if len(p) != 2 || uuidOf(p[0]) != uuidOf(b) || uuidOf(p[1]) != uuidOf(c) {
		t.Fatalf("recovered pending %v", p)
	}
	if st, ok := m2.Latest("fw/1", "task.1"); !ok || st.GetState() != mesos.TaskState_TASK_FAILED {
		t.Fatalf("recovered latest %v %v", st, ok)
	}
	if len(m2.Pending("fw/1", "..")) != 1 {
		t.Fatal("stream with id '..' not recovered")
	}
	if m2.Pending("fw2", "x") != nil {
		t.Fatal("non-checkpointed stream recovered")
	}
	// Duplicates are still recognised after recovery.
	mustUpdate(t, m2, a, true)
	mustUpdate(t, m2, b, true)
	if len(m2.Pending("fw/1", "task.1")) != 2 {
		t.Fatal("duplicate accepted after recovery")
	}
	m2.flush(t0)
	expectForwarded(t, sortByTask(rec.take()), other, b)

	// Acking through the terminal update removes the checkpoint.
	mustAck(t, m2, b)
	if !mustAck(t, m2, c) {
		t.Fatal("terminal not reported")
	}
	if _, err := os.Stat(m2.streamPath(streamKey{"fw/1", "task.1"})); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint of closed stream still there: %v", err)
	}
	m3 := New(Options{MetaDir: dir})
	if err := m3.Recover(); err != nil {
		t.Fatal(err)
	}
	if m3.Pending("fw/1", "task.1") != nil {
		t.Fatal("closed stream recovered")
	}
	m3.CleanupFramework("fw/1")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("CleanupFramework left %v", entries)
	}
}

func sortByTask(us []*protocol.AgentCall_StatusUpdate) []*protocol.AgentCall_StatusUpdate {
	// Task ".." sorts before "task.1".
	if len(us) == 2 && us[0].GetStatus().GetTaskId().GetValue() != ".." {
		us[0], us[1] = us[1], us[0]
	}
	return us
}

func TestRecoverRemovesFileEndingInTerminalAck(t *testing.T) {
	// A crash after the terminal ack was written but before the file was
	// removed leaves a closed stream on disk.
	dir := t.TempDir()
	m := New(Options{MetaDir: dir})
	a := mkUpdate("f", "t", mesos.TaskState_TASK_FINISHED)
	mustUpdate(t, m, a, true)
	path := m.streamPath(streamKey{"f", "t"})
	if err := appendRecord(path, encodeAck(uuidOf(a))); err != nil {
		t.Fatal(err)
	}
	m2 := New(Options{MetaDir: dir})
	if err := m2.Recover(); err != nil {
		t.Fatal(err)
	}
	if m2.Pending("f", "t") != nil {
		t.Fatal("closed stream recovered")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("closed stream file not removed")
	}
}

func TestTornTailDetected(t *testing.T) {
	tests := []struct {
		name   string
		damage func(data []byte) []byte
		reason string
	}{
		{"torn header", func(d []byte) []byte { return append(d, 0, 0, 0) }, "torn record header"},
		{"torn payload", func(d []byte) []byte {
			rec := encodeAck([16]byte{1})
			return append(d, rec[:len(rec)-4]...)
		}, "torn record"},
		{"checksum", func(d []byte) []byte {
			rec := encodeAck([16]byte{1})
			rec[len(rec)-1] ^= 0xff
			return append(d, rec...)
		}, "checksum mismatch"},
		{"zero length", func(d []byte) []byte { return append(d, make([]byte, 8)...) }, "invalid record length"},
		{"ack of non-head", func(d []byte) []byte { return append(d, encodeAck([16]byte{9})...) }, "unexpected status update acknowledgement"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := New(Options{MetaDir: dir})
			a := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
			mustUpdate(t, m, a, true)
			path := m.streamPath(streamKey{"f", "t"})
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			good := int64(len(data))
			if err := os.WriteFile(path, tc.damage(data), 0o600); err != nil {
				t.Fatal(err)
			}

			m2 := New(Options{MetaDir: dir})
			err = m2.Recover()
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Recover: %v, want a *CorruptError", err)
			}
			if ce.File != path || ce.Offset != good || !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("CorruptError %+v, want file %s offset %d reason %q", ce, path, good, tc.reason)
			}
			if !strings.Contains(err.Error(), filepath.Base(filepath.Dir(path))) {
				t.Fatalf("error %q does not name the file", err)
			}
			// The valid prefix is recovered and the file cut back to it, so
			// that appends continue cleanly.
			if p := m2.Pending("f", "t"); len(p) != 1 || uuidOf(p[0]) != uuidOf(a) {
				t.Fatalf("valid prefix not recovered: %v", p)
			}
			b := mkUpdate("f", "t", mesos.TaskState_TASK_FINISHED)
			mustUpdate(t, m2, b, true)
			m3 := New(Options{MetaDir: dir})
			if err := m3.Recover(); err != nil {
				t.Fatalf("second Recover: %v", err)
			}
			if len(m3.Pending("f", "t")) != 2 {
				t.Fatal("update appended after truncation lost")
			}
		})
	}
}

func TestDecodeRecordsRoundTrip(t *testing.T) {
	a := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	ra, err := encodeUpdate(a)
	if err != nil {
		t.Fatal(err)
	}
	data := append(ra, encodeAck(uuidOf(a))...)
	recs, n, err := decodeRecords("x", data)
	if err != nil || n != int64(len(data)) || len(recs) != 2 {
		t.Fatalf("decode: %d records, %d bytes, %v", len(recs), n, err)
	}
	if recs[0].kind != recordUpdate || uuidOf(recs[0].update) != uuidOf(a) || recs[1].kind != recordAck || recs[1].ack != uuidOf(a) {
		t.Fatal("records differ")
	}
}

func FuzzDecodeRecords(f *testing.F) {
	a := mkUpdate("f", "t", mesos.TaskState_TASK_RUNNING)
	ra, _ := encodeUpdate(a)
	f.Add(ra)
	f.Add(append(ra, encodeAck(uuidOf(a))...))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 'A'})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, n, err := decodeRecords("fuzz", data)
		if n < 0 || n > int64(len(data)) {
			t.Fatalf("prefix length %d out of range", n)
		}
		if err == nil && n != int64(len(data)) {
			t.Fatal("no error but data left over")
		}
		if len(recs) > 0 && recs[len(recs)-1].end != n {
			t.Fatal("last record end differs from prefix length")
		}
	})
}

func TestEscapeName(t *testing.T) {
	tests := map[string]string{
		"abc-1_2.3": "abc-1_2.3",
		"..":        "%2E%2E",
		".":         "%2E",
		"":          "%",
		"a/b":       "a%2Fb",
		"a b%":      "a%20b%25",
	}
	for in, want := range tests {
		if got := escapeName(in); got != want {
			t.Errorf("escapeName(%q) = %q, want %q", in, got, want)
		}
	}
}
