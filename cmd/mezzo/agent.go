package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mezzo/internal/loglevel"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"mezzo/agent"
	"mezzo/agent/fetcher"
	"mezzo/agent/httpapi"
	"mezzo/agent/oversub"
	"mezzo/internal/authn"
	"mezzo/internal/exectoken"
	"mezzo/internal/tlsconfig"
	"mezzo/internal/version"
)

// agentFlags are the agent's command-line flags, Mesos names and defaults.
type agentFlags struct {
	master, ip, hostname, workDir, resources, attributes, logLevel string
	logFormat                                                      string
	port                                                           int
	// logging is the logger's level control, for SET_LOGGING_LEVEL.
	logging                                                   *loglevel.Control
	registrationTimeout, shutdownGrace                        *time.Duration
	reregistrationTimeout, recoveryTimeout                    *time.Duration
	containerizers, isolation, recover, reconfigurationPolicy string
	cgroupsHierarchy, cgroupsRoot                             string
	cgroupsEnableCFS, cgroupsLimitSwap                        bool
	fetcherCacheDir, fetcherAllowedDirs                       string
	fetcherCacheSize                                          bytesValue
	dockerSocket, dockerConfig, sandboxDirectory, runtimeDir  string
	dockerRemoveDelay                                         *time.Duration
	dockerKillOrphans, directCommandTasks, strict             bool
	// killOnExit makes the agent kill every executor when it stops (mezzo
	// local); a standalone agent leaves checkpointing executors running.
	killOnExit bool
	// credential is what the agent presents to its masters (--credential).
	credential string
	// Security (security.go): the HTTP authentication and ACLs (shared
	// with the master's flags under mezzo local), executor tokens and
	// running tasks as their user.
	auth                   *authFlags
	authExecutors, switchU bool
	executorSecretKey      string
	tls                    *tlsFlags
	// ovs are the oversubscription flags (Mesos's names; oversub.Config
	// defines them).
	ovs *oversub.Config
}

