package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"mezzo/agent"
	"mezzo/internal/version"
)

// agentFlags are the agent's command-line flags, Mesos names and defaults.
type agentFlags struct {
	master, ip, hostname, workDir, resources, attributes, logLevel string
	port                                                           int
	registrationTimeout, shutdownGrace                             *time.Duration
	reregistrationTimeout, recoveryTimeout                         *time.Duration
	containerizers, isolation, recover, reconfigurationPolicy      string
	cgroupsHierarchy, cgroupsRoot                                  string
	cgroupsEnableCFS, cgroupsLimitSwap                             bool
	// killOnExit makes the agent kill every executor when it stops (mezzo
	// local); a standalone agent leaves checkpointing executors running.
	killOnExit bool
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
	}
	fs.StringVar(&f.resources, "resources", "", "total resources, Mesos syntax or JSON (default: detected)")
	fs.StringVar(&f.attributes, "attributes", "", "attributes, e.g. 'rack:r1;zone:a'")
	f.registrationTimeout = durationFlag(fs, "executor_registration_timeout", time.Minute, "time an executor has to subscribe")
	f.shutdownGrace = durationFlag(fs, "executor_shutdown_grace_period", 5*time.Second, "time an executor has to exit after SHUTDOWN")
	f.reregistrationTimeout = durationFlag(fs, "executor_reregistration_timeout", 2*time.Second,
		"time recovered executors have to re-subscribe after an agent restart")
	f.recoveryTimeout = durationFlag(fs, "recovery_timeout", 15*time.Minute,
		"time checkpointing executors keep trying to reach a restarting agent before they exit")
	fs.StringVar(&f.containerizers, "containerizers", "mesos", "containerizer to run executors with")
	fs.StringVar(&f.isolation, "isolation", "posix/cpu,posix/mem",
		"isolators, comma separated: cgroups/cpu, cgroups/mem, cgroups/all, namespaces/pid, filesystem/posix, posix/cpu, posix/mem")
	fs.StringVar(&f.recover, "recover", "reconnect",
		"after a restart: 'reconnect' to the executors left running, or 'cleanup' to kill them and register as a new agent")
	fs.StringVar(&f.reconfigurationPolicy, "reconfiguration_policy", "equal",
		"what a restart may change in --resources/--attributes: 'equal' (nothing) or 'additive' (only additions)")
	fs.StringVar(&f.cgroupsHierarchy, "cgroups_hierarchy", "/sys/fs/cgroup", "where cgroups are mounted")
	fs.StringVar(&f.cgroupsRoot, "cgroups_root", "mezzo", "cgroup under which containers' cgroups are made")
	fs.BoolVar(&f.cgroupsEnableCFS, "cgroups_enable_cfs", false, "hard-limit cpu with CFS quota (cgroups/cpu)")
	fs.BoolVar(&f.cgroupsLimitSwap, "cgroups_limit_swap", false, "limit memory plus swap to the memory limit (cgroups/mem)")
	return f
}

type runningAgent struct {
	a    *agent.Agent
	ln   net.Listener
	done chan error
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
		ReconfigurationPolicy:         f.reconfigurationPolicy,
		Cgroups: agent.CgroupsConfig{
			Hierarchy: f.cgroupsHierarchy,
			Root:      f.cgroupsRoot,
			EnableCFS: f.cgroupsEnableCFS,
			LimitSwap: f.cgroupsLimitSwap,
		},
		HTTPClient: client,
		Logger:     log,
		Version:    version.Version,
	})
	if err != nil {
		return nil, err
	}
	srv := newServer(a.Handler())
	r := &runningAgent{a: a, ln: ln, done: make(chan error, 1)}
	go func() { r.done <- serve(ctx, srv, ln) }()
	a.Start()
	go func() {
		<-ctx.Done()
		if f.killOnExit {
			a.Shutdown() // mezzo local: nothing may outlive the cluster
		} else {
			a.Stop() // checkpointing executors keep running for the next agent
		}
	}()
	return r, nil
}

func runAgent(args []string, _, stderr io.Writer) int {
	fs := newFlagSet("agent", stderr)
	f := addAgentFlags(fs, true)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	log := logger(stderr, f.logLevel)
	ctx, cancel := signalContext()
	defer cancel()
	ln, err := net.Listen("tcp", net.JoinHostPort(f.ip, strconv.Itoa(f.port)))
	if err != nil {
		fmt.Fprintf(stderr, "mezzo agent: %v\n", err)
		return 1
	}
	r, err := startAgent(ctx, f, ln, nil, log)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "mezzo agent: %v\n", err)
		return 1
	}
	log.Info("agent listening", "addr", ln.Addr().String(), "master", f.master)
	if err := <-r.done; err != nil {
		fmt.Fprintf(stderr, "mezzo agent: %v\n", err)
		return 1
	}
	return 0
}
