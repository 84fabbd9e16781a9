package endpoints

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/internal/loglevel"
)

func setLevel(level uint32, d time.Duration) *masterpb.Call {
	return &masterpb.Call{Type: masterpb.Call_SET_LOGGING_LEVEL.Enum(), SetLoggingLevel: &masterpb.Call_SetLoggingLevel{
		Level: proto.Uint32(level), Duration: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(d))}}}
}

// SET_LOGGING_LEVEL raises the master's slog level for the duration (200,
// no body), GET_LOGGING_LEVEL reports it, and it reverts when the injected
// clock passes the duration.
func TestOperatorLoggingLevel(t *testing.T) {
	fc := clock.NewFake(testNow)
	var lv slog.LevelVar
	mux := http.NewServeMux()
	Register(mux, newFakeSource(testSnapshot()), Options{Version: "1.12.0", Clock: fc, Logging: loglevel.New(&lv, fc)})
	get := func() uint32 {
		w := postCall(t, mux, codec.JSON, callOf(masterpb.Call_GET_LOGGING_LEVEL))
		r := &masterpb.Response{}
		if w.Code != 200 || codec.Unmarshal(codec.JSON, w.Body.Bytes(), r) != nil || r.GetType() != masterpb.Response_GET_LOGGING_LEVEL {
			t.Fatalf("GET_LOGGING_LEVEL: %d %s", w.Code, w.Body)
		}
		return r.GetGetLoggingLevel().GetLevel()
	}
	if v := get(); v != 0 {
		t.Fatalf("initial level %d", v)
	}
	if w := postCall(t, mux, codec.Protobuf, setLevel(2, 30*time.Second)); w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Type") != "" {
		t.Fatalf("SET_LOGGING_LEVEL: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if v := get(); v != 2 || lv.Level() != slog.LevelDebug-4 {
		t.Fatalf("after SET: %d (slog %v)", v, lv.Level())
	}
	fc.Advance(30 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for get() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("level did not revert")
		}
		time.Sleep(time.Millisecond)
	}

	for _, tc := range []struct {
		name string
		call *masterpb.Call
		code int
		msg  string
	}{
		{"no sub-message", callOf(masterpb.Call_SET_LOGGING_LEVEL), 400, "'set_logging_level'"},
		{"level too high", setLevel(11, time.Second), 400, "'level'"},
		{"zero duration", setLevel(1, 0), 400, "'duration'"},
	} {
		if w := postCall(t, mux, codec.JSON, tc.call); w.Code != tc.code || !strings.Contains(w.Body.String(), tc.msg) {
			t.Errorf("%s: %d %s, want %d naming %s", tc.name, w.Code, w.Body, tc.code, tc.msg)
		}
	}
	if get() != 0 {
		t.Error("a refused SET changed the level")
	}
}

// Without a logging control the level reads 0 and cannot be set.
func TestOperatorLoggingLevelWithoutControl(t *testing.T) {
	mux, _ := newTestServer(t, newFakeSource(testSnapshot()))
	if w := postCall(t, mux, codec.JSON, setLevel(1, time.Second)); w.Code != 501 {
		t.Errorf("SET without a control: %d %s", w.Code, w.Body)
	}
}
