package executor

import (
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	base := []string{
		"MESOS_FRAMEWORK_ID=fw",
		"MESOS_EXECUTOR_ID=ex",
		"MESOS_AGENT_ENDPOINT=127.0.0.1:5051",
		"MESOS_SANDBOX=/sb",
		"MESOS_DIRECTORY=/host/sb",
	}
	with := func(extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	without := func(key string, extra ...string) []string {
		var out []string
		for _, kv := range base {
			if !strings.HasPrefix(kv, key+"=") {
				out = append(out, kv)
			}
		}
		return append(out, extra...)
	}
	tests := []struct {
		name  string
		env   []string
		err   string
		check func(t *testing.T, c Config)
	}{
		{"defaults", base, "", func(t *testing.T, c Config) {
			if c.AgentURL != "http://127.0.0.1:5051/api/v1/executor" || c.Sandbox != "/sb" || c.Directory != "/host/sb" ||
				c.Checkpoint || c.ShutdownGracePeriod != 5*time.Second || c.FrameworkID != "fw" || c.ExecutorID != "ex" {
				t.Errorf("config %+v", c)
			}
		}},
		{"checkpoint", with("MESOS_CHECKPOINT=1", "MESOS_RECOVERY_TIMEOUT=15mins", "MESOS_SUBSCRIPTION_BACKOFF_MAX=2secs",
			"MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD=2.5mins"), "", func(t *testing.T, c Config) {
			if !c.Checkpoint || c.RecoveryTimeout != 15*time.Minute || c.SubscriptionBackoffMax != 2*time.Second ||
				c.ShutdownGracePeriod != 150*time.Second {
				t.Errorf("config %+v", c)
			}
		}},
		{"sandbox falls back to directory", without("MESOS_SANDBOX"), "", func(t *testing.T, c Config) {
			if c.Sandbox != "/host/sb" {
				t.Errorf("sandbox %q", c.Sandbox)
			}
		}},
		{"slave pid fallback", without("MESOS_AGENT_ENDPOINT", "MESOS_SLAVE_PID=slave(1)@10.0.0.1:5051"), "", func(t *testing.T, c Config) {
			if c.AgentURL != "http://10.0.0.1:5051/slave(1)/api/v1/executor" {
				t.Errorf("url %q", c.AgentURL)
			}
		}},
		{"token stripped from task env", with("MESOS_EXECUTOR_AUTHENTICATION_TOKEN=tok"), "", func(t *testing.T, c Config) {
			if c.AuthToken != "tok" {
				t.Errorf("token %q", c.AuthToken)
			}
			for _, kv := range c.Environ {
				if strings.Contains(kv, "tok") {
					t.Errorf("token left in Environ: %q", kv)
				}
			}
		}},
		{"missing framework", without("MESOS_FRAMEWORK_ID"), "MESOS_FRAMEWORK_ID", nil},
		{"missing executor", without("MESOS_EXECUTOR_ID"), "MESOS_EXECUTOR_ID", nil},
		{"missing endpoint", without("MESOS_AGENT_ENDPOINT"), "MESOS_AGENT_ENDPOINT", nil},
		{"bad endpoint", without("MESOS_AGENT_ENDPOINT", "MESOS_AGENT_ENDPOINT=nohost"), "MESOS_AGENT_ENDPOINT", nil},
		{"missing sandbox", without("MESOS_SANDBOX", "MESOS_DIRECTORY="), "MESOS_SANDBOX", nil},
		{"bad checkpoint", with("MESOS_CHECKPOINT=yes"), "MESOS_CHECKPOINT", nil},
		{"checkpoint needs recovery timeout", with("MESOS_CHECKPOINT=1", "MESOS_SUBSCRIPTION_BACKOFF_MAX=2secs"), "MESOS_RECOVERY_TIMEOUT", nil},
		{"checkpoint needs backoff", with("MESOS_CHECKPOINT=1", "MESOS_RECOVERY_TIMEOUT=15mins"), "MESOS_SUBSCRIPTION_BACKOFF_MAX", nil},
		{"go duration rejected", with("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD=5s"), "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ConfigFromEnv(tt.env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestLookupLastWins(t *testing.T) {
	v, ok := Lookup([]string{"A=1", "B=2", "A=3", "C"}, "A")
	if !ok || v != "3" {
		t.Errorf("Lookup = %q, %v", v, ok)
	}
	if _, ok := Lookup([]string{"C"}, "C"); ok {
		t.Error("entry without '=' must not match")
	}
}
