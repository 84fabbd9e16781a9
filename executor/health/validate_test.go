package health

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
)

func TestValidate(t *testing.T) {
	okHTTP := func() *mesos.HealthCheck { return httpCheck(8080, "/health") }
	cases := []struct {
		name  string
		check *mesos.HealthCheck
		field string // "" means valid
	}{
		{"nil", nil, "health_check"},
		{"no type", &mesos.HealthCheck{}, "health_check.type"},
		{"unknown type", &mesos.HealthCheck{Type: mesos.HealthCheck_UNKNOWN.Enum()}, "health_check.type"},
		{"http ok", okHTTP(), ""},
		{"http missing", &mesos.HealthCheck{Type: mesos.HealthCheck_HTTP.Enum()}, "health_check.http"},
		{"http bad scheme", func() *mesos.HealthCheck { c := okHTTP(); c.Http.Scheme = proto.String("ftp"); return c }(), "health_check.http.scheme"},
		{"http https", func() *mesos.HealthCheck { c := okHTTP(); c.Http.Scheme = proto.String("https"); return c }(), ""},
		{"http relative path", func() *mesos.HealthCheck { c := okHTTP(); c.Http.Path = proto.String("health"); return c }(), "health_check.http.path"},
		{"http no port", func() *mesos.HealthCheck { c := okHTTP(); c.Http.Port = nil; return c }(), "health_check.http.port"},
		{"http port too big", func() *mesos.HealthCheck { c := okHTTP(); c.Http.Port = proto.Uint32(70000); return c }(), "health_check.http.port"},
		{"http bad status", func() *mesos.HealthCheck { c := okHTTP(); c.Http.Statuses = []uint32{200, 42}; return c }(), "health_check.http.statuses[1]"},
		{"tcp missing", &mesos.HealthCheck{Type: mesos.HealthCheck_TCP.Enum()}, "health_check.tcp"},
		{"tcp port zero", &mesos.HealthCheck{Type: mesos.HealthCheck_TCP.Enum(), Tcp: &mesos.HealthCheck_TCPCheckInfo{Port: proto.Uint32(0)}}, "health_check.tcp.port"},
		{"command missing", &mesos.HealthCheck{Type: mesos.HealthCheck_COMMAND.Enum()}, "health_check.command"},
		{"command empty", &mesos.HealthCheck{Type: mesos.HealthCheck_COMMAND.Enum(), Command: &mesos.CommandInfo{}}, "health_check.command.value"},
		{"negative delay", func() *mesos.HealthCheck { c := okHTTP(); c.DelaySeconds = proto.Float64(-1); return c }(), "health_check.delay_seconds"},
		{"NaN interval", func() *mesos.HealthCheck { c := okHTTP(); c.IntervalSeconds = proto.Float64(math.NaN()); return c }(), "health_check.interval_seconds"},
		{"infinite timeout", func() *mesos.HealthCheck { c := okHTTP(); c.TimeoutSeconds = proto.Float64(math.Inf(1)); return c }(), "health_check.timeout_seconds"},
		{"huge grace", func() *mesos.HealthCheck { c := okHTTP(); c.GracePeriodSeconds = proto.Float64(1e300); return c }(), "health_check.grace_period_seconds"},
		{"zero durations", func() *mesos.HealthCheck {
			c := okHTTP()
			c.DelaySeconds, c.IntervalSeconds, c.TimeoutSeconds = proto.Float64(0), proto.Float64(0), proto.Float64(0)
			return c
		}(), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.check)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
				t.Fatalf("got %v, want an error naming %s", err, tc.field)
			}
			if _, nerr := New(tc.check, Options{}); nerr == nil {
				t.Fatal("New accepted an invalid check")
			}
		})
	}
}

func TestNewResolvesExecutable(t *testing.T) {
	check := &mesos.HealthCheck{
		Type:    mesos.HealthCheck_COMMAND.Enum(),
		Command: &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("no-such-binary-xyz")},
	}
	_, err := New(check, Options{Env: []string{"PATH=/bin"}})
	if err == nil || !strings.HasPrefix(err.Error(), "health_check.command.value:") {
		t.Fatalf("got %v", err)
	}
}

func FuzzValidate(f *testing.F) {
	seed := []*mesos.HealthCheck{
		httpCheck(80, "/x"),
		commandCheck("true", 1),
		{Type: mesos.HealthCheck_TCP.Enum(), Tcp: &mesos.HealthCheck_TCPCheckInfo{Port: proto.Uint32(1)}},
	}
	for _, c := range seed {
		b, _ := proto.Marshal(c)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c mesos.HealthCheck
		if proto.Unmarshal(data, &c) != nil {
			return
		}
		if Validate(&c) != nil {
			return
		}
		// A valid check must build (COMMAND lookups aside) without panics.
		if c.GetType() == mesos.HealthCheck_COMMAND && !c.GetCommand().GetShell() {
			return
		}
		if _, err := New(&c, Options{}); err != nil {
			t.Fatalf("valid check rejected by New: %v", err)
		}
	})
}
