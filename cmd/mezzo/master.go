package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mezzo/internal/loglevel"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"mezzo/internal/authn"
	"mezzo/internal/flagenv"
	"mezzo/internal/tlsconfig"
	"mezzo/internal/version"
	"mezzo/master"
	"mezzo/master/allocator"
	"mezzo/master/httpapi"
	"mezzo/webui"
)

// masterFlags are the master's command-line flags, Mesos names and defaults.
type masterFlags struct {
	ip, hostname, workDir, allocator, weights, minAllocatable, logLevel string
	logFormat                                                           string
	port, maxAgentPingTimeouts, offerConstraintsMaxProgram              int
	// logging is the logger's level control, for SET_LOGGING_LEVEL.
	logging                                            *loglevel.Control
	revocation, profiling, lendIdleReservations        bool
	allocationInterval, offerTimeout, agentPingTimeout *time.Duration

	// High availability and the registry.
	masters, registry, agentRemovalRateLimit                             string
	quorum                                                               int
	registryStrict                                                       bool
	agentReregisterTimeout, registryStoreTimeout, raftTimeout, raftLease *time.Duration
	allocatorRecoveryTimeout, allocatorRecoveryHold                      *time.Duration
	allocatorAgentRecoveryFactor, longTaskFraction                       float64
	shortTaskDuration                                                    *time.Duration

	// Security (security.go, docs/security.md).
	auth                                        *authFlags
	authFrameworks, authAgents, rootSubmissions bool
	credential                                  string
	tls                                         *tlsFlags
}

