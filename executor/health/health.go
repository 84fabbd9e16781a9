// Package health runs a task's Mesos health check (TaskInfo.health_check:
// COMMAND, HTTP or TCP) for mezzo's built-in executors (executor/command and
// executor/group), with Mesos's semantics:
//
//   - the first check runs delay_seconds after Start, each next one
//     interval_seconds after the previous one ended; each is bounded by
//     timeout_seconds (0 means no bound);
//   - until the first success, failures within grace_period_seconds of the
//     task's launch are ignored;
//   - a Result is reported on every counted failure (unhealthy, with the
//     count of consecutive failures, and KillTask once that count reaches
//     consecutive_failures) and on the first success and the first success
//     after failures (healthy); other successes are silent;
//   - COMMAND passes on exit status 0 (run with the task's environment in
//     the sandbox), HTTP on a response status in 200-399 (or in `statuses`
//     when given) from GET scheme://127.0.0.1:port/path, TCP on an
//     established connection to 127.0.0.1:port.
//
// Executors turn Results into TASK_RUNNING updates with `healthy` set and
// reason REASON_TASK_HEALTH_CHECK_STATUS_UPDATED, and kill the task when
// KillTask is set. Delay, interval and grace period use the injected clock;
// the checks themselves are real I/O bounded by real time.
package health

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	mesos "mezzo/api/mesos"
	"mezzo/internal/clock"
)

// Options are the environment a Checker runs in.
type Options struct {
	// Clock times the delay, the intervals and the grace period; nil is
	// clock.Real.
	Clock clock.Clock
	// Env is the base environment ("K=V") of COMMAND checks: the task's
	// environment. The check command's own environment overrides it. nil
	// means the executor's environment.
	Env []string
	// Dir is the working directory of COMMAND checks (the sandbox).
	Dir string
	// Output receives the stdout and stderr of COMMAND checks; nil discards
	// them. Mesos sends them to the executor's stderr.
	Output io.Writer
	// LaunchTime is when the task was launched: the grace period counts
	// from it. The zero time means the moment New is called.
	LaunchTime time.Time
}

// Result is one health report.
type Result struct {
	Healthy bool
	// ConsecutiveFailures counts the failures in a row, this one included
	// (0 when Healthy).
	ConsecutiveFailures int
	// KillTask is set once ConsecutiveFailures reaches consecutive_failures:
	// the executor should kill the task.
	KillTask bool
	// Message says why the check failed ("" when Healthy).
	Message string
}

// Checker runs one health check periodically. Create it with New, run it
// with Start and end it with Stop.
type Checker struct {
	check       *mesos.HealthCheck
	clk         clock.Clock
	launch      time.Time
	delay       time.Duration
	interval    time.Duration
	timeout     time.Duration // 0: unbounded
	grace       time.Duration
	maxFailures int
	probe       func(ctx context.Context) error

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}

	// Owned by the checking goroutine.
	initializing bool
	failures     int
}

// New validates check and prepares a Checker for it. Unset fields take the
// proto defaults (delay 15s, interval 10s, timeout 20s, 3 consecutive
// failures, grace period 10s).
func New(check *mesos.HealthCheck, opts Options) (*Checker, error) {
	if err := Validate(check); err != nil {
		return nil, err
	}
	check = proto.Clone(check).(*mesos.HealthCheck) // the caller keeps its message
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.LaunchTime.IsZero() {
		opts.LaunchTime = opts.Clock.Now()
	}
	c := &Checker{
		check:        check,
		clk:          opts.Clock,
		launch:       opts.LaunchTime,
		delay:        seconds(check.GetDelaySeconds()),
		interval:     seconds(check.GetIntervalSeconds()),
		timeout:      seconds(check.GetTimeoutSeconds()),
		grace:        seconds(check.GetGracePeriodSeconds()),
		maxFailures:  int(check.GetConsecutiveFailures()),
		done:         make(chan struct{}),
		initializing: true,
	}
	switch check.GetType() {
	case mesos.HealthCheck_COMMAND:
		env := opts.Env
		if env == nil {
			env = os.Environ()
		}
		spec, err := newCommandSpec(check.GetCommand(), env, opts.Dir, opts.Output)
		if err != nil {
			return nil, err
		}
		c.probe = func(ctx context.Context) error { return probeCommand(ctx, spec) }
	case mesos.HealthCheck_HTTP:
		client := newHTTPClient()
		h := check.GetHttp()
		c.probe = func(ctx context.Context) error { return probeHTTP(ctx, client, h) }
	case mesos.HealthCheck_TCP:
		t := check.GetTcp()
		c.probe = func(ctx context.Context) error { return probeTCP(ctx, t) }
	}
	return c, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Start begins checking in a goroutine; onResult is called from that
// goroutine, one call at a time. It must not block for long: executors post
// the Result to their event loop. Start does nothing after the first call
// or after Stop. Checking ends when ctx is done or Stop is called.
func (c *Checker) Start(ctx context.Context, onResult func(Result)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.stopped {
		return
	}
	c.started = true
	ctx, c.cancel = context.WithCancel(ctx)
	go c.run(ctx, onResult)
}

// Stop ends checking and aborts a check in progress (killing a COMMAND
// check's processes). It does not wait, so it is safe to call from onResult
// or while holding locks onResult needs; a Result being delivered as Stop
// is called may still arrive, so executors ignore Results for tasks they are
// already killing (as Mesos's do). Done reports when the goroutine is gone.
func (c *Checker) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	} else if !c.started {
		c.started = true
		close(c.done)
	}
}

// Done is closed once checking has ended after Stop or the end of Start's
// context (or at Stop when the Checker never started).
func (c *Checker) Done() <-chan struct{} { return c.done }

func (c *Checker) run(ctx context.Context, onResult func(Result)) {
	defer close(c.done)
	timer := c.clk.NewTimer(c.delay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		err := c.runOnce(ctx)
		if ctx.Err() != nil {
			return // stopped mid-check: the result means nothing
		}
		res, report := c.record(err)
		// Arm the next check before reporting, so the interval counts from
		// the end of this check and a test driving a fake clock can advance
		// it as soon as it sees the Result.
		timer.Reset(c.interval)
		if report {
			onResult(res)
		}
	}
}

// runOnce performs one check bounded by the timeout.
func (c *Checker) runOnce(ctx context.Context) error {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithValue(ctx, timeoutKey{}, c.timeout), c.timeout)
		defer cancel()
	}
	return c.probe(ctx)
}

// record folds one check outcome into the state and says what to report.
func (c *Checker) record(err error) (Result, bool) {
	if err == nil {
		report := c.initializing || c.failures > 0
		c.initializing = false
		c.failures = 0
		return Result{Healthy: true}, report
	}
	if c.initializing && c.grace > 0 && c.clk.Now().Sub(c.launch) <= c.grace {
		return Result{}, false // still in the grace period
	}
	c.failures++
	return Result{
		ConsecutiveFailures: c.failures,
		KillTask:            c.failures >= c.maxFailures,
		Message:             c.check.GetType().String() + " health check failed: " + err.Error(),
	}, true
}
