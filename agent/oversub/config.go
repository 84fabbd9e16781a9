package oversub

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"mezzo/internal/stout"
	"mezzo/resources"
)

// Defaults, as in Mesos where Mesos has the setting.
const (
	// DefaultOversubscribedResourcesInterval is Mesos's
	// --oversubscribed_resources_interval default.
	DefaultOversubscribedResourcesInterval = 15 * time.Second
	// DefaultQoSCorrectionIntervalMin is Mesos's --qos_correction_interval_min
	// default: corrections are polled again as soon as the last ones are
	// carried out.
	DefaultQoSCorrectionIntervalMin = 0
	// DefaultSlackMargin is the share of each regular container's allocation
	// that the slack estimator never lends (ours; Mesos has no slack
	// estimator).
	DefaultSlackMargin = 0.1
	// DefaultSlackWindow is the time constant of the slack estimator's
	// smoothing: a drop in usage takes about this long to become slack.
	DefaultSlackWindow = time.Minute
	// DefaultThrottleRatio is the share of CFS periods in which a regular
	// container must have been throttled, between two looks, for the
	// interference controller to treat it as wanting its whole allocation.
	DefaultThrottleRatio = 0.05
)

// Config holds the agent's oversubscription flags. The zero value, after
// Validate, is Mesos's default: no estimate and no corrections.
type Config struct {
	// ResourceEstimator names the estimator (--resource_estimator): "noop"
	// (default), "fixed" or "slack"; Mesos's module name
	// org_apache_mesos_FixedResourceEstimator is accepted for "fixed".
	ResourceEstimator string
	// QoSController names the controller (--qos_controller): "noop"
	// (default), "load" or "interference"; Mesos's module name
	// org_apache_mesos_LoadQoSController is accepted for "load".
	QoSController string
	// OversubscribedResourcesInterval is how often the agent sends its
	// estimate to the master (--oversubscribed_resources_interval, 15secs).
	OversubscribedResourcesInterval time.Duration
	// QoSCorrectionIntervalMin is the least time between two rounds of QoS
	// corrections (--qos_correction_interval_min, 0ns). Zero is a real
	// value here, so Validate only rejects a negative one.
	QoSCorrectionIntervalMin time.Duration
	// RevocableCPULowPriority gives revocable containers the least CPU
	// shares so a regular container always wins the CPU
	// (--revocable_cpu_low_priority). Nil means Mesos's default, true. The
	// cgroups cpu isolator applies it, not this package.
	RevocableCPULowPriority *bool

	// FixedResources is what the fixed estimator offers, in --resources
	// syntax, e.g. "cpus:14" (--fixed_resource_estimator_resources; Mesos's
	// module parameter "resources"). Required by the fixed estimator.
	// Unreserved only: revocable resources cannot be reserved.
	FixedResources string
	// LoadThreshold5Min and LoadThreshold15Min are the load controller's
	// thresholds (--load_qos_controller_threshold_5min / _15min; Mesos's
	// module parameters load_threshold_5min / load_threshold_15min). Nil
	// means unset; the load controller needs at least one, as in Mesos.
	LoadThreshold5Min  *float64
	LoadThreshold15Min *float64
	// LoadAverage reads the system's load averages; nil means
	// ReadLoadAverage (/proc/loadavg). Tests inject a fake.
	LoadAverage func() (LoadAverage, error)

	// SlackMargin is the share, in (0, 1), of each regular container's
	// allocation that the slack estimator keeps back
	// (--slack_estimator_margin). Zero means DefaultSlackMargin.
	SlackMargin float64
	// SlackWindow is the slack estimator's smoothing time constant
	// (--slack_estimator_window). Zero means DefaultSlackWindow.
	SlackWindow time.Duration
	// SlackResources names what the slack estimator may lend
	// (--slack_estimator_resources, comma-separated). Empty means "cpus":
	// only compressible resources are lent unless the operator asks for
	// "mem" or "disk" too.
	SlackResources []string

	// ThrottleRatio is the interference controller's throttling threshold
	// (--interference_qos_controller_throttle_ratio), in (0, 1]. Zero means
	// DefaultThrottleRatio.
	ThrottleRatio float64

	// fixed is FixedResources parsed and made revocable by Validate.
	fixed resources.Resources
}