func addAgentFlags(fs *flag.FlagSet, withMaster bool) *agentFlags {
	f := &agentFlags{}
	if withMaster {
		fs.StringVar(&f.master, "master", "", "the master(s): host:port[,host:port...] (required)")
		fs.StringVar(&f.ip, "ip", "127.0.0.1", "IP address to listen on and advertise")
		fs.IntVar(&f.port, "port", 5051, "port to listen on")
		fs.StringVar(&f.hostname, "hostname", "", "hostname to advertise (default: the system hostname)")
		fs.StringVar(&f.workDir, "work_dir", "", "where sandboxes and checkpoints live (required)")
		fs.StringVar(&f.logLevel, "logging_level", "info", "debug, info, warn or error")
		fs.StringVar(&f.logFormat, "log_format", "text", "mezzo only: the log's format, "+logFormats+" (one JSON object per line)")
		fs.StringVar(&f.credential, "credential", "",
			"the credential the agent presents to its masters (path or file:///path: JSON {\"principal\",\"secret\"} or 'principal secret'); needed with the masters' --authenticate_agents")
		f.auth = addAuthFlags(fs, "agent")
		f.tls = addTLSFlags(fs, true)
	}
	fs.BoolVar(&f.authExecutors, "authenticate_http_executors", false,
		"executors must present the token the agent minted for them (MESOS_EXECUTOR_AUTHENTICATION_TOKEN) on the executor API; needs --executor_secret_key")
	fs.StringVar(&f.executorSecretKey, "executor_secret_key", "",
		"file holding the key (at least 32 bytes) that signs the executors' tokens; with it every executor gets a token")
	fs.BoolVar(&f.switchU, "switch_user", true,
		"run each task as its user (CommandInfo.user, else FrameworkInfo.user) and give it its sandbox; needs root unless the user is the agent's; off runs everything as the agent's user")
	fs.StringVar(&f.resources, "resources", "", "total resources, Mesos syntax or JSON (default: detected)")
	fs.StringVar(&f.attributes, "attributes", "", "attributes, e.g. 'rack:r1;zone:a'")
	f.registrationTimeout = durationFlag(fs, "executor_registration_timeout", time.Minute, "time an executor has to subscribe")
	f.shutdownGrace = durationFlag(fs, "executor_shutdown_grace_period", 5*time.Second, "time an executor has to exit after SHUTDOWN")
	f.reregistrationTimeout = durationFlag(fs, "executor_reregistration_timeout", 2*time.Second,
		"time recovered executors have to re-subscribe after an agent restart")
	f.recoveryTimeout = durationFlag(fs, "recovery_timeout", 15*time.Minute,
		"time checkpointing executors keep trying to reach a restarting agent before they exit")
	fs.StringVar(&f.containerizers, "containerizers", "mesos",
		"containerizers, comma separated: mesos, docker (tasks and executors whose ContainerInfo has type DOCKER), or docker,mesos")
	fs.StringVar(&f.isolation, "isolation", "posix/cpu,posix/mem",
		"isolators, comma separated: cgroups/cpu, cgroups/mem, cgroups/all, namespaces/pid, filesystem/posix, filesystem/linux, posix/cpu, posix/mem")
	fs.StringVar(&f.runtimeDir, "runtime_dir", "",
		"where records a reboot makes worthless live (the containerizer's pid records, the executor and task records of frameworks that do not checkpoint), as Mesos's --runtime_dir; agents on one host need distinct ones (default: <tmpfs>/mezzo/<hash of --work_dir> on /run if it is a tmpfs, else /dev/shm; under --work_dir if neither can be written)")
	fs.BoolVar(&f.directCommandTasks, "direct_command_tasks", true,
		"mezzo only: run the command tasks of frameworks that do not checkpoint without a command executor process (the agent plays the executor) unless they need one (COMMAND health checks, checks, max_completion_time, a ContainerInfo)")
	fs.StringVar(&f.recover, "recover", "reconnect",
		"after a restart: 'reconnect' to the executors left running, or 'cleanup' to kill them and register as a new agent")
	fs.BoolVar(&f.strict, "strict", true,
		"at recovery, stop on a checkpoint file that cannot be read (naming it); with --strict=false leave out the framework, executor or task it describes, count it in slave/recovery_errors and recover the rest")
	fs.StringVar(&f.reconfigurationPolicy, "reconfiguration_policy", "equal",
		"what a restart may change in --resources/--attributes: 'equal' (nothing) or 'additive' (only additions)")
	fs.StringVar(&f.cgroupsHierarchy, "cgroups_hierarchy", "/sys/fs/cgroup", "where cgroups are mounted")
	fs.StringVar(&f.cgroupsRoot, "cgroups_root", "mezzo", "cgroup under which containers' cgroups are made")
	fs.BoolVar(&f.cgroupsEnableCFS, "cgroups_enable_cfs", false, "hard-limit cpu with CFS quota (cgroups/cpu)")
	fs.BoolVar(&f.cgroupsLimitSwap, "cgroups_limit_swap", false, "limit memory plus swap to the memory limit (cgroups/mem)")
	fs.StringVar(&f.fetcherCacheDir, "fetcher_cache_dir", agent.DefaultFetcherCacheDir,
		"parent of the fetcher cache (URIs with cache=true), kept in <dir>/slaves/<agent id>")
	f.fetcherCacheSize = bytesValue(agent.DefaultFetcherCacheSize)
	fs.Var(&f.fetcherCacheSize, "fetcher_cache_size", "size of the fetcher cache, e.g. 2GB, 512MB (0B disables it)")
	fs.StringVar(&f.fetcherAllowedDirs, "fetcher_allowed_dirs", "",
		"mezzo only (not a Mesos flag): comma-separated directories that file:// URIs and plain absolute paths must lie under once symlinks are resolved (default: none, every local path is refused and the task fails)")
	fs.StringVar(&f.dockerSocket, "docker_socket", "",
		"the Docker Engine's address: a socket path, unix:///path or tcp://host:port, over TLS when $DOCKER_CERT_PATH holds ca.pem, cert.pem and key.pem, verifying the engine when $DOCKER_TLS_VERIFY is set (default: $DOCKER_HOST, else /var/run/docker.sock)")
	fs.StringVar(&f.dockerConfig, "docker_config", "",
		"registry credentials for Docker image pulls: an absolute path to a docker config file (~/.docker/config.json with \"auths\", or ~/.dockercfg) or its JSON")
	f.dockerRemoveDelay = durationFlag(fs, "docker_remove_delay", 6*time.Hour, "time an ended Docker container is kept before it is removed")
	fs.BoolVar(&f.dockerKillOrphans, "docker_kill_orphans", true,
		"at recovery, remove this agent's Docker containers that no checkpointed executor claims")
	fs.StringVar(&f.sandboxDirectory, "sandbox_directory", "/mnt/mesos/sandbox", "where the sandbox is mounted in Docker containers")
	f.ovs = &oversub.Config{}
	f.ovs.RegisterFlags(fs)
	return f
}

