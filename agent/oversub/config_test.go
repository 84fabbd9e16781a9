package oversub

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// Seed (oversubscription, "Configuring oversubscription"): the interval
// flag defaults to 15secs and qos_correction_interval_min to 0ns.
func TestConfigDefaultsAreMesos(t *testing.T) {
	c := mustValidate(t, Config{})
	if c.ResourceEstimator != "noop" || c.QoSController != "noop" {
		t.Errorf("defaults: estimator %q controller %q, want noop/noop", c.ResourceEstimator, c.QoSController)
	}
	if c.OversubscribedResourcesInterval != 15*time.Second {
		t.Errorf("interval %v, want 15s", c.OversubscribedResourcesInterval)
	}
	if c.QoSCorrectionIntervalMin != 0 {
		t.Errorf("correction interval %v, want 0", c.QoSCorrectionIntervalMin)
	}
	if c.RevocableCPULowPriority == nil || !*c.RevocableCPULowPriority {
		t.Error("revocable_cpu_low_priority should default to true")
	}
	if c.SlackMargin != DefaultSlackMargin || c.SlackWindow != DefaultSlackWindow ||
		strings.Join(c.SlackResources, ",") != "cpus" || c.ThrottleRatio != DefaultThrottleRatio {
		t.Errorf("slack/interference defaults: %+v", c)
	}
	if c.LoadAverage == nil {
		t.Error("LoadAverage reader not defaulted")
	}
}

func TestConfigErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown estimator", Config{ResourceEstimator: "magic"}, "--resource_estimator"},
		{"unknown controller", Config{QoSController: "magic"}, "--qos_controller"},
		{"negative interval", Config{OversubscribedResourcesInterval: -time.Second}, "--oversubscribed_resources_interval"},
		{"negative correction interval", Config{QoSCorrectionIntervalMin: -1}, "--qos_correction_interval_min"},
		{"fixed without resources", Config{ResourceEstimator: "fixed"}, "--fixed_resource_estimator_resources is required"},
		{"fixed bad syntax", Config{ResourceEstimator: "fixed", FixedResources: "cpus:abc"}, "--fixed_resource_estimator_resources"},
		{"fixed reserved", Config{ResourceEstimator: "fixed", FixedResources: "cpus(web):2"}, "reserved"},
		{"load without thresholds", Config{QoSController: "load"}, "needs --load_qos_controller_threshold_5min"},
		{"negative threshold", Config{QoSController: "load", LoadThreshold5Min: f64(-1)}, "--load_qos_controller_threshold_5min"},
		{"margin too big", Config{SlackMargin: 1}, "--slack_estimator_margin"},
		{"negative window", Config{SlackWindow: -time.Second}, "--slack_estimator_window"},
		{"unknown slack resource", Config{SlackResources: []string{"gpus"}}, "--slack_estimator_resources"},
		{"duplicate slack resource", Config{SlackResources: []string{"cpus", "cpus"}}, "twice"},
		{"throttle ratio", Config{ThrottleRatio: 2}, "--interference_qos_controller_throttle_ratio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if _, err := NewEstimator(tc.cfg, &script{}); err == nil {
				t.Error("NewEstimator accepted a bad config")
			}
		})
	}
}

// Seed (oversubscription): the fixed estimator and the load controller are
// enabled by Mesos's module names; those names keep working.
func TestMesosModuleNamesAreAliases(t *testing.T) {
	c := mustValidate(t, Config{ResourceEstimator: "org_apache_mesos_FixedResourceEstimator", FixedResources: "cpus:14",
		QoSController: "org_apache_mesos_LoadQoSController", LoadThreshold5Min: f64(6), LoadThreshold15Min: f64(4)})
	e, err := NewEstimator(c, &script{})
	if _, ok := e.(*fixedEstimator); err != nil || !ok {
		t.Errorf("estimator %T, %v; want the fixed estimator", e, err)
	}
	q, err := NewController(c, &script{})
	if _, ok := q.(*loadController); err != nil || !ok {
		t.Errorf("controller %T, %v; want the load controller", q, err)
	}
}

func TestRegisterFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	err := fs.Parse([]string{
		"--resource_estimator=slack", "--qos_controller=load",
		"--oversubscribed_resources_interval=30secs", "--qos_correction_interval_min=20secs",
		"--revocable_cpu_low_priority=false", "--load_qos_controller_threshold_5min=6",
		"--slack_estimator_margin=0.2", "--slack_estimator_window=2mins",
		"--slack_estimator_resources=cpus, mem",
	})
	if err != nil {
		t.Fatal(err)
	}
	c = mustValidate(t, c)
	if c.ResourceEstimator != "slack" || c.QoSController != "load" ||
		c.OversubscribedResourcesInterval != 30*time.Second || c.QoSCorrectionIntervalMin != 20*time.Second ||
		*c.RevocableCPULowPriority || c.LoadThreshold5Min == nil || *c.LoadThreshold5Min != 6 ||
		c.LoadThreshold15Min != nil || c.SlackMargin != 0.2 || c.SlackWindow != 2*time.Minute ||
		strings.Join(c.SlackResources, ",") != "cpus,mem" {
		t.Errorf("parsed config: %+v", c)
	}
	// Unset flags keep Mesos's defaults.
	var d Config
	fs = flag.NewFlagSet("agent", flag.ContinueOnError)
	d.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	d = mustValidate(t, d)
	if d.OversubscribedResourcesInterval != 15*time.Second || !*d.RevocableCPULowPriority || d.ResourceEstimator != "noop" {
		t.Errorf("flag defaults: %+v", d)
	}
	for _, bad := range []string{"--qos_correction_interval_min=-1secs", "--oversubscribed_resources_interval=soon", "--load_qos_controller_threshold_15min=high"} {
		var e Config
		fs = flag.NewFlagSet("agent", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		e.RegisterFlags(fs)
		if err := fs.Parse([]string{bad}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