// slackable are the resources the slack estimator knows how to measure.
var slackable = map[string]bool{"cpus": true, "mem": true, "disk": true}

// Validate fills the defaults and checks every field, naming the flag of
// the first bad one. It must be called before NewEstimator/NewController
// (they call it themselves on their copy).
func (c *Config) Validate() error {
	if c.ResourceEstimator == "" {
		c.ResourceEstimator = "noop"
	}
	if c.QoSController == "" {
		c.QoSController = "noop"
	}
	if _, ok := lookupEstimator(c.ResourceEstimator); !ok {
		return fmt.Errorf("--resource_estimator: unknown estimator %q (known: %s)",
			c.ResourceEstimator, strings.Join(EstimatorNames(), ", "))
	}
	if _, ok := lookupController(c.QoSController); !ok {
		return fmt.Errorf("--qos_controller: unknown controller %q (known: %s)",
			c.QoSController, strings.Join(ControllerNames(), ", "))
	}
	if c.OversubscribedResourcesInterval == 0 {
		c.OversubscribedResourcesInterval = DefaultOversubscribedResourcesInterval
	}
	if c.OversubscribedResourcesInterval < 0 {
		return errors.New("--oversubscribed_resources_interval must be positive")
	}
	if c.QoSCorrectionIntervalMin < 0 {
		return errors.New("--qos_correction_interval_min must not be negative")
	}
	if c.RevocableCPULowPriority == nil {
		t := true
		c.RevocableCPULowPriority = &t
	}
	if err := c.validateFixed(); err != nil {
		return err
	}
	if err := c.validateLoad(); err != nil {
		return err
	}
	if err := c.validateSlack(); err != nil {
		return err
	}
	if c.ThrottleRatio == 0 {
		c.ThrottleRatio = DefaultThrottleRatio
	}
	if !(c.ThrottleRatio > 0 && c.ThrottleRatio <= 1) {
		return fmt.Errorf("--interference_qos_controller_throttle_ratio %v must be in (0, 1]", c.ThrottleRatio)
	}
	return nil
}

func (c *Config) validateFixed() error {
	c.fixed = resources.Resources{}
	if c.FixedResources == "" {
		if canonicalEstimator(c.ResourceEstimator) == "fixed" {
			return errors.New("--fixed_resource_estimator_resources is required by the fixed estimator")
		}
		return nil
	}
	r, err := resources.Parse(c.FixedResources, "*")
	if err != nil {
		return fmt.Errorf("--fixed_resource_estimator_resources: %w", err)
	}
	if !r.Reserved().IsEmpty() {
		return fmt.Errorf("--fixed_resource_estimator_resources: %s is reserved; revocable resources must be unreserved", r.Reserved())
	}
	c.fixed, err = makeRevocable(r)
	if err != nil {
		return fmt.Errorf("--fixed_resource_estimator_resources: %w", err)
	}
	return nil
}

func (c *Config) validateLoad() error {
	for _, t := range []struct {
		flag string
		v    *float64
	}{{"--load_qos_controller_threshold_5min", c.LoadThreshold5Min}, {"--load_qos_controller_threshold_15min", c.LoadThreshold15Min}} {
		if t.v != nil && !(*t.v >= 0) {
			return fmt.Errorf("%s %v must not be negative", t.flag, *t.v)
		}
	}
	if canonicalController(c.QoSController) == "load" && c.LoadThreshold5Min == nil && c.LoadThreshold15Min == nil {
		return errors.New("the load controller needs --load_qos_controller_threshold_5min or --load_qos_controller_threshold_15min")
	}
	if c.LoadAverage == nil {
		c.LoadAverage = ReadLoadAverage
	}
	return nil
}

func (c *Config) validateSlack() error {
	if c.SlackMargin == 0 {
		c.SlackMargin = DefaultSlackMargin
	}
	if !(c.SlackMargin > 0 && c.SlackMargin < 1) {
		return fmt.Errorf("--slack_estimator_margin %v must be in (0, 1)", c.SlackMargin)
	}
	if c.SlackWindow == 0 {
		c.SlackWindow = DefaultSlackWindow
	}
	if c.SlackWindow < 0 {
		return errors.New("--slack_estimator_window must be positive")
	}
	if len(c.SlackResources) == 0 {
		c.SlackResources = []string{"cpus"}
	}
	seen := map[string]bool{}
	for _, n := range c.SlackResources {
		if !slackable[n] {
			return fmt.Errorf("--slack_estimator_resources: %q is not one of cpus, mem, disk", n)
		}
		if seen[n] {
			return fmt.Errorf("--slack_estimator_resources: %q is listed twice", n)
		}
		seen[n] = true
	}
	return nil
}