type runningAgent struct {
	a    *agent.Agent
	ln   net.Listener
	done chan error
	tls  *tlsconfig.Source // nil: plain HTTP
}

// startAgent builds and starts an agent serving its HTTP API on ln.
func startAgent(ctx context.Context, f *agentFlags, ln net.Listener, client *http.Client, log *slog.Logger) (*runningAgent, error) {
	if f.master == "" {
		return nil, fmt.Errorf("--master is required")
	}
	if f.workDir == "" {
		return nil, fmt.Errorf("--work_dir is required")
	}
	addr := ln.Addr().(*net.TCPAddr)
	var allowed []string
	for _, d := range strings.Split(f.fetcherAllowedDirs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			allowed = append(allowed, d)
		}
	}
	runtimeDir := f.runtimeDir
	if runtimeDir == "" {
		runtimeDir = defaultRuntimeDir(f.workDir)
	}
	cred, err := loadCredential(f.credential, log)
	if err != nil {
		return nil, err
	}
	guard, err := f.auth.guard(log, authn.AgentReadonly, authn.AgentReadwrite, nil)
	if err != nil {
		return nil, err
	}
	authz, err := f.auth.authorizer(log)
	if err != nil {
		return nil, err
	}
	var key *exectoken.Key
	if f.executorSecretKey != "" {
		k, err := exectoken.LoadKey(f.executorSecretKey)
		if err != nil {
			return nil, err
		}
		key = &k
	}
	tlsSrc, err := f.tls.source()
	if err != nil {
		return nil, err
	}
	if tlsSrc != nil {
		// h2 over TLS to the masters (ALPN), still one connection per
		// master for all the process's agents.
		client = agent.NewTLSHTTPClient(agent.MasterResponseTimeout, tlsSrc.Client())
	}
	if client == nil {
		client = agent.DefaultHTTPClient()
	}
	if cred != nil {
		c := *client
		c.Transport = cred.Transport(c.Transport)
		client = &c
	}
	cacheSize := int64(f.fetcherCacheSize)
	if cacheSize == 0 {
		cacheSize = -1 // 0B: no cache (agent.Config's zero means the default)
	}
	a, err := agent.New(agent.Config{
		Masters:                       strings.Split(f.master, ","),
		IP:                            addr.IP.String(),
		Port:                          addr.Port,
		Hostname:                      hostnameOr(f.hostname),
		WorkDir:                       f.workDir,
		Resources:                     f.resources,
		Attributes:                    f.attributes,
		ExecutorRegistrationTimeout:   *f.registrationTimeout,
		ExecutorShutdownGracePeriod:   *f.shutdownGrace,
		ExecutorReregistrationTimeout: *f.reregistrationTimeout,
		RecoveryTimeout:               *f.recoveryTimeout,
		Containerizers:                f.containerizers,
		Isolation:                     f.isolation,
		Recover:                       f.recover,
		RuntimeDir:                    runtimeDir,
		DirectCommandTasks:            f.directCommandTasks,
		ReconfigurationPolicy:         f.reconfigurationPolicy,
		LenientRecovery:               !f.strict,
		Cgroups: agent.CgroupsConfig{
			Hierarchy: f.cgroupsHierarchy,
			Root:      f.cgroupsRoot,
			EnableCFS: f.cgroupsEnableCFS,
			LimitSwap: f.cgroupsLimitSwap,
		},
		Oversubscription: *f.ovs,
		Fetcher:          fetcher.Options{AllowedFileDirs: allowed},
		FetcherCacheDir:  f.fetcherCacheDir,
		FetcherCacheSize: cacheSize,
		Docker: agent.DockerConfig{
			Socket:           f.dockerSocket,
			Config:           f.dockerConfig,
			RemoveDelay:      *f.dockerRemoveDelay,
			KeepOrphans:      !f.dockerKillOrphans,
			SandboxDirectory: f.sandboxDirectory,
		},
		HTTPClient: client,
		Logger:     log,
		Logging:    f.logging,
		Version:    version.Version,

		SwitchUser:            f.switchU,
		ExecutorSecretKey:     key,
		AuthenticateExecutors: f.authExecutors,
		HTTPAuth:              guard,
		Authorizer:            authz,
		ServesTLS:             tlsSrc != nil,
		TLSCAFile:             f.tls.caFile(),
	})
	if err != nil {
		return nil, err
	}
	handler := a.Handler()
	if tlsSrc != nil && tlsSrc.Files().VerifyPeer {
		handler = httpapi.RequireClientCert(handler)
	}
	srv := newServer(handler)
	// Executors reach the agent without a certificate (their tokens
	// authenticate them): the listener verifies certificates when given
	// and RequireClientCert demands one everywhere else.
	sln, err := serveTLS(srv, ln, tlsSrc, tlsconfig.PeersOptional)
	if err != nil {
		return nil, err
	}
	r := &runningAgent{a: a, ln: ln, done: make(chan error, 1), tls: tlsSrc}
	go func() { r.done <- serve(ctx, srv, sln) }()
	a.Start()
	go func() {
		<-ctx.Done()
		if f.killOnExit {
			a.Shutdown() // mezzo local: nothing may outlive the cluster
			if runtimeDir != "" {
				os.RemoveAll(runtimeDir) // nothing left for it to describe
			}
		} else {
			a.Stop() // checkpointing executors keep running for the next agent
		}
	}()
	return r, nil
}