func addMasterFlags(fs *flag.FlagSet) *masterFlags {
	f := &masterFlags{}
	fs.StringVar(&f.ip, "ip", "127.0.0.1", "IP address to listen on and advertise")
	fs.IntVar(&f.port, "port", 5050, "port to listen on")
	fs.StringVar(&f.hostname, "hostname", "", "hostname to advertise (default: the system hostname)")
	fs.StringVar(&f.workDir, "work_dir", "",
		"where the master keeps its registry, the replicated log (<work_dir>/registry); required unless --registry=in_memory")
	fs.StringVar(&f.allocator, "allocator", allocator.Default, "allocator to use")
	fs.StringVar(&f.weights, "weights", "", "role weights, e.g. 'web=2,batch=0.5'")
	fs.StringVar(&f.minAllocatable, "min_allocatable_resources", "cpus:0.01|mem:32",
		"an agent's free resources are offered only if they hold one of these quantities")
	fs.StringVar(&f.logLevel, "logging_level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log_format", "text", "mezzo only: the log's format, "+logFormats+" (one JSON object per line); Raft's lines included")
	fs.Float64Var(&f.longTaskFraction, "long_task_fraction", 0,
		"mezzo only (paper §3.3.2): the fraction of each agent's resources long tasks may use; offers carry their long part as mezzo_long_task_<resource> attributes and long tasks beyond it get TASK_ERROR (0: no bound, the default)")
	f.shortTaskDuration = durationFlag(fs, "short_task_duration", master.DefaultShortTaskDuration,
		"mezzo only: with --long_task_fraction, how long a task labelled mezzo.task_length=short without max_completion_time may run before it counts as long (and is revoked first)")
	fs.BoolVar(&f.revocation, "revocation", false,
		"kill tasks of over-share frameworks when a framework below its quota guarantee needs resources (paper §3.3.3)")
	fs.BoolVar(&f.lendIdleReservations, "lend_idle_reservations", false,
		"mezzo only (oversubscription for reservations): offer reserved resources nobody is allocated, as revocable resources without throttle_info, to frameworks with the REVOCABLE_RESOURCES capability; when the reservation's role takes them back the tenants' offers are rescinded and the agent evicts their tasks")
	fs.BoolVar(&f.profiling, "profiling", false,
		"mezzo only: serve Go's runtime profiles (CPU, heap, goroutines) under /debug/pprof/ on the HTTP port, for `go tool pprof`")
	fs.IntVar(&f.maxAgentPingTimeouts, "max_agent_ping_timeouts", 5, "missed pings before an agent is unreachable")
	fs.IntVar(&f.offerConstraintsMaxProgram, "offer_constraints_re2_max_program_size", allocator.DefaultRegexMaxProgramSize,
		"largest program a regex in a framework's offer constraints may compile to (counted in Go regexp instructions); larger ones fail SUBSCRIBE and UPDATE_FRAMEWORK")
	f.allocationInterval = durationFlag(fs, "allocation_interval", time.Second, "time between allocation runs")
	f.offerTimeout = durationFlag(fs, "offer_timeout", 0, "rescind offers not used within this time (0: never)")
	f.agentPingTimeout = durationFlag(fs, "agent_ping_timeout", 15*time.Second, "time an agent has to answer a ping")
	fs.StringVar(&f.masters, "masters", "",
		"the HTTP addresses (host:port) of all masters, comma separated, this one included, for high availability. "+
			"Each master's Raft traffic uses HTTP port + 1000 on the same host (5050 -> 6050), so that port must be free and reachable too. "+
			"Empty: a single master (a one-node group on local disk)")
	fs.IntVar(&f.quorum, "quorum", 0, "masters that must hold a registry write; with Raft this is a majority of --masters (0: that majority)")
	fs.StringVar(&f.registry, "registry", "replicated_log",
		"where the registry lives: replicated_log (under --work_dir, replicated among --masters) or in_memory (lost on restart, a single master only)")
	fs.BoolVar(&f.registryStrict, "registry_strict", false,
		"refuse to start on an empty registry: only for clusters whose registry must already exist (misconfiguration or data loss otherwise looks like an empty cluster)")
	f.registryStoreTimeout = durationFlag(fs, "registry_store_timeout", 20*time.Second, "time a registry write may take before it fails (the master then steps down)")
	f.agentReregisterTimeout = durationFlag(fs, "agent_reregister_timeout", 10*time.Minute,
		"after a failover, time the agents in the registry have to re-register before they are marked unreachable")
	f.allocatorRecoveryTimeout = durationFlag(fs, "allocator_recovery_timeout", master.DefaultAllocatorRecoveryTimeout,
		"after a failover, allocation is paused until --allocator_agent_recovery_factor of the registry's agents re-registered, or at most this long")
	fs.Float64Var(&f.allocatorAgentRecoveryFactor, "allocator_agent_recovery_factor", master.DefaultAllocatorAgentRecoveryFactor,
		"fraction (0, 1] of the registry's agents that must re-register after a failover before allocation resumes")
	f.allocatorRecoveryHold = durationFlag(fs, "allocator_recovery_hold", master.DefaultAllocatorRecoveryHold,
		"mezzo only: when no role has quota, the pause after a failover lasts at most this long (Mesos does not pause then; 0 does not either)")
	fs.StringVar(&f.agentRemovalRateLimit, "agent_removal_rate_limit", "",
		"at most this many agents marked unreachable per duration, e.g. 1/10mins (default: no limit)")
	f.raftTimeout = durationFlag(fs, "raft_timeout", 500*time.Millisecond,
		"mezzo only (not a Mesos flag): Raft heartbeat and election timeout among --masters: a leader that stops answering (paused, partitioned) is replaced within about 1-2x this; one whose process died (its Raft port refuses connections) at once")
	f.auth = addAuthFlags(fs, "master")
	f.tls = addTLSFlags(fs, true)
	fs.BoolVar(&f.authFrameworks, "authenticate_frameworks", false,
		"only frameworks presenting HTTP Basic credentials (from --credentials) may use the scheduler API; their FrameworkInfo.principal must be the authenticated one")
	fs.BoolVar(&f.authFrameworks, "authenticate_http_frameworks", false, "the same as --authenticate_frameworks (Mesos's name for HTTP frameworks)")
	fs.BoolVar(&f.authAgents, "authenticate_agents", false,
		"only agents presenting HTTP Basic credentials (from --credentials; the agent's --credential) may register; an agent may not present another's ID")
	fs.BoolVar(&f.rootSubmissions, "root_submissions", true, "whether frameworks may run as root (FrameworkInfo.user)")
	fs.StringVar(&f.credential, "credential", "",
		"mezzo only: the credential (path, file:///path; JSON {\"principal\",\"secret\"} or 'principal secret') the master presents to agents when it reads them for the web UI (/agent/<id>/...)")
	f.raftLease = durationFlag(fs, "raft_lease_timeout", 0,
		"mezzo only: the leader steps down after this long without hearing from a quorum; at most --raft_timeout (default: --raft_timeout). Shorter deposes a cut-off leader sooner, but makes leadership change when a busy leader's heartbeats are late")
	return f
}

