package health

import (
	"errors"
	"fmt"
	"math"
	"strings"

	mesos "mezzo/api/mesos"
)

// Validate checks a HealthCheck as Mesos does before running it: a known
// type with its matching sub-message, an http or https scheme, a path that
// starts with '/', a port in range and non-negative, finite durations. The
// error names the offending field.
func Validate(check *mesos.HealthCheck) error {
	if check == nil {
		return errors.New("health_check: missing")
	}
	if check.Type == nil {
		return errors.New("health_check.type: must be set (COMMAND, HTTP or TCP)")
	}
	switch check.GetType() {
	case mesos.HealthCheck_COMMAND:
		if check.Command == nil {
			return errors.New("health_check.command: expected for a COMMAND health check")
		}
		if check.GetCommand().GetValue() == "" {
			what := "executable path"
			if check.GetCommand().GetShell() {
				what = "shell command"
			}
			return fmt.Errorf("health_check.command.value: the %s is missing", what)
		}
	case mesos.HealthCheck_HTTP:
		if check.Http == nil {
			return errors.New("health_check.http: expected for an HTTP health check")
		}
		h := check.GetHttp()
		if h.Scheme != nil && h.GetScheme() != "http" && h.GetScheme() != "https" {
			return fmt.Errorf("health_check.http.scheme: unsupported scheme %q (want http or https)", h.GetScheme())
		}
		if h.Path != nil && !strings.HasPrefix(h.GetPath(), "/") {
			return fmt.Errorf("health_check.http.path: %q must start with '/'", h.GetPath())
		}
		if err := validatePort("health_check.http.port", h.Port); err != nil {
			return err
		}
		for i, s := range h.GetStatuses() {
			if s < 100 || s > 599 {
				return fmt.Errorf("health_check.http.statuses[%d]: %d is not an HTTP status code", i, s)
			}
		}
	case mesos.HealthCheck_TCP:
		if check.Tcp == nil {
			return errors.New("health_check.tcp: expected for a TCP health check")
		}
		if err := validatePort("health_check.tcp.port", check.GetTcp().Port); err != nil {
			return err
		}
	default:
		return fmt.Errorf("health_check.type: %s is not a valid health check type", check.GetType())
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{
		{"delay_seconds", check.DelaySeconds},
		{"interval_seconds", check.IntervalSeconds},
		{"timeout_seconds", check.TimeoutSeconds},
		{"grace_period_seconds", check.GracePeriodSeconds},
	} {
		if f.v == nil {
			continue
		}
		if v := *f.v; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("health_check.%s: %v must be a non-negative number", f.name, v)
		}
		// Durations beyond ~292 years overflow time.Duration.
		if *f.v > maxSeconds {
			return fmt.Errorf("health_check.%s: %v is too large", f.name, *f.v)
		}
	}
	return nil
}

// maxSeconds keeps every duration representable as a time.Duration.
const maxSeconds = float64(math.MaxInt64/int64(1e9)) - 1

func validatePort(field string, port *uint32) error {
	if port == nil {
		return fmt.Errorf("%s: must be set", field)
	}
	if *port == 0 || *port > 65535 {
		return fmt.Errorf("%s: %d is not a TCP port", field, *port)
	}
	return nil
}