// defaultRuntimeDir is --runtime_dir's default: a directory of its own
// (agents on one host must not share one, so named after the work
// directory) on a tmpfs this process can write, so those records cost no
// disk work: under /run where it is a tmpfs (most distributions), else
// under /dev/shm; "" (under --work_dir) if neither is.
func defaultRuntimeDir(workDir string) string {
	abs, err := filepath.Abs(workDir)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(abs))
	for _, base := range []string{"/run", "/dev/shm"} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(base, &st); err != nil || st.Type != tmpfsMagic {
			continue
		}
		dir := filepath.Join(base, "mezzo", hex.EncodeToString(sum[:6]))
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir
		}
	}
	return ""
}

// tmpfsMagic is statfs's f_type of a tmpfs (TMPFS_MAGIC).
const tmpfsMagic = 0x01021994

func runAgent(args []string, _, stderr io.Writer) int {
	fs := newFlagSet("agent", stderr)
	f := addAgentFlags(fs, true)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	log, logging, err := logger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo agent: %v\n", err)
		return 2
	}
	bridgeStdLog(log)
	f.logging = logging
	ctx, cancel := signalContext()
	defer cancel()
	ln, err := net.Listen("tcp", net.JoinHostPort(f.ip, strconv.Itoa(f.port)))
	if err != nil {
		fmt.Fprintf(stderr, "mezzo agent: %v\n", err)
		return 1
	}
	r, err := startAgent(ctx, f, ln, agent.DefaultHTTPClient(), log)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "mezzo agent: %v\n", err)
		return 1
	}
	log.Info("agent listening", "addr", ln.Addr().String(), "master", f.master, "tls", r.tls != nil)
	reloadOnHUP(ctx, log, r.tls)
	select {
	case err := <-r.done:
		if err != nil {
			fmt.Fprintf(stderr, "mezzo agent: %v\n", err)
			return 1
		}
		return 0
	case <-r.a.Done():
		// The agent stopped on its own (e.g. the master removed it):
		// exit, so that a supervisor restarts it to register anew.
		err := r.a.Err()
		cancel()
		<-r.done
		if err != nil {
			fmt.Fprintf(stderr, "mezzo agent: %v\n", err)
			return 1
		}
		return 0
	}
}

// bytesValue is a flag holding a byte size in Mesos's syntax ("2GB").
type bytesValue int64

func (v *bytesValue) String() string { return agent.FormatBytes(int64(*v)) }

func (v *bytesValue) Set(s string) error {
	n, err := agent.ParseBytes(s)
	if err != nil {
		return err
	}
	*v = bytesValue(n)
	return nil
}