// RegisterFlags defines the oversubscription flags on fs with Mesos's names,
// storing into c. Call Validate after fs.Parse.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.ResourceEstimator, "resource_estimator", "noop",
		"resource estimator for oversubscription: noop, fixed or slack")
	fs.StringVar(&c.QoSController, "qos_controller", "noop",
		"QoS controller for oversubscription: noop, load or interference")
	c.OversubscribedResourcesInterval = DefaultOversubscribedResourcesInterval
	fs.Var(durationFlag{&c.OversubscribedResourcesInterval}, "oversubscribed_resources_interval",
		"how often the agent sends its oversubscribed resources estimate to the master")
	fs.Var(durationFlag{&c.QoSCorrectionIntervalMin}, "qos_correction_interval_min",
		"least time between two rounds of QoS corrections")
	t := true
	c.RevocableCPULowPriority = &t
	fs.BoolVar(c.RevocableCPULowPriority, "revocable_cpu_low_priority", true,
		"run containers with revocable cpus at a lower priority than regular ones")
	fs.StringVar(&c.FixedResources, "fixed_resource_estimator_resources", "",
		"resources the fixed estimator offers as revocable, e.g. cpus:14")
	fs.Var(optFloatFlag{&c.LoadThreshold5Min}, "load_qos_controller_threshold_5min",
		"load controller: evict revocable containers when the 5-minute load average exceeds this")
	fs.Var(optFloatFlag{&c.LoadThreshold15Min}, "load_qos_controller_threshold_15min",
		"load controller: evict revocable containers when the 15-minute load average exceeds this")
	c.SlackMargin = DefaultSlackMargin
	fs.Float64Var(&c.SlackMargin, "slack_estimator_margin", DefaultSlackMargin,
		"slack estimator: share of each regular container's allocation never lent, in (0, 1)")
	c.SlackWindow = DefaultSlackWindow
	fs.Var(durationFlag{&c.SlackWindow}, "slack_estimator_window",
		"slack estimator: smoothing time constant of measured usage")
	c.SlackResources = []string{"cpus"}
	fs.Var(listFlag{&c.SlackResources}, "slack_estimator_resources",
		"slack estimator: comma-separated resources it may lend (cpus, mem, disk)")
	c.ThrottleRatio = DefaultThrottleRatio
	fs.Float64Var(&c.ThrottleRatio, "interference_qos_controller_throttle_ratio", DefaultThrottleRatio,
		"interference controller: share of CFS periods throttled that marks a regular container as starved")
}

// durationFlag accepts Mesos durations ("15secs") and Go's ("15s").
type durationFlag struct{ d *time.Duration }

func (v durationFlag) String() string {
	if v.d == nil {
		return ""
	}
	return stout.FormatDuration(*v.d)
}

func (v durationFlag) Set(s string) error {
	d, err := stout.ParseDuration(s)
	if err != nil {
		gd, gerr := time.ParseDuration(s)
		if gerr != nil {
			return fmt.Errorf("invalid duration %q (want e.g. 15secs, 500ms)", s)
		}
		d = gd
	}
	if d < 0 {
		return fmt.Errorf("negative duration %q", s)
	}
	*v.d = d
	return nil
}

// optFloatFlag is a float flag whose absence is distinct from zero.
type optFloatFlag struct{ p **float64 }

func (v optFloatFlag) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.FormatFloat(**v.p, 'g', -1, 64)
}

func (v optFloatFlag) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("invalid number %q", s)
	}
	*v.p = &f
	return nil
}

// listFlag is a comma-separated list.
type listFlag struct{ l *[]string }

func (v listFlag) String() string {
	if v.l == nil {
		return ""
	}
	return strings.Join(*v.l, ",")
}

func (v listFlag) Set(s string) error {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	*v.l = out
	return nil
}
