package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mezzo/internal/loglevel"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/docker"
	"mezzo/agent/fetcher"
	"mezzo/agent/oversub"
	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
	"mezzo/internal/clock"
	"mezzo/internal/exectoken"
	"mezzo/internal/tlsconfig"
)

// Defaults, as Mesos's agent flags.
const (
	DefaultExecutorRegistrationTimeout   = time.Minute      // --executor_registration_timeout
	DefaultExecutorShutdownGracePeriod   = 5 * time.Second  // --executor_shutdown_grace_period
	DefaultExecutorReregistrationTimeout = 2 * time.Second  // --executor_reregistration_timeout
	DefaultRecoveryTimeout               = 15 * time.Minute // --recovery_timeout
	DefaultRegistrationBackoff           = time.Second      // --registration_backoff_factor
	// MaxRegistrationBackoff caps the reconnect backoff (Mesos's
	// REGISTER_RETRY_INTERVAL_MAX).
	MaxRegistrationBackoff = time.Minute
	// DefaultPort is Mesos's agent port.
	DefaultPort = 5051
	// DefaultFetcherCacheDir is Mesos's --fetcher_cache_dir.
	DefaultFetcherCacheDir = "/tmp/mesos/fetch"
	// DefaultFetcherCacheSize is Mesos's --fetcher_cache_size (2GB).
	DefaultFetcherCacheSize = 2 << 30
)

// DockerConfig holds the agent's Docker flags; the zero value is Mesos's
// defaults.
type DockerConfig struct {
	// Socket is --docker_socket; default $DOCKER_HOST, else
	// /var/run/docker.sock.
	Socket string
	// RemoveDelay is --docker_remove_delay: how long an ended container is
	// kept; default 6 hours; negative removes it as soon as it ended.
	RemoveDelay time.Duration
	// KeepOrphans is --docker_kill_orphans=false: at recovery, leave this
	// agent's containers that no checkpointed executor claims.
	KeepOrphans bool
	// SandboxDirectory is --sandbox_directory: where the sandbox is mounted
	// in containers; default /mnt/mesos/sandbox.
	SandboxDirectory string
	// Config is --docker_config: registry credentials for image pulls, as
	// an absolute path to a docker config file (~/.docker/config.json or
	// ~/.dockercfg) or that file's JSON; read once, by validate.
	Config string

	registryAuth *docker.RegistryAuth // Config, parsed
}