// runningMaster is a master serving HTTP, as started by startMaster.
type runningMaster struct {
	m    *master.Master
	srv  *http.Server
	ln   net.Listener
	reg  *registry // nil with --registry=in_memory
	done chan error
	// fatal receives why the master cannot go on (a registry disk
	// failure, strict recovery of an empty registry).
	fatal chan error
	// tls is the master's TLS material (nil: plain HTTP).
	tls *tlsconfig.Source
}

func (r *runningMaster) addr() string { return r.ln.Addr().String() }

// startMaster builds and starts a master and its HTTP server on ln.
func startMaster(ctx context.Context, f *masterFlags, fs *flag.FlagSet, ln net.Listener, log *slog.Logger) (*runningMaster, error) {
	if f.workDir != "" {
		// As the agent's: one meaning whatever the process's directory.
		abs, err := filepath.Abs(f.workDir)
		if err != nil {
			return nil, fmt.Errorf("--work_dir %q: %v", f.workDir, err)
		}
		f.workDir = abs
	}
	weights, err := parseWeights(f.weights)
	if err != nil {
		return nil, err
	}
	minAlloc, err := parseMinAllocatable(f.minAllocatable)
	if err != nil {
		return nil, err
	}
	removalInterval, err := parseRateLimit(f.agentRemovalRateLimit)
	if err != nil {
		return nil, err
	}
	guard, err := f.auth.guard(log, authn.MasterReadonly, authn.MasterReadwrite,
		map[authn.Realm]bool{authn.MasterScheduler: f.authFrameworks, authn.MasterAgents: f.authAgents})
	if err != nil {
		return nil, err
	}
	authz, err := f.auth.authorizer(log)
	if err != nil {
		return nil, err
	}
	agentCred, err := loadCredential(f.credential, log)
	if err != nil {
		return nil, err
	}
	tlsSrc, err := f.tls.source()
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	var flags []master.Flag
	for _, kv := range flagenv.Effective(fs) {
		flags = append(flags, master.Flag{Name: kv[0], Value: kv[1]})
	}
	fatal := make(chan error, 2)
	onFatal := func(err error) {
		select {
		case fatal <- err:
		default:
		}
	}
	var reg *registry
	switch f.registry {
	case "in_memory":
		if f.masters != "" {
			return nil, fmt.Errorf("--registry=in_memory cannot be shared by several masters; use --registry=replicated_log with --masters")
		}
	case "replicated_log", "":
		rc := registryConfig{workDir: f.workDir, bindIP: f.ip, strict: f.registryStrict,
			raftTimeout: *f.raftTimeout, raftLease: *f.raftLease, storeTimeout: *f.registryStoreTimeout, onFatal: onFatal, log: log}
		if tlsSrc != nil && f.masters != "" {
			// Raft among the masters is always mutual TLS in a TLS
			// cluster: the peers are the masters' certificates.
			if rc.serverTLS, err = tlsSrc.Server(tlsconfig.PeersRequired); err != nil {
				return nil, fmt.Errorf("Raft over TLS: %w", err)
			}
			rc.clientTLS = tlsSrc.Client()
		}
		if f.masters != "" {
			rc.masters, rc.self, err = parseMasters(f.masters, f.ip, hostnameOr(f.hostname), port)
			if err != nil {
				return nil, err
			}
			if q := len(rc.masters)/2 + 1; f.quorum != 0 && f.quorum != q {
				return nil, fmt.Errorf("--quorum=%d: with %d masters a registry write needs a majority, %d (Raft)", f.quorum, len(rc.masters), q)
			}
		} else {
			if f.quorum > 1 {
				return nil, fmt.Errorf("--quorum=%d needs --masters listing at least %d masters", f.quorum, 2*f.quorum-1)
			}
			rc.self = net.JoinHostPort(f.ip, strconv.Itoa(port))
		}
		reg, err = openRegistry(rc)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("--registry=%q: want replicated_log or in_memory", f.registry)
	}
	recoveryHold := *f.allocatorRecoveryHold
	if recoveryHold == 0 {
		recoveryHold = -1 // no pause (the Config's zero is the default)
	}
	cfg := master.Config{
		Hostname:                       hostnameOr(f.hostname),
		IP:                             f.ip,
		Port:                           port,
		Version:                        version.Version,
		AllocatorName:                  f.allocator,
		MinAllocatable:                 minAlloc,
		Weights:                        weights,
		Revocation:                     f.revocation,
		LendIdleReservations:           f.lendIdleReservations,
		OfferConstraintsMaxProgramSize: f.offerConstraintsMaxProgram,
		LongTaskFraction:               f.longTaskFraction,
		ShortTaskDuration:              *f.shortTaskDuration,
		AllocationInterval:             *f.allocationInterval,
		OfferTimeout:                   *f.offerTimeout,
		AgentPingTimeout:               *f.agentPingTimeout,
		MaxAgentPingTimeouts:           f.maxAgentPingTimeouts,
		Flags:                          flags,
		Logger:                         log,

		AgentReregisterTimeout:       *f.agentReregisterTimeout,
		AllocatorRecoveryTimeout:     *f.allocatorRecoveryTimeout,
		AllocatorAgentRecoveryFactor: f.allocatorAgentRecoveryFactor,
		AllocatorRecoveryHold:        recoveryHold,
		AgentRemovalInterval:         removalInterval,
		OnFatal:                      onFatal,
		Authorizer:                   authz,
		RefuseRootSubmissions:        !f.rootSubmissions,
	}
	if reg != nil {
		cfg.Registrar = reg.adapter
		cfg.Election = reg.election
	}
	m, err := master.New(cfg)
	if err != nil {
		if reg != nil {
			reg.Close()
		}
		return nil, err
	}
	m.Start()
	// Requests that arrive while no leader is known wait for the
	// election (a few Raft timeouts) rather than failing at once.
	wait := time.Duration(0)
	if reg != nil {
		wait = max(4**f.raftTimeout, 2*time.Second)
	}
	opts := httpapi.Options{Logger: log, Logging: f.logging, LeaderWait: wait, UI: webui.Handler(), Profiling: f.profiling,
		Auth: guard, AgentCredential: agentCred}
	if tlsSrc != nil {
		opts.AgentTLS = tlsSrc.Client()
	}
	if reg != nil {
		opts.ExtraMetrics = reg.reg.Metrics
		opts.ExtraTimers = reg.reg.Timers
	}
	if reg != nil {
		// Peers stopping with this process are not news (see Quiesce).
		context.AfterFunc(ctx, reg.log.Quiesce)
	}
	srv := newServer(httpapi.New(m, opts))
	r := &runningMaster{m: m, srv: srv, ln: ln, reg: reg, done: make(chan error, 1), fatal: fatal, tls: tlsSrc}
	sln, err := serveTLS(srv, ln, tlsSrc, tlsconfig.PeersAsConfigured)
	if err != nil {
		m.Stop()
		if reg != nil {
			reg.Close()
		}
		return nil, err
	}
	go func() {
		err := serve(ctx, srv, sln)
		m.Stop()
		if reg != nil {
			reg.Close()
		}
		r.done <- err
	}()
	return r, nil
}

