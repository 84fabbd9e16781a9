package loglevel

import (
	"log/slog"
	"testing"
	"time"

	"mezzo/internal/clock"
)

// waitFor polls cond until it holds or a generous deadline passes: the
// revert runs on its own goroutine after the fake clock fires.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestVerbosityMapping(t *testing.T) {
	for _, tc := range []struct {
		base  slog.Level
		v     uint32
		level slog.Level
	}{
		{slog.LevelInfo, 0, slog.LevelInfo},
		{slog.LevelInfo, 1, slog.LevelDebug},
		{slog.LevelInfo, 2, slog.LevelDebug - 4},
		{slog.LevelWarn, 1, slog.LevelInfo},
		{slog.LevelError, 3, slog.LevelDebug},
	} {
		var lv slog.LevelVar
		lv.Set(tc.base)
		c := New(&lv, clock.NewFake(time.Unix(0, 0)))
		if err := c.Set(tc.v, time.Minute); err != nil {
			t.Fatal(err)
		}
		if lv.Level() != tc.level || c.Verbosity() != tc.v {
			t.Errorf("base %v, Set(%d): level %v verbosity %d, want %v %d", tc.base, tc.v, lv.Level(), c.Verbosity(), tc.level, tc.v)
		}
	}
}

func TestRevertsAfterDuration(t *testing.T) {
	var lv slog.LevelVar
	fc := clock.NewFake(time.Unix(0, 0))
	c := New(&lv, fc)
	if err := c.Set(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if c.Verbosity() != 1 {
		t.Fatalf("verbosity %d after Set(1)", c.Verbosity())
	}
	fc.Advance(29 * time.Second)
	if c.Verbosity() != 1 {
		t.Fatalf("reverted before the duration")
	}
	fc.Advance(time.Second)
	waitFor(t, "revert", func() bool { return c.Verbosity() == 0 && lv.Level() == slog.LevelInfo })
}

// A second Set replaces the first and its revert: the first's timer firing
// later must not cut the second change short.
func TestLaterSetSupersedes(t *testing.T) {
	var lv slog.LevelVar
	fc := clock.NewFake(time.Unix(0, 0))
	c := New(&lv, fc)
	if err := c.Set(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(2, time.Minute); err != nil {
		t.Fatal(err)
	}
	fc.Advance(10 * time.Second)
	// The first revert was cancelled; give its goroutine a chance to
	// (wrongly) run, then check the level held.
	waitFor(t, "only the second timer pending", func() bool { return fc.Pending() == 1 })
	if c.Verbosity() != 2 {
		t.Fatalf("verbosity %d after the superseded timer, want 2", c.Verbosity())
	}
	fc.Advance(50 * time.Second)
	waitFor(t, "revert", func() bool { return c.Verbosity() == 0 })
}

func TestRejects(t *testing.T) {
	var lv slog.LevelVar
	c := New(&lv, clock.NewFake(time.Unix(0, 0)))
	if err := c.Set(11, time.Second); err == nil {
		t.Error("level 11 accepted")
	}
	if err := c.Set(1, 0); err == nil {
		t.Error("zero duration accepted")
	}
	if c.Verbosity() != 0 {
		t.Errorf("a refused Set changed the level")
	}
}
