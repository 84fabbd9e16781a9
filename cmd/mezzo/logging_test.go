package main

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"testing"
)

func TestLoggerFormats(t *testing.T) {
	for _, tc := range []struct {
		level, format string
		wantErr       string
		check         func(line string) bool
	}{
		{"info", "text", "", func(l string) bool { return strings.HasPrefix(l, "time=") && strings.Contains(l, `msg=hello k=v`) }},
		{"info", "", "", func(l string) bool { return strings.HasPrefix(l, "time=") }},
		{"debug", "json", "", func(l string) bool {
			var m map[string]any
			return json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "hello" && m["k"] == "v" && m["level"] == "INFO"
		}},
		{"info", "xml", `--log_format="xml"`, nil},
		{"loud", "text", `--logging_level="loud"`, nil},
	} {
		var buf bytes.Buffer
		l, ctl, err := logger(&buf, tc.level, tc.format)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("logger(%q, %q) = %v, want an error naming %s", tc.level, tc.format, err, tc.wantErr)
			}
			continue
		}
		if err != nil || ctl == nil {
			t.Fatalf("logger(%q, %q): %v", tc.level, tc.format, err)
		}
		l.Info("hello", "k", "v")
		if line := strings.TrimSpace(buf.String()); !tc.check(line) {
			t.Errorf("logger(%q, %q) wrote %q", tc.level, tc.format, line)
		}
	}
}

// TestBridgeStdLog: what a library prints through the log package comes
// out in the process's format, at WARN.
func TestBridgeStdLog(t *testing.T) {
	orig := slog.Default()
	t.Cleanup(func() { slog.SetDefault(orig); slog.SetLogLoggerLevel(slog.LevelInfo) })
	var buf bytes.Buffer
	l, _, err := logger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	bridgeStdLog(l)
	log.Print("http: Accept error: too many open files")
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &m); err != nil {
		t.Fatalf("not one JSON object: %q (%v)", buf.String(), err)
	}
	if m["level"] != "WARN" || m["msg"] != "http: Accept error: too many open files" {
		t.Errorf("got %v, want the message at WARN", m)
	}
}