// Config configures an Agent. The zero value of an optional field selects
// Mesos's default; validate fills them in.
type Config struct {
	// Masters are the masters' HTTP addresses (host:port; an http:// prefix
	// is tolerated). The agent tries each in turn and follows 307 redirects
	// to the leader.
	Masters []string
	// IP is the address the agent advertises to the master and executors
	// (MESOS_AGENT_ENDPOINT); default 127.0.0.1.
	IP string
	// Port is the port the agent's HTTP API is served on; default 5051.
	Port int
	// Hostname is advertised in AgentInfo; default os.Hostname().
	Hostname string
	// WorkDir holds sandboxes (slaves/...) and checkpoints (meta/...).
	// Required.
	WorkDir string
	// Resources is the agent's total in Mesos text ("cpus:4;mem(web):1024")
	// or as a JSON array of Resource. cpus, mem, disk and ports that it does
	// not mention are detected (see detect.go).
	Resources string
	// Attributes in Mesos syntax: "rack:r1;zone:z2;level:3;ports:[1-10]".
	Attributes string
	// LauncherPath is the mezzo binary, run as `executor` (command tasks)
	// and `default-executor` (task groups); default os.Executable().
	LauncherPath string
	// ExecutorRegistrationTimeout is how long an executor has to subscribe
	// before it is killed; default 1 minute.
	ExecutorRegistrationTimeout time.Duration
	// ExecutorShutdownGracePeriod is how long an executor has between the
	// SHUTDOWN event and being killed (unless its ExecutorInfo says
	// otherwise); default 5 seconds.
	ExecutorShutdownGracePeriod time.Duration
	// ExecutorReregistrationTimeout is passed to checkpointing executors as
	// MESOS_SUBSCRIPTION_BACKOFF_MAX; default 2 seconds.
	ExecutorReregistrationTimeout time.Duration
	// RecoveryTimeout is passed to checkpointing executors as
	// MESOS_RECOVERY_TIMEOUT; default 15 minutes.
	RecoveryTimeout time.Duration
	// RegistrationBackoff is the initial reconnect backoff (doubling, with
	// jitter, up to MaxRegistrationBackoff); default 1 second.
	RegistrationBackoff time.Duration
	// Containerizers selects the containerizer (--containerizers); default
	// "mesos".
	Containerizers string
	// Isolation lists isolators, comma separated (--isolation); default
	// containerizer.DefaultIsolation.
	Isolation string
	// RuntimeDir (--runtime_dir) holds the records that a reboot makes
	// worthless, as Mesos's runtime directory: the containerizer's pid
	// records, and the executor and task records of frameworks that do not
	// checkpoint. On a tmpfs (/run) they cost no disk work, which with many
	// short tasks is most of the agent's file system work. Empty: they live
	// under <WorkDir>/meta with everything else.
	RuntimeDir string
	// DirectCommandTasks (--direct_command_tasks) runs the command tasks of
	// frameworks that do not checkpoint without a command executor process
	// when nothing needs one (directtask.go).
	DirectCommandTasks bool
	// Recover is --recover: RecoverReconnect (default) re-attaches to the
	// executors a previous agent process left running; RecoverCleanup kills
	// them and starts as a new agent.
	Recover string
	// ReconfigurationPolicy is --reconfiguration_policy: PolicyEqual
	// (default) or PolicyAdditive; a restart whose resources or attributes
	// differ from the checkpoint in a way the policy forbids fails.
	ReconfigurationPolicy string
	// Cgroups configures the cgroups isolators (--cgroups_hierarchy,
	// --cgroups_root, --cgroups_enable_cfs, --cgroups_limit_swap).
	Cgroups CgroupsConfig
	// Oversubscription holds the oversubscription flags with Mesos's names
	// (--resource_estimator, --qos_controller,
	// --oversubscribed_resources_interval, --qos_correction_interval_min,
	// --revocable_cpu_low_priority, and the estimators' and controllers'
	// parameters; docs/oversubscription.md). The zero value is Mesos's
	// default: no estimate, no corrections, revocable cpus at low priority.
	Oversubscription oversub.Config
	// Containerizer, if set, is used instead of building one from
	// Containerizers and Isolation (tests, emulation).
	Containerizer containerizer.Containerizer
	// Fetcher configures URI fetching into sandboxes (HTTP client,
	// AllowedFileDirs from --fetcher_allowed_dirs, size and time limits).
	// Its CacheDir, CacheSize and User are set by the agent per fetch from
	// FetcherCacheDir, FetcherCacheSize and the task's user; a Cache set
	// here is used as is.
	Fetcher fetcher.Options
	// FetcherCacheDir is --fetcher_cache_dir: the cache of URIs with
	// cache=true lives in <FetcherCacheDir>/slaves/<agent id>, as in Mesos;
	// default DefaultFetcherCacheDir.
	FetcherCacheDir string
	// FetcherCacheSize is --fetcher_cache_size in bytes; default
	// DefaultFetcherCacheSize. Negative disables the cache.
	FetcherCacheSize int64
	// LenientRecovery is Mesos's --strict=false: at recovery, a checkpoint
	// file that cannot be read (torn, corrupt) leaves out the framework,
	// executor or task it describes (an unreadable agent identity makes a
	// new agent), is logged and counted in slave/recovery_errors, and
	// everything else is recovered. The default (--strict=true) stops the
	// agent with an error naming the file.
	LenientRecovery bool
	// Docker configures the docker containerizer (--containerizers
	// containing "docker").
	Docker DockerConfig
	// Clock drives every timer of the agent; default clock.Real.
	Clock clock.Clock
	// Logger receives the agent's logs; default discards.
	Logger *slog.Logger
	// Logging controls Logger's level for the operator API's
	// SET_LOGGING_LEVEL; nil leaves the level fixed.
	Logging *loglevel.Control
	// HTTPClient talks to the masters. It must speak HTTP/2 (h2c, or h2
	// over TLS: NewTLSHTTPClient) so that many agents share one connection;
	// its Transport is used with the agent's own redirect policy. Default:
	// a Transport speaking only unencrypted HTTP/2.
	HTTPClient *http.Client
	// Version is reported to the master and in /state.
	Version string

	// Security (security.go, docs/security.md).

	// SwitchUser (--switch_user) runs each executor, and so its tasks, as
	// its user (CommandInfo.user, else FrameworkInfo.user) and hands the
	// sandbox to that user; off, everything runs as the agent's user. The
	// flag defaults to true, as Mesos's; the zero Config leaves it off.
	SwitchUser bool
	// ExecutorSecretKey (--executor_secret_key) signs a token for each
	// executor (MESOS_EXECUTOR_AUTHENTICATION_TOKEN); nil mints none.
	ExecutorSecretKey *exectoken.Key
	// AuthenticateExecutors (--authenticate_http_executors) refuses executor
	// API calls that do not carry the token minted for the executor they
	// name. Needs ExecutorSecretKey.
	AuthenticateExecutors bool
	// HTTPAuth authenticates callers of the agent's endpoints
	// (--credentials, --authenticate_http_readonly/readwrite); nil lets
	// everyone in anonymously.
	HTTPAuth *authn.Guard
	// Authorizer decides what each caller may read (--acls): sandboxes
	// (access_sandboxes), the frameworks, executors and tasks in /state,
	// the flags and the metrics. Nil allows everything.
	Authorizer authorizer.Authorizer
	// ServesTLS says the agent's HTTP is TLS: its executors are told so
	// (LIBPROCESS_SSL_ENABLED=true, as Mesos's executors inherit it) and
	// are given TLSCAFile (LIBPROCESS_SSL_CA_FILE) to verify the agent.
	ServesTLS bool
	TLSCAFile string
}

