package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"mezzo/frameworks/run"
)

// runLocal starts a master and N agents in this process, all on loopback,
// waits until every agent has registered, and then either serves until
// interrupted or, given a command after "--", runs it like `mezzo run` and
// exits with its code.
func runLocal(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("local", stderr)
	mf := addMasterFlags(fs)
	af := addAgentFlags(fs, false)
	agents := fs.Int("agents", 1, "number of agents")
	runResources := fs.String("run_resources", "cpus:0.1;mem:32", "resources for the command given after --")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	command := fs.Args()
	if *agents < 0 {
		fmt.Fprintln(stderr, "mezzo local: --agents must be >= 0")
		return 2
	}
	dir := mf.workDir // --work_dir: the cluster's root; default a new temporary directory
	if dir == "" {
		d, err := os.MkdirTemp("", "mezzo-local-")
		if err != nil {
			fmt.Fprintf(stderr, "mezzo local: %v\n", err)
			return 1
		}
		dir = d
	}
	mf.workDir = filepath.Join(dir, "master")
	log := logger(stderr, mf.logLevel)

	ctx, cancel := signalContext()
	defer cancel()
	ln, err := net.Listen("tcp", net.JoinHostPort(mf.ip, strconv.Itoa(mf.port)))
	if err != nil {
		fmt.Fprintf(stderr, "mezzo local: master: %v\n", err)
		return 1
	}
	m, err := startMaster(ctx, mf, fs, ln, log)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "mezzo local: master: %v\n", err)
		return 1
	}
	masterAddr := m.addr()
	running := make([]*runningAgent, 0, *agents)
	for i := 0; i < *agents; i++ {
		f := *af
		f.master = masterAddr
		f.ip = mf.ip
		f.hostname = mf.hostname
		f.workDir = filepath.Join(dir, fmt.Sprintf("agent%d", i+1))
		f.killOnExit = true
		aln, err := net.Listen("tcp", net.JoinHostPort(mf.ip, "0"))
		if err != nil {
			fmt.Fprintf(stderr, "mezzo local: agent %d: %v\n", i+1, err)
			return 1
		}
		r, err := startAgent(ctx, &f, aln, nil, log.With("agent", i+1))
		if err != nil {
			aln.Close()
			fmt.Fprintf(stderr, "mezzo local: agent %d: %v\n", i+1, err)
			return 1
		}
		running = append(running, r)
	}
	if err := waitReady(ctx, masterAddr, m, *agents, 30*time.Second); err != nil {
		fmt.Fprintf(stderr, "mezzo local: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "mezzo local: master at http://%s with %d agent(s); work dir %s\n", masterAddr, *agents, dir)

	if len(command) > 0 {
		code, err := run.Run(ctx, run.Options{
			Masters:   []string{masterAddr},
			Command:   command,
			Resources: *runResources,
			Out:       stdout,
		})
		if err != nil {
			fmt.Fprintf(stderr, "mezzo local: run: %v\n", err)
		}
		cancel()
		waitStopped(m, running)
		return code
	}
	<-ctx.Done()
	waitStopped(m, running)
	return 0
}

// waitReady polls until the master answers /health and n agents are registered.
func waitReady(ctx context.Context, addr string, m *runningMaster, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		healthy := false
		if resp, err := client.Get("http://" + addr + "/health"); err == nil {
			healthy = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		registered := 0
		if s := m.m.Snapshot(); s != nil {
			registered = len(s.Agents)
		}
		if healthy && registered >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ready after %v: healthy=%v, %d of %d agents registered", timeout, healthy, registered, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitStopped waits (bounded) for the servers to finish shutting down.
func waitStopped(m *runningMaster, agents []*runningAgent) {
	timeout := time.After(10 * time.Second)
	for _, a := range agents {
		select {
		case <-a.done:
		case <-timeout:
			return
		}
	}
	select {
	case <-m.done:
	case <-timeout:
	}
}
