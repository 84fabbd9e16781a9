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
	"time"

	"mezzo/internal/flagenv"
	"mezzo/internal/version"
	"mezzo/master"
	"mezzo/master/allocator"
	"mezzo/master/httpapi"
)

// masterFlags are the master's command-line flags, Mesos names and defaults.
type masterFlags struct {
	ip, hostname, workDir, allocator, weights, minAllocatable, logLevel string
	port, maxAgentPingTimeouts                                          int
	revocation                                                          bool
	allocationInterval, offerTimeout, agentPingTimeout                  *time.Duration
}

func addMasterFlags(fs *flag.FlagSet) *masterFlags {
	f := &masterFlags{}
	fs.StringVar(&f.ip, "ip", "127.0.0.1", "IP address to listen on and advertise")
	fs.IntVar(&f.port, "port", 5050, "port to listen on")
	fs.StringVar(&f.hostname, "hostname", "", "hostname to advertise (default: the system hostname)")
	fs.StringVar(&f.workDir, "work_dir", "", "where the master keeps its registry (needed once masters replicate)")
	fs.StringVar(&f.allocator, "allocator", allocator.Default, "allocator to use")
	fs.StringVar(&f.weights, "weights", "", "role weights, e.g. 'web=2,batch=0.5'")
	fs.StringVar(&f.minAllocatable, "min_allocatable_resources", "cpus:0.01|mem:32",
		"an agent's free resources are offered only if they hold one of these quantities")
	fs.StringVar(&f.logLevel, "logging_level", "info", "debug, info, warn or error")
	fs.BoolVar(&f.revocation, "revocation", false,
		"kill tasks of over-share frameworks when a framework below its quota guarantee needs resources (paper §3.3.3)")
	fs.IntVar(&f.maxAgentPingTimeouts, "max_agent_ping_timeouts", 5, "missed pings before an agent is unreachable")
	f.allocationInterval = durationFlag(fs, "allocation_interval", time.Second, "time between allocation runs")
	f.offerTimeout = durationFlag(fs, "offer_timeout", 0, "rescind offers not used within this time (0: never)")
	f.agentPingTimeout = durationFlag(fs, "agent_ping_timeout", 15*time.Second, "time an agent has to answer a ping")
	return f
}

// runningMaster is a master serving HTTP, as started by startMaster.
type runningMaster struct {
	m    *master.Master
	srv  *http.Server
	ln   net.Listener
	done chan error
}

func (r *runningMaster) addr() string { return r.ln.Addr().String() }

// startMaster builds and starts a master and its HTTP server on ln.
func startMaster(ctx context.Context, f *masterFlags, fs *flag.FlagSet, ln net.Listener, log *slog.Logger) (*runningMaster, error) {
	weights, err := parseWeights(f.weights)
	if err != nil {
		return nil, err
	}
	minAlloc, err := parseMinAllocatable(f.minAllocatable)
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	var flags []master.Flag
	for _, kv := range flagenv.Effective(fs) {
		flags = append(flags, master.Flag{Name: kv[0], Value: kv[1]})
	}
	m, err := master.New(master.Config{
		Hostname:             hostnameOr(f.hostname),
		IP:                   f.ip,
		Port:                 port,
		Version:              version.Version,
		AllocatorName:        f.allocator,
		MinAllocatable:       minAlloc,
		Weights:              weights,
		Revocation:           f.revocation,
		AllocationInterval:   *f.allocationInterval,
		OfferTimeout:         *f.offerTimeout,
		AgentPingTimeout:     *f.agentPingTimeout,
		MaxAgentPingTimeouts: f.maxAgentPingTimeouts,
		Flags:                flags,
		Logger:               log,
	})
	if err != nil {
		return nil, err
	}
	m.Start()
	srv := newServer(httpapi.New(m, httpapi.Options{Logger: log}))
	r := &runningMaster{m: m, srv: srv, ln: ln, done: make(chan error, 1)}
	go func() {
		err := serve(ctx, srv, ln)
		m.Stop()
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
	log := logger(stderr, f.logLevel)
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
	log.Info("master listening", "addr", r.addr())
	if err := <-r.done; err != nil {
		fmt.Fprintf(stderr, "mezzo master: %v\n", err)
		return 1
	}
	return 0
}
