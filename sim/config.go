package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/resources"
)

// Defaults, as the real agent (and Mesos) uses them where a counterpart
// exists.
const (
	// DefaultResources is what an emulated agent offers unless told.
	DefaultResources = "cpus:8;mem:16384;disk:102400;ports:[31000-32000]"
	// DefaultPort is the port advertised in AgentInfo (Mesos's 5051).
	DefaultPort = 5051
	// DefaultRegistrationBackoff is the first reconnect delay bound
	// (--registration_backoff_factor, 1 s); it doubles up to
	// DefaultMaxRegistrationBackoff (1 min).
	DefaultRegistrationBackoff    = time.Second
	DefaultMaxRegistrationBackoff = time.Minute
	// DefaultStatusRetry is how long an unacknowledged status update waits
	// before it is sent again (Mesos's STATUS_UPDATE_RETRY_INTERVAL_MIN);
	// the wait doubles with each retry up to MaxStatusRetry (Mesos's
	// STATUS_UPDATE_RETRY_INTERVAL_MAX).
	DefaultStatusRetry = 10 * time.Second
	// MaxStatusRetry bounds the doubling of an update's retry interval
	// (Mesos's STATUS_UPDATE_RETRY_INTERVAL_MAX).
	MaxStatusRetry = 10 * time.Minute
	// DefaultPingInterval and DefaultMaxMissed apply when SUBSCRIBED does
	// not say (--agent_ping_timeout 15 s, --max_agent_ping_timeouts 5).
	DefaultPingInterval = 15 * time.Second
	DefaultMaxMissed    = 5
	// Never as a task duration: the fake task runs until killed.
	Never time.Duration = -1
	// DurationLabel on a TaskInfo overrides the agent's task duration
	// ("500ms", "2s", "never").
	DurationLabel = "sim_duration"
	// DurationEnv in a task's command environment does the same, for
	// frameworks that set environment variables but not labels (`mezzo
	// run --env SIM_DURATION=2s`).
	DurationEnv = "SIM_DURATION"
	// Version is reported as the agents' version.
	Version = "sim"
)

// AgentConfig configures an emulated agent (or, in FleetConfig, every
// agent of a fleet). Only Masters is required.
type AgentConfig struct {
	// Masters are the masters' "host:port" addresses; any will do, the
	// agent follows 307 redirects to the leader and tries the next one
	// when a master is unreachable.
	Masters []string
	// Hostname is advertised in AgentInfo; default "sim-<n>" where n is
	// the agent's index in its fleet (0 for a lone agent).
	Hostname string
	// Port is advertised in AgentInfo (default 5051). Nothing listens
	// there: the endpoint exists for /master/slaves only.
	Port int32
	// Resources, in Mesos text form (default DefaultResources).
	Resources string
	// Attributes are advertised as text attributes, name → value.
	Attributes map[string]string
	// Oversubscribed, in Mesos text form, is a fixed revocable estimate
	// (as the real agent's `fixed` resource estimator gives): after every
	// registration the agent sends it in UPDATE_RESOURCES, every resource
	// marked revocable, so the master's revocable stage offers it to
	// frameworks with the REVOCABLE_RESOURCES capability. Empty: none.
	Oversubscribed string
	// TaskDuration is how long a fake task runs between TASK_RUNNING and
	// TASK_FINISHED; Never (or any negative value) runs it until killed.
	// Zero finishes it as soon as TASK_RUNNING is acknowledged.
	TaskDuration time.Duration
	// StatusRetry is the first resend interval of an unacknowledged
	// update (default 10 s); each further resend of the same update waits
	// twice as long, up to MaxStatusRetry.
	StatusRetry time.Duration
	// RegistrationBackoff and MaxRegistrationBackoff bound the random
	// delay before a reconnection attempt (defaults 1 s and 1 min).
	RegistrationBackoff, MaxRegistrationBackoff time.Duration
	// Clock drives task durations, retries, backoff and the master
	// liveness check (default clock.Real).
	Clock clock.Clock
	// Logger receives connection-level diagnostics (default: discarded).
	Logger *slog.Logger
	// Dial overrides the TCP dialer (tests count connections with it).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// normalize fills defaults and validates. It parses the resources once
// so that every agent of a fleet shares the same (read-only) protos.
func (c AgentConfig) normalize() (AgentConfig, []*mesos.Resource, error) {
	if _, err := c.oversubscribed(); err != nil {
		return c, nil, err
	}
	var ms []string
	for _, m := range c.Masters {
		m = strings.TrimSpace(m)
		m = strings.TrimPrefix(strings.TrimPrefix(m, "http://"), "//")
		m = strings.TrimSuffix(m, "/")
		if m == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(m); err != nil {
			return c, nil, fmt.Errorf("sim: invalid master address %q in 'Masters': %v", m, err)
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return c, nil, errors.New("sim: 'Masters' must name at least one master")
	}
	c.Masters = ms
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, nil, fmt.Errorf("sim: invalid 'Port' %d", c.Port)
	}
	if c.Resources == "" {
		c.Resources = DefaultResources
	}
	rs, err := resources.Parse(c.Resources, "*")
	if err != nil {
		return c, nil, fmt.Errorf("sim: invalid 'Resources': %w", err)
	}
	if c.StatusRetry <= 0 {
		c.StatusRetry = DefaultStatusRetry
	}
	if c.RegistrationBackoff <= 0 {
		c.RegistrationBackoff = DefaultRegistrationBackoff
	}
	if c.MaxRegistrationBackoff < c.RegistrationBackoff {
		c.MaxRegistrationBackoff = max(DefaultMaxRegistrationBackoff, c.RegistrationBackoff)
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, rs.Proto(), nil
}

// oversubscribed parses Oversubscribed into revocable resource protos
// (nil when empty).
func (c AgentConfig) oversubscribed() ([]*mesos.Resource, error) {
	if strings.TrimSpace(c.Oversubscribed) == "" {
		return nil, nil
	}
	rs, err := resources.Parse(c.Oversubscribed, "*")
	if err != nil {
		return nil, fmt.Errorf("sim: invalid 'Oversubscribed': %w", err)
	}
	if !rs.Reserved().IsEmpty() {
		return nil, fmt.Errorf("sim: 'Oversubscribed' %q must not be reserved: revocable estimates are unreserved", c.Oversubscribed)
	}
	out := rs.Proto()
	for _, r := range out {
		r.Revocable = &mesos.Resource_RevocableInfo{}
	}
	return out, nil
}

// attributes renders Attributes as AgentInfo attributes (TEXT), sorted by
// name for a stable AgentInfo.
func (c AgentConfig) attributes() []*mesos.Attribute { return textAttributes(c.Attributes) }

// textAttributes renders name → value as TEXT attributes, sorted by name.
func textAttributes(attrs map[string]string) []*mesos.Attribute {
	if len(attrs) == 0 {
		return nil
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*mesos.Attribute, 0, len(names))
	for _, n := range names {
		v := attrs[n]
		out = append(out, &mesos.Attribute{
			Name: &n,
			Type: mesos.Value_TEXT.Enum(),
			Text: &mesos.Value_Text{Value: &v},
		})
	}
	return out
}