func runMaster(args []string, _, stderr io.Writer) int {
	fs := newFlagSet("master", stderr)
	f := addMasterFlags(fs)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	log, logging, err := logger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo master: %v\n", err)
		return 2
	}
	bridgeStdLog(log)
	f.logging = logging
	tuneMasterGC()
	ctx, cancel := signalContext()
	defer cancel()
	ln, err := net.Listen("tcp", net.JoinHostPort(f.ip, strconv.Itoa(f.port)))
	if err != nil {
		fmt.Fprintf(stderr, "mezzo master: %v\n", err)
		return 1
	}
	r, err := startMaster(ctx, f, fs, ln, log)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "mezzo master: %v\n", err)
		return 1
	}
	log.Info("master listening", "addr", r.addr(), "masters", f.masters, "tls", r.tls != nil)
	reloadOnHUP(ctx, log, r.tls)
	select {
	case err := <-r.done:
		if err != nil {
			fmt.Fprintf(stderr, "mezzo master: %v\n", err)
			return 1
		}
		return 0
	case err := <-r.fatal:
		// Loudly: a master that cannot write its registry must not go on
		// (it has already stopped acknowledging and stepped down).
		fmt.Fprintf(stderr, "mezzo master: FATAL: %v\n", err)
		cancel()
		select {
		case <-r.done:
		case <-time.After(5 * time.Second):
		}
		return 1
	}
}
