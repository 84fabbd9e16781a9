// Package loop is the event loop the frameworks shipped with mezzo (batch,
// gang, elastic) run their schedulers in, on the scheduler SDK. It owns
// the subscription and the one goroutine; a framework supplies a Handler
// whose methods that goroutine calls, so the framework's state needs no
// locks of its own and its decisions can be tested without a master.
//
// Operating manual:
//
//  1. New(Config, capabilities) with the masters, name, role and user
//     (Config.Normalize fills defaults); the Loop's Client is the SDK
//     client the handler calls (Launch, Decline, …).
//  2. Build the handler around l.Client, then Run(ctx, handler). Run
//     subscribes and, on its goroutine only:
//     - passes every event to Handler.Event (SUBSCRIBED, OFFERS, UPDATE,
//     RESCIND, FAILURE, …) with the injected clock's now;
//     - acknowledges every status update that carries a uuid, after the
//     handler saw it (Mesos: acknowledge once the update is handled);
//     - after a re-subscription (a master failover) asks the master to
//     reconcile every task, since updates sent meanwhile may be lost;
//     - calls Handler.Wake when the time Handler.Next returned passes.
//  3. Run returns when Handler.Done says the work is over (after tearing
//     the framework down, which ends its tasks), when ctx ends (without a
//     teardown: a stopped scheduler's framework lives on for its failover
//     timeout), or when the master ends the subscription for good.
package loop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/user"
	"strings"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/scheduler"
)

// Handler is a framework's scheduler logic. The loop calls its methods
// from one goroutine, one at a time.
type Handler interface {
	// Event handles one event from the master.
	Event(ctx context.Context, ev *schedulerpb.Event, now time.Time)
	// Next is when the handler next wants Wake (zero: no timer). The loop
	// asks after every call into the handler.
	Next() time.Time
	// Wake is called once the time Next returned has come.
	Wake(ctx context.Context, now time.Time)
	// Done reports that the framework's work is over: Run tears it down
	// and returns.
	Done() bool
}

// Config is the subscription part of every shipped framework's
// configuration (they embed it). Masters is required.
type Config struct {
	// Masters are "host:port" addresses; any will do.
	Masters []string
	// Name of the framework (default: the framework's own, e.g.
	// "mezzo-batch").
	Name string
	// Role to subscribe in (default "*": none).
	Role string
	// User the tasks run as (default: the current user).
	User string
	// FailoverTimeout keeps the framework (and its tasks) registered
	// this long after its scheduler disconnects (default 0: Mesos's, the
	// framework ends at once).
	FailoverTimeout time.Duration
	// HTTPClient sends the framework's requests (default: the SDK's).
	HTTPClient *http.Client
	// Clock drives Wake and the SDK's timers (default clock.Real).
	Clock clock.Clock
	// Logf receives diagnostics (default: discarded).
	Logf func(format string, args ...any)
}

// Normalize validates c and fills its defaults, name being the
// framework's default name.
func (c Config) Normalize(name string) (Config, error) {
	var ms []string
	for _, m := range c.Masters {
		if m = strings.TrimSpace(m); m != "" {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return c, errors.New("no master address given")
	}
	c.Masters = ms
	if c.Name == "" {
		c.Name = name
	}
	if c.Role == "" {
		c.Role = "*"
	}
	if c.User == "" {
		c.User = CurrentUser()
	}
	if c.FailoverTimeout < 0 {
		return c, errors.New("the failover timeout must not be negative")
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c, nil
}

// CurrentUser is the user this process runs as ("root" if unknown).
func CurrentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "root"
}

// Loop is one framework's subscription and event loop.
type Loop struct {
	// Client is the SDK client: the handler makes its calls through it.
	Client *scheduler.Client
	cfg    Config
}

// teardownTimeout bounds the TEARDOWN sent when the work is over.
const teardownTimeout = 10 * time.Second

// New returns a Loop for a normalized cfg (Config.Normalize), subscribing
// with capability RESERVATION_REFINEMENT (offers in the reservations[]
// format) and caps; Run subscribes.
func New(cfg Config, caps ...mesos.FrameworkInfo_Capability_Type) *Loop {
	c := scheduler.New(scheduler.Config{
		Masters:    cfg.Masters,
		Framework:  frameworkInfo(cfg, caps),
		HTTPClient: cfg.HTTPClient,
		Clock:      cfg.Clock,
		Logf:       cfg.Logf,
		MinBackoff: 100 * time.Millisecond,
	})
	return &Loop{Client: c, cfg: cfg}
}

// Run subscribes and runs h until its work is done, ctx ends, or the
// master ends the subscription; see the package comment.
func (l *Loop) Run(ctx context.Context, h Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := l.Client.Subscribe(ctx)
	if err != nil {
		return fmt.Errorf("cannot subscribe to %s: %w", strings.Join(l.cfg.Masters, ","), err)
	}
	clk := l.cfg.Clock
	timer := clk.NewTimer(time.Hour)
	timer.Stop()
	var armed time.Time
	subscribed := false
	for {
		if h.Done() {
			return l.teardown()
		}
		// Re-arm the timer when the handler's next wake-up moved.
		if next := h.Next(); !next.Equal(armed) {
			timer.Stop()
			armed = next
			if !next.IsZero() {
				timer.Reset(max(next.Sub(clk.Now()), 0))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C():
			armed = time.Time{}
			h.Wake(ctx, clk.Now())
		case ev, ok := <-events:
			if !ok {
				err := l.Client.Err()
				if errors.Is(err, context.Canceled) && ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("lost the subscription: %w", err)
			}
			again := ev.GetType() == schedulerpb.Event_SUBSCRIBED && subscribed
			if ev.GetType() == schedulerpb.Event_SUBSCRIBED {
				subscribed = true
			}
			h.Event(ctx, ev, clk.Now())
			if again {
				if err := l.Client.Reconcile(ctx, nil); err != nil {
					l.cfg.Logf("reconciling after re-subscribing: %v", err)
				}
			}
			if st := ev.GetUpdate().GetStatus(); st != nil && len(st.GetUuid()) > 0 {
				if err := l.Client.Acknowledge(ctx, st); err != nil {
					l.cfg.Logf("acknowledging %s: %v", st.GetTaskId().GetValue(), err)
				}
			}
		}
	}
}

// teardown removes the framework once its work is over.
func (l *Loop) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	defer cancel()
	if err := l.Client.Teardown(ctx); err != nil && !errors.Is(err, scheduler.ErrNotSubscribed) {
		return fmt.Errorf("tearing the framework down: %w", err)
	}
	return nil
}

// frameworkInfo is what the framework subscribes with.
func frameworkInfo(c Config, caps []mesos.FrameworkInfo_Capability_Type) *mesos.FrameworkInfo {
	fi := &mesos.FrameworkInfo{User: &c.User, Name: &c.Name}
	if c.Role != "*" {
		fi.Role = &c.Role
	}
	if c.FailoverTimeout > 0 {
		secs := c.FailoverTimeout.Seconds()
		fi.FailoverTimeout = &secs
	}
	for _, t := range append([]mesos.FrameworkInfo_Capability_Type{mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT}, caps...) {
		fi.Capabilities = append(fi.Capabilities, &mesos.FrameworkInfo_Capability{Type: t.Enum()})
	}
	return fi
}
