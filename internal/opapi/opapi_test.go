package opapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/internal/loglevel"
)

func TestListsAreSorted(t *testing.T) {
	m := Metrics(map[string]float64{"b": 2, "a": 1, "c/d": 3})
	if len(m) != 3 || m[0].GetName() != "a" || m[1].GetName() != "b" || m[2].GetName() != "c/d" || m[2].GetValue() != 3 {
		t.Errorf("metrics %v", m)
	}
	f := Flags(map[string]string{"port": "5051", "ip": "0.0.0.0"})
	if len(f) != 2 || f[0].GetName() != "ip" || f[1].GetValue() != "5051" {
		t.Errorf("flags %v", f)
	}
}

func TestSetLoggingLevel(t *testing.T) {
	var lv slog.LevelVar
	c := loglevel.New(&lv, clock.NewFake(time.Unix(0, 0)))
	minute := &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(time.Minute))}
	for _, tc := range []struct {
		name   string
		c      *loglevel.Control
		level  uint32
		d      *mesos.DurationInfo
		status int
	}{
		{"ok", c, 1, minute, 200},
		{"no duration", c, 1, nil, 400},
		{"duration without nanoseconds", c, 1, &mesos.DurationInfo{}, 400},
		{"level too high", c, 11, minute, 400},
		{"no control", nil, 1, minute, 501},
	} {
		status, err := SetLoggingLevel(tc.c, tc.level, tc.d)
		if status != tc.status || (err == nil) != (tc.status == 200) {
			t.Errorf("%s: %d %v, want %d", tc.name, status, err, tc.status)
		}
	}
	if LoggingLevel(c) != 1 || LoggingLevel(nil) != 0 {
		t.Errorf("levels %d %d", LoggingLevel(c), LoggingLevel(nil))
	}
}

func TestWriters(t *testing.T) {
	w := httptest.NewRecorder()
	WriteMessage(w, codec.JSON, &mesos.Metric{Name: proto.String("x"), Value: proto.Float64(1)})
	if w.Code != 200 || w.Header().Get("Content-Type") != string(codec.JSON) || w.Body.String() != `{"name":"x","value":1.0}` {
		t.Errorf("WriteMessage: %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	w = httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json")
	WriteEmpty(w)
	if w.Code != 200 || w.Header().Get("Content-Type") != "" || w.Body.Len() != 0 {
		t.Errorf("WriteEmpty: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	w = httptest.NewRecorder()
	NoEndpoint(w, httptest.NewRequest(http.MethodGet, "/x/y?z=1", nil), "agent")
	if w.Code != 404 || w.Body.String() != "No endpoint '/x/y' on this agent\n" {
		t.Errorf("NoEndpoint: %d %q", w.Code, w.Body)
	}
}