// validate checks the required fields and fills in defaults.
func (c *Config) validate() error {
	if len(c.Masters) == 0 {
		return errors.New("agent config: 'masters' is empty")
	}
	for i, m := range c.Masters {
		m = strings.TrimSpace(m)
		if strings.HasPrefix(m, "zk://") || strings.HasPrefix(m, "file://") {
			// A Mesos agent's --master; mezzo's masters elect among
			// themselves (docs/from-mesos.md).
			return fmt.Errorf("agent config: 'masters[%d]' %q: mezzo needs no ZooKeeper; list the masters' addresses instead, e.g. --master=m1:5050,m2:5050,m3:5050", i, c.Masters[i])
		}
		m = strings.TrimPrefix(strings.TrimPrefix(m, "http://"), "//")
		m = strings.TrimSuffix(m, "/")
		if _, _, err := net.SplitHostPort(m); err != nil {
			return fmt.Errorf("agent config: 'masters[%d]' %q is not host:port: %v", i, c.Masters[i], err)
		}
		c.Masters[i] = m
	}
	if c.WorkDir == "" {
		return errors.New("agent config: 'work_dir' is required")
	}
	// Every path the agent hands to an executor (MESOS_SANDBOX, the
	// container's working directory, checkpoint paths) must mean the same
	// thing from the executor's own working directory, the sandbox: a
	// relative one does not (the command executor's chdir into
	// "./a/slaves/..." from inside the sandbox fails). Resolve them once.
	for _, p := range []struct {
		v *string
		n string
	}{{&c.WorkDir, "work_dir"}, {&c.RuntimeDir, "runtime_dir"}, {&c.FetcherCacheDir, "fetcher_cache_dir"}} {
		if err := absPath(p.v, p.n); err != nil {
			return err
		}
	}
	for i := range c.Fetcher.AllowedFileDirs {
		if err := absPath(&c.Fetcher.AllowedFileDirs[i], "fetcher_allowed_dirs"); err != nil {
			return err
		}
	}
	if c.IP == "" {
		c.IP = "127.0.0.1"
	}
	if net.ParseIP(c.IP) == nil {
		return fmt.Errorf("agent config: 'ip' %q is not an IP address", c.IP)
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("agent config: 'port' %d out of range", c.Port)
	}
	if c.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			h = c.IP
		}
		c.Hostname = h
	}
	if c.LauncherPath == "" {
		p, err := os.Executable()
		if err != nil {
			return fmt.Errorf("agent config: 'launcher_path' not set and the executable's path is unknown: %v", err)
		}
		c.LauncherPath = p
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
		n   string
	}{
		{&c.ExecutorRegistrationTimeout, DefaultExecutorRegistrationTimeout, "executor_registration_timeout"},
		{&c.ExecutorShutdownGracePeriod, DefaultExecutorShutdownGracePeriod, "executor_shutdown_grace_period"},
		{&c.ExecutorReregistrationTimeout, DefaultExecutorReregistrationTimeout, "executor_reregistration_timeout"},
		{&c.RecoveryTimeout, DefaultRecoveryTimeout, "recovery_timeout"},
		{&c.RegistrationBackoff, DefaultRegistrationBackoff, "registration_backoff_factor"},
	} {
		if *d.v < 0 {
			return fmt.Errorf("agent config: '%s' is negative (%v)", d.n, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.Containerizers == "" {
		c.Containerizers = "mesos"
	}
	if _, _, err := parseContainerizers(c.Containerizers); err != nil {
		return err
	}
	if c.FetcherCacheDir == "" {
		c.FetcherCacheDir = DefaultFetcherCacheDir
	}
	if c.FetcherCacheSize == 0 {
		c.FetcherCacheSize = DefaultFetcherCacheSize
	}
	if d := c.Docker.SandboxDirectory; d != "" && !strings.HasPrefix(d, "/") {
		return fmt.Errorf("agent config: 'sandbox_directory' %q is not an absolute path", d)
	}
	ra, err := docker.LoadRegistryAuth(c.Docker.Config)
	if err != nil {
		return fmt.Errorf("agent config: %w", err)
	}
	c.Docker.registryAuth = ra
	switch c.Recover {
	case "":
		c.Recover = RecoverReconnect
	case RecoverReconnect, RecoverCleanup:
	default:
		return fmt.Errorf("agent config: 'recover' %q is neither %q nor %q", c.Recover, RecoverReconnect, RecoverCleanup)
	}
	switch c.ReconfigurationPolicy {
	case "":
		c.ReconfigurationPolicy = PolicyEqual
	case PolicyEqual, PolicyAdditive:
	default:
		return fmt.Errorf("agent config: 'reconfiguration_policy' %q is neither %q nor %q", c.ReconfigurationPolicy, PolicyEqual, PolicyAdditive)
	}
	// Validate names the flag of a bad value (--qos_controller: unknown
	// controller "x"), so the agent fails at start saying which.
	if err := c.Oversubscription.Validate(); err != nil {
		return fmt.Errorf("agent config: %w", err)
	}
	if c.AuthenticateExecutors && c.ExecutorSecretKey == nil {
		return errors.New("agent config: --authenticate_http_executors needs --executor_secret_key")
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.HTTPClient == nil {
		c.HTTPClient = DefaultHTTPClient()
	}
	return nil
}

// CgroupsConfig holds the agent's --cgroups_* flags; the zero value is
// Mesos's defaults (with mezzo's root cgroup "mezzo").
type CgroupsConfig struct {
	Hierarchy string // --cgroups_hierarchy, default /sys/fs/cgroup
	Root      string // --cgroups_root, default mezzo
	EnableCFS bool   // --cgroups_enable_cfs
	LimitSwap bool   // --cgroups_limit_swap
}

// MasterResponseTimeout bounds how long the agent waits for a master's
// answer to a request (the SUBSCRIBE's 200 header included; not the event
// stream that follows). A master whose process is frozen, or cut off by a
// partition, still has its connections accepted by the kernel but never
// answers; without a bound the agent would wait on it forever instead of
// trying the other masters. A live master answers well within it: one that
// knows no leader holds a request a few seconds at most (the election).
const MasterResponseTimeout = 10 * time.Second

// masterPingTimeout is how often an idle HTTP/2 connection to a master is
// pinged and how long the answer may take: a connection to a master that
// died without a FIN (power loss, partition) is found dead within about
// twice this, and every stream on it (one per agent of the process) fails
// over instead of waiting for TCP keep-alives.
const masterPingTimeout = 5 * time.Second

// DefaultHTTPClient returns the client agents use to talk to masters when
// Config.HTTPClient is unset: NewHTTPClient(MasterResponseTimeout).
func DefaultHTTPClient() *http.Client { return NewHTTPClient(MasterResponseTimeout) }

// NewHTTPClient returns a client speaking only unencrypted HTTP/2 (prior
// knowledge h2c): every agent of a process using it shares one TCP
// connection per master, each agent's subscription being one stream.
// responseTimeout bounds the wait for a response's header (see
// MasterResponseTimeout; <= 0 means none); the connection is also pinged
// to detect a dead master while a stream sits idle.
func NewHTTPClient(responseTimeout time.Duration) *http.Client {
	if responseTimeout < 0 {
		responseTimeout = 0
	}
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: masterTransport(p, responseTimeout, nil)}
}

// NewTLSHTTPClient is NewHTTPClient over TLS: HTTP/2 negotiated by ALPN
// (agents still share one connection per master), with tlsCfg verifying
// the masters (and presenting the agent's certificate to masters that
// require one). Its transport sends every request as https.
func NewTLSHTTPClient(responseTimeout time.Duration, tlsCfg *tls.Config) *http.Client {
	if responseTimeout < 0 {
		responseTimeout = 0
	}
	p := new(http.Protocols)
	p.SetHTTP2(true)
	return &http.Client{Transport: tlsconfig.HTTPS(masterTransport(p, responseTimeout, tlsCfg))}
}

func masterTransport(p *http.Protocols, responseTimeout time.Duration, tlsCfg *tls.Config) *http.Transport {
	return &http.Transport{
		Protocols:             p,
		TLSClientConfig:       tlsCfg,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ResponseHeaderTimeout: responseTimeout,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: masterPingTimeout,
			PingTimeout:     masterPingTimeout,
		},
	}
}

// absPath makes *p absolute (relative to the agent's working directory);
// an empty *p stays empty.
func absPath(p *string, name string) error {
	if *p == "" {
		return nil
	}
	abs, err := filepath.Abs(*p)
	if err != nil {
		return fmt.Errorf("agent config: '%s' %q: %v", name, *p, err)
	}
	*p = abs
	return nil
}
