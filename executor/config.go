package executor

import (
	"fmt"
	"net"
	"strings"
	"time"

	"mezzo/internal/stout"
)

// DefaultShutdownGracePeriod is the agent's --executor_shutdown_grace_period
// default, used when MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD is absent.
const DefaultShutdownGracePeriod = 5 * time.Second

// Config is what an executor learns from the environment the agent gives it
// (see ConfigFromEnv).
type Config struct {
	FrameworkID string // MESOS_FRAMEWORK_ID
	ExecutorID  string // MESOS_EXECUTOR_ID
	AgentID     string // MESOS_SLAVE_ID (optional)
	// AgentEndpoint is "ip:port" from MESOS_AGENT_ENDPOINT.
	AgentEndpoint string
	// AgentURL is the executor API: http://<AgentEndpoint>/api/v1/executor.
	AgentURL string
	// Sandbox is the sandbox as the executor sees it (MESOS_SANDBOX, falling
	// back to MESOS_DIRECTORY).
	Sandbox string
	// Directory is the sandbox path on the host (MESOS_DIRECTORY).
	Directory string
	// Checkpoint is MESOS_CHECKPOINT == "1": the framework checkpoints, so the
	// executor survives agent restarts by re-subscribing.
	Checkpoint bool
	// ShutdownGracePeriod is how long the agent waits for the executor to
	// exit after SHUTDOWN (MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD).
	ShutdownGracePeriod time.Duration
	// SubscriptionBackoffMax bounds the random delay between re-subscription
	// attempts (MESOS_SUBSCRIPTION_BACKOFF_MAX; set only with checkpointing).
	SubscriptionBackoffMax time.Duration
	// RecoveryTimeout is how long to keep trying to reach a restarting agent
	// before shutting down (MESOS_RECOVERY_TIMEOUT; only with checkpointing).
	RecoveryTimeout time.Duration
	// AuthToken is MESOS_EXECUTOR_AUTHENTICATION_TOKEN, sent as a bearer
	// token on every call when set.
	AuthToken string
	// TLSCAFile is set when the agent serves TLS (LIBPROCESS_SSL_ENABLED,
	// as Mesos's executors learn it): AgentURL is then https and the
	// agent's certificate must chain to this file's CAs
	// (LIBPROCESS_SSL_CA_FILE; empty: the system's).
	TLS       bool
	TLSCAFile string
	// Environ is the environment the config was read from, with the
	// authentication token removed; executors hand it to their tasks.
	Environ []string
}

// Lookup returns the value of key in environ ("KEY=value" entries; the last
// one wins, like os.Getenv over a duplicated environment).
func Lookup(environ []string, key string) (string, bool) {
	val, found := "", false
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val, found = v, true
		}
	}
	return val, found
}

// ConfigFromEnv reads the executor environment the agent sets up (Mesos's
// names and formats). Required: MESOS_FRAMEWORK_ID, MESOS_EXECUTOR_ID,
// MESOS_AGENT_ENDPOINT (or, as a fallback, MESOS_SLAVE_PID
// "slave(1)@ip:port"), MESOS_SANDBOX or MESOS_DIRECTORY; with
// MESOS_CHECKPOINT=1 also MESOS_RECOVERY_TIMEOUT and
// MESOS_SUBSCRIPTION_BACKOFF_MAX. Errors name the variable.
func ConfigFromEnv(environ []string) (Config, error) {
	var c Config
	get := func(k string) string { v, _ := Lookup(environ, k); return v }
	required := func(k string) (string, error) {
		v, ok := Lookup(environ, k)
		if !ok || v == "" {
			return "", fmt.Errorf("expecting %s to be set in the environment", k)
		}
		return v, nil
	}
	var err error
	if c.FrameworkID, err = required("MESOS_FRAMEWORK_ID"); err != nil {
		return c, err
	}
	if c.ExecutorID, err = required("MESOS_EXECUTOR_ID"); err != nil {
		return c, err
	}
	c.AgentID = get("MESOS_SLAVE_ID")

	endpoint, path := get("MESOS_AGENT_ENDPOINT"), "/api/v1/executor"
	if endpoint == "" {
		// Older agents only give the libprocess PID; its id prefixes the path.
		if pid := get("MESOS_SLAVE_PID"); pid != "" {
			id, addr, ok := strings.Cut(pid, "@")
			if !ok || id == "" {
				return c, fmt.Errorf("MESOS_SLAVE_PID %q: expecting id@ip:port", pid)
			}
			endpoint, path = addr, "/"+id+"/api/v1/executor"
		}
	}
	if endpoint == "" {
		return c, fmt.Errorf("expecting MESOS_AGENT_ENDPOINT to be set in the environment")
	}
	if _, _, err := net.SplitHostPort(endpoint); err != nil {
		return c, fmt.Errorf("MESOS_AGENT_ENDPOINT %q: expecting ip:port: %v", endpoint, err)
	}
	c.AgentEndpoint = endpoint
	switch v := strings.ToLower(get("LIBPROCESS_SSL_ENABLED")); v {
	case "1", "true", "yes":
		c.TLS, c.TLSCAFile = true, get("LIBPROCESS_SSL_CA_FILE")
	case "", "0", "false", "no":
	default:
		return c, fmt.Errorf("LIBPROCESS_SSL_ENABLED %q: expecting true or false", v)
	}
	scheme := "http://"
	if c.TLS {
		scheme = "https://"
	}
	c.AgentURL = scheme + endpoint + path

	c.Directory = get("MESOS_DIRECTORY")
	c.Sandbox = get("MESOS_SANDBOX")
	if c.Sandbox == "" {
		c.Sandbox = c.Directory
	}
	if c.Sandbox == "" {
		return c, fmt.Errorf("expecting MESOS_SANDBOX (or MESOS_DIRECTORY) to be set in the environment")
	}

	switch v := get("MESOS_CHECKPOINT"); v {
	case "1":
		c.Checkpoint = true
	case "", "0":
	default:
		return c, fmt.Errorf("MESOS_CHECKPOINT %q: expecting \"1\" or \"0\"", v)
	}

	duration := func(k string, req bool, def time.Duration) (time.Duration, error) {
		v, ok := Lookup(environ, k)
		if !ok || v == "" {
			if req {
				return 0, fmt.Errorf("expecting %s to be set in the environment", k)
			}
			return def, nil
		}
		d, err := stout.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", k, err)
		}
		return d, nil
	}
	if c.ShutdownGracePeriod, err = duration("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", false, DefaultShutdownGracePeriod); err != nil {
		return c, err
	}
	if c.Checkpoint {
		if c.RecoveryTimeout, err = duration("MESOS_RECOVERY_TIMEOUT", true, 0); err != nil {
			return c, err
		}
		if c.SubscriptionBackoffMax, err = duration("MESOS_SUBSCRIPTION_BACKOFF_MAX", true, 0); err != nil {
			return c, err
		}
	}

	c.AuthToken = get("MESOS_EXECUTOR_AUTHENTICATION_TOKEN")
	// The token is the executor's secret: tasks must not inherit it (Mesos
	// erases it from the environment for the same reason).
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "MESOS_EXECUTOR_AUTHENTICATION_TOKEN=") {
			c.Environ = append(c.Environ, kv)
		}
	}
	return c, nil
}
