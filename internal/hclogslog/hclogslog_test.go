package hclogslog

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// record logs through a Logger over a JSON handler at level min and
// returns the one record written (nil if none).
func record(t *testing.T, min slog.Level, o Options, log func(hclog.Logger)) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	l := New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: min}), o)
	log(l)
	if buf.Len() == 0 {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line, got %d:\n%s", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %v: %s", err, lines[0])
	}
	return rec
}

func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		log  func(hclog.Logger)
		min  slog.Level
		want string // "" when nothing is logged
	}{
		{func(l hclog.Logger) { l.Trace("m") }, LevelTrace, "DEBUG-4"},
		{func(l hclog.Logger) { l.Trace("m") }, slog.LevelDebug, ""},
		{func(l hclog.Logger) { l.Debug("m") }, slog.LevelDebug, "DEBUG"},
		{func(l hclog.Logger) { l.Debug("m") }, slog.LevelInfo, ""},
		{func(l hclog.Logger) { l.Info("m") }, slog.LevelInfo, "INFO"},
		{func(l hclog.Logger) { l.Log(hclog.NoLevel, "m") }, slog.LevelInfo, "INFO"},
		{func(l hclog.Logger) { l.Warn("m") }, slog.LevelWarn, "WARN"},
		{func(l hclog.Logger) { l.Info("m") }, slog.LevelWarn, ""},
		{func(l hclog.Logger) { l.Error("m") }, slog.LevelError, "ERROR"},
		{func(l hclog.Logger) { l.Log(hclog.Off, "m") }, LevelTrace, ""},
	} {
		rec := record(t, tc.min, Options{}, tc.log)
		got := ""
		if rec != nil {
			got, _ = rec["level"].(string)
		}
		if got != tc.want {
			t.Errorf("at min %v: level %q, want %q", tc.min, got, tc.want)
		}
	}
}

func TestAttributes(t *testing.T) {
	rec := record(t, slog.LevelInfo, Options{Name: "raft"}, func(l hclog.Logger) {
		l.Named("net").With("peer", "p1").Info("failed to heartbeat",
			"error", errors.New("EOF"), "backoff", hclog.Fmt("%dms", 10), "id", hclog.Hex(255), "odd")
	})
	want := map[string]any{
		"msg": "failed to heartbeat", "component": "raft.net", "peer": "p1", "error": "EOF",
		"backoff": "10ms", "id": "0xff", hclog.MissingKey: "odd",
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %#v, want %#v (record %v)", k, rec[k], v, rec)
		}
	}
}

func TestAdjustAndSetLevel(t *testing.T) {
	demote := Options{Adjust: func(level hclog.Level, msg string, _ []any) hclog.Level {
		if msg == "expected" {
			return hclog.Debug
		}
		return level
	}}
	if rec := record(t, slog.LevelInfo, demote, func(l hclog.Logger) { l.Warn("expected") }); rec != nil {
		t.Errorf("a message adjusted to DEBUG was logged at INFO: %v", rec)
	}
	if rec := record(t, slog.LevelDebug, demote, func(l hclog.Logger) { l.Warn("expected") }); rec == nil || rec["level"] != "DEBUG" {
		t.Errorf("adjusted message: %v, want it at DEBUG", rec)
	}
	if rec := record(t, slog.LevelInfo, demote, func(l hclog.Logger) { l.Warn("other") }); rec == nil || rec["level"] != "WARN" {
		t.Errorf("unadjusted message: %v, want WARN", rec)
	}
	if rec := record(t, slog.LevelInfo, Options{}, func(l hclog.Logger) { l.SetLevel(hclog.Error); l.Warn("m") }); rec != nil {
		t.Errorf("SetLevel(Error) let a WARN through: %v", rec)
	}
	l := New(slog.NewJSONHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}), Options{})
	if l.GetLevel() != hclog.Warn || l.IsInfo() || !l.IsWarn() {
		t.Errorf("GetLevel %v IsInfo %v IsWarn %v over a WARN handler", l.GetLevel(), l.IsInfo(), l.IsWarn())
	}
}

func TestStandardWriterInfersLevels(t *testing.T) {
	rec := record(t, slog.LevelInfo, Options{}, func(l hclog.Logger) {
		l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Print("[WARN] disk slow")
	})
	if rec["level"] != "WARN" || rec["msg"] != "disk slow" {
		t.Errorf("got %v, want WARN \"disk slow\"", rec)
	}
}
