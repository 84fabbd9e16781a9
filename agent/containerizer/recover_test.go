package containerizer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/atomicfile"
)

// An agent restart: a second containerizer over the same runtime dir
// re-attaches to the first one's live container, sees it end when it is
// destroyed, and reports dead and recycled pids as ended; with fsynced
// records and with RuntimeUnsynced ones (which an agent process restart
// finds in the page cache).
func TestRecoverReattaches(t *testing.T) {
	for _, unsynced := range []bool{false, true} {
		t.Run(map[bool]string{false: "synced", true: "unsynced"}[unsynced], func(t *testing.T) {
			testRecoverReattaches(t, unsynced)
		})
	}
}

func testRecoverReattaches(t *testing.T, unsynced bool) {
	rt := t.TempDir()
	m1, err := NewMesos(Options{RuntimeDir: rt, RuntimeUnsynced: unsynced})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := m1.Launch(waitCtx(t), shell("live", dir, "sleep 30"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(rt, "live", "pid")); err != nil {
		t.Fatalf("no runtime checkpoint: %v", err)
	}
	// A container whose process is gone, and one whose pid was recycled
	// (same pid as the live one, another start time).
	for id, rec := range map[string]string{
		"dead":     `{"pid": 2147483000, "start_ticks": 1, "started": 1}`,
		"recycled": `{"pid": ` + strconv.Itoa(c.Pid) + `, "start_ticks": 1, "started": 1}`,
	} {
		if err := atomicfile.WriteFile(filepath.Join(rt, id, "pid"), []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}

	m2, err := NewMesos(Options{RuntimeDir: rt})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.Recover(waitCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"dead": true, "live": false, "recycled": true}
	if len(got) != len(want) {
		t.Fatalf("recovered %+v", got)
	}
	for _, r := range got {
		if ended, ok := want[r.ID]; !ok || ended != r.Ended {
			t.Errorf("recovered %s ended=%v, want %v", r.ID, r.Ended, want[r.ID])
		}
	}
	for _, id := range []string{"dead", "recycled"} {
		term, err := m2.Wait(waitCtx(t), id)
		if err != nil || !term.Recovered {
			t.Errorf("Wait(%s) = %+v, %v", id, term, err)
		}
	}
	if ids := m2.Containers(); len(ids) != 1 || ids[0] != "live" {
		t.Fatalf("live containers after recovery: %v", ids)
	}
	if err := m2.Destroy(waitCtx(t), "live", time.Second); err != nil {
		t.Fatal(err)
	}
	term, err := m2.Wait(waitCtx(t), "live")
	if err != nil || !term.Destroyed || !term.Recovered {
		t.Fatalf("recovered container's termination %+v, %v", term, err)
	}
	if _, err := m1.Wait(waitCtx(t), "live"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(rt); len(entries) != 0 {
		t.Errorf("runtime dir not cleaned up: %v", entries)
	}
}

func TestRecoverCorruptCheckpointNamesFile(t *testing.T) {
	for name, content := range map[string]string{
		"torn":    `{"pid": 12`,
		"zeropid": `{"pid": 0}`,
	} {
		t.Run(name, func(t *testing.T) {
			rt := t.TempDir()
			path := filepath.Join(rt, "c1", "pid")
			if err := atomicfile.WriteFile(path, []byte(content)); err != nil {
				t.Fatal(err)
			}
			m, _ := NewMesos(Options{RuntimeDir: rt})
			_, err := m.Recover(context.Background())
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v does not name %s", err, path)
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		in    string
		state byte
		ticks uint64
		ok    bool
	}{
		{"1234 (sleep) S 1 1234 1234 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 987654 5000000 100", 'S', 987654, true},
		{"1234 (a) b) (c) Z 1 1234 1234 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 42 5000000 100", 'Z', 42, true},
		{"1234 (x) S 1 2", 0, 0, false},
		{"no paren here", 0, 0, false},
		{"1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 notanumber 0", 0, 0, false},
	}
	for _, tt := range tests {
		st, err := parseProcStat([]byte(tt.in))
		if (err == nil) != tt.ok || (tt.ok && (st.state != tt.state || st.startTicks != tt.ticks)) {
			t.Errorf("parseProcStat(%q) = %+v, %v", tt.in, st, err)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("1234 (sleep) S 1 1234 1234 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 987654 5000000 100"))
	f.Add([]byte("1 ()) R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseProcStat(b) // must not panic
	})
}

// limitIsolator reports a limitation right after Isolate, as the cgroups
// memory isolator does on OOM, and closes the channel at Cleanup.
type limitIsolator struct {
	noopIsolator
	ch chan Limitation
}

func (l *limitIsolator) Isolate(context.Context, string, int) error {
	l.ch <- Limitation{Reason: mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY, Message: "Memory limit exceeded"}
	return nil
}
func (l *limitIsolator) Cleanup(context.Context, string) error { close(l.ch); return nil }
func (l *limitIsolator) Limitations(string) <-chan Limitation  { return l.ch }

func TestLimiterDestroysAndReports(t *testing.T) {
	iso := &limitIsolator{noopIsolator: noopIsolator{"test/limit"}, ch: make(chan Limitation, 1)}
	m := newTestMesos(t, nil)
	m.isolators = []Isolator{iso}
	if _, err := m.Launch(waitCtx(t), shell("c1", t.TempDir(), "sleep 30")); err != nil {
		t.Fatal(err)
	}
	term, err := m.Wait(waitCtx(t), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if term.Limitation == nil || term.Limitation.Reason != mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY {
		t.Fatalf("termination %+v has no memory limitation", term)
	}
	if l, ok := m.Limitation("c1"); !ok || l.Message != "Memory limit exceeded" {
		t.Errorf("Limitation = %+v, %v", l, ok)
	}
	if _, err := m.Usage(waitCtx(t), "c1"); !errors.Is(err, ErrUnknownContainer) {
		t.Errorf("Usage of an ended container: %v", err)
	}
}

// recoveringIsolator records the IDs Recover gets, and then reports a
// limitation for "oom" (its limit was hit while the agent was down).
type recoveringIsolator struct {
	noopIsolator
	got []string
	ch  map[string]chan Limitation
}

func (r *recoveringIsolator) Recover(_ context.Context, ids []string) error {
	r.got = ids
	for _, id := range ids {
		r.ch[id] = make(chan Limitation, 1)
	}
	r.ch["oom"] <- Limitation{Reason: mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY, Message: "Memory limit exceeded"}
	return nil
}
func (r *recoveringIsolator) Cleanup(_ context.Context, id string) error {
	if ch := r.ch[id]; ch != nil {
		close(ch)
	}
	return nil
}
func (r *recoveringIsolator) Limitations(id string) <-chan Limitation { return r.ch[id] }

// Recover hands every checkpointed container to RecoveringIsolators
// before waiting on them, and a recovered container's limitation ends it
// and is reported in its termination.
func TestRecoverRecoversIsolators(t *testing.T) {
	rt := t.TempDir()
	m1, err := NewMesos(Options{RuntimeDir: rt})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Launch(waitCtx(t), shell("oom", t.TempDir(), "sleep 30")); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(filepath.Join(rt, "dead", "pid"), []byte(`{"pid": 2147483000, "start_ticks": 1, "started": 1}`)); err != nil {
		t.Fatal(err)
	}
	iso := &recoveringIsolator{noopIsolator: noopIsolator{"test/recover"}, ch: map[string]chan Limitation{}}
	m2 := newTestMesos(t, nil)
	m2.runtimeDir = rt
	m2.isolators = []Isolator{iso}
	if _, err := m2.Recover(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Join(iso.got, ",") != "dead,oom" {
		t.Errorf("isolator recovered %v, want [dead oom]", iso.got)
	}
	term, err := m2.Wait(waitCtx(t), "oom")
	if err != nil || term.Limitation == nil || term.Limitation.Reason != mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY {
		t.Fatalf("recovered container's termination %+v, %v; want the memory limitation", term, err)
	}
	if _, err := m1.Wait(waitCtx(t), "oom"); err != nil {
		t.Fatal(err)
	}
}
