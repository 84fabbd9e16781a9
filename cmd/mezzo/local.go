package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mezzo/agent"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"mezzo/cli"
	"mezzo/frameworks/run"
	"mezzo/internal/tlsconfig"
	"mezzo/replog"
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
	stream := fs.Bool("stream", true, "with a command: print its stdout and stderr here (status lines go to stderr); --stream=false prints only status lines")
	withTLS := fs.Bool("tls", false,
		"make a throwaway CA and certificate under <work_dir>/tls and run the whole cluster over mutual TLS (clients: --tls_ca_file, --tls_cert_file, --tls_key_file from there)")
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
	nMasters := 1
	if mf.masters != "" {
		n, err := strconv.Atoi(mf.masters)
		if err != nil || n < 1 || n > 9 {
			fmt.Fprintf(stderr, "mezzo local: --masters=%q: give the number of masters to run (1-9), e.g. --masters=3\n", mf.masters)
			return 2
		}
		nMasters = n
	}
	log, logging, err := logger(stderr, mf.logLevel, mf.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo local: %v\n", err)
		return 2
	}
	bridgeStdLog(log)
	mf.logging, af.logging = logging, logging

	if *withTLS {
		if mf.tls.files.Enabled() {
			fmt.Fprintln(stderr, "mezzo local: --tls makes its own certificates; leave out --tls_cert_file, --tls_key_file and --tls_ca_file")
			return 2
		}
		hosts := []string{mf.ip, "localhost", "127.0.0.1"}
		if mf.hostname != "" {
			hosts = append(hosts, mf.hostname)
		}
		files, err := tlsconfig.Throwaway(filepath.Join(dir, "tls"), hosts, time.Now(), 30*24*time.Hour)
		if err != nil {
			fmt.Fprintf(stderr, "mezzo local: --tls: %v\n", err)
			return 1
		}
		files.VerifyPeer = true
		mf.tls.files = files
	}
	ctx, cancel := signalContext()
	defer cancel()
	masters, err := startLocalMasters(ctx, mf, fs, dir, nMasters, log)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo local: master: %v\n", err)
		return 1
	}
	addrs := make([]string, len(masters))
	for i, m := range masters {
		addrs[i] = m.addr()
	}
	masterAddr := strings.Join(addrs, ",")
	running := make([]*runningAgent, 0, *agents)
	for i := 0; i < *agents; i++ {
		f := *af
		f.master = masterAddr
		f.ip = mf.ip
		f.hostname = mf.hostname
		f.workDir = filepath.Join(dir, fmt.Sprintf("agent%d", i+1))
		f.killOnExit = true
		// One --credential for the whole cluster: the master reads agents
		// with it, the agents register with it, a command runs with it.
		// The agents take the master's credentials, realms and ACLs.
		f.credential = mf.credential
		f.auth = mf.auth
		f.tls = mf.tls
		aln, err := net.Listen("tcp", net.JoinHostPort(mf.ip, "0"))
		if err != nil {
			fmt.Fprintf(stderr, "mezzo local: agent %d: %v\n", i+1, err)
			return 1
		}
		r, err := startAgent(ctx, &f, aln, agent.DefaultHTTPClient(), log.With("agent", i+1))
		if err != nil {
			aln.Close()
			fmt.Fprintf(stderr, "mezzo local: agent %d: %v\n", i+1, err)
			return 1
		}
		running = append(running, r)
	}
	tlsSrc := masters[0].tls
	var sources []*tlsconfig.Source
	for _, m := range masters {
		sources = append(sources, m.tls)
	}
	for _, a := range running {
		sources = append(sources, a.tls)
	}
	reloadOnHUP(ctx, log, sources...)
	leader, err := waitLeaderReady(ctx, masters, *agents, 30*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo local: %v\n", err)
		return 1
	}
	// With a command, stdout is the task's: the cluster's address goes to
	// stderr.
	banner := stdout
	if len(command) > 0 {
		banner = stderr
	}
	scheme := "http"
	if tlsSrc != nil {
		scheme = "https"
	}
	if len(masters) == 1 {
		fmt.Fprintf(banner, "mezzo local: master at %s://%s with %d agent(s); work dir %s\n", scheme, masterAddr, *agents, dir)
	} else {
		fmt.Fprintf(banner, "mezzo local: %d masters at %s (leader %s://%s) with %d agent(s); work dir %s\n",
			len(masters), masterAddr, scheme, leader.addr(), *agents, dir)
	}
	if tlsSrc != nil {
		f := tlsSrc.Files()
		fmt.Fprintf(banner, "mezzo local: TLS: clients use --tls_ca_file=%s --tls_cert_file=%s --tls_key_file=%s\n", f.CA, f.Cert, f.Key)
	}

	if len(command) > 0 {
		client := clientFlags{tls: mf.tls, credential: mf.credential}
		transport, cred, err := client.transport()
		if err != nil {
			fmt.Fprintf(stderr, "mezzo local: %v\n", err)
			return 1
		}
		opts := run.Options{
			Masters:    addrs,
			Command:    command,
			Resources:  *runResources,
			Out:        stderr,
			Log:        stderr,
			Credential: cred,
			HTTPClient: &http.Client{Transport: transport},
			Output: &cli.TaskOutput{Masters: addrs, Stdout: stdout, Stderr: stderr,
				HTTP: &http.Client{Timeout: cli.DefaultTimeout, Transport: transport}},
		}
		if !*stream {
			opts.Out, opts.Output = stdout, nil
		}
		code, err := run.Run(ctx, opts)
		if err != nil {
			fmt.Fprintf(stderr, "mezzo local: run: %v\n", err)
		}
		cancel()
		waitAllStopped(masters, running)
		return code
	}
	select {
	case <-ctx.Done():
	case err := <-fatalOf(masters):
		fmt.Fprintf(stderr, "mezzo local: FATAL: %v\n", err)
		cancel()
		waitAllStopped(masters, running)
		return 1
	}
	waitAllStopped(masters, running)
	return 0
}

// startLocalMasters starts n masters on loopback. One master keeps the
// flags' port and a registry under <dir>/master; several form a Raft
// group, each on its own HTTP port (from --port up, or free ports) with
// its Raft port at HTTP port + 1000, and a registry under <dir>/masterN.
func startLocalMasters(ctx context.Context, mf *masterFlags, fs *flag.FlagSet, dir string, n int, log *slog.Logger) ([]*runningMaster, error) {
	if n == 1 {
		f := *mf
		f.masters = ""
		f.workDir = filepath.Join(dir, "master")
		ln, err := net.Listen("tcp", net.JoinHostPort(f.ip, strconv.Itoa(f.port)))
		if err != nil {
			return nil, err
		}
		m, err := startMaster(ctx, &f, fs, ln, log)
		if err != nil {
			ln.Close()
			return nil, err
		}
		return []*runningMaster{m}, nil
	}
	lns, err := listenMasters(mf.ip, mf.port, n)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, n)
	for i, ln := range lns {
		addrs[i] = ln.Addr().String()
	}
	var out []*runningMaster
	for i, ln := range lns {
		f := *mf
		f.masters = strings.Join(addrs, ",")
		f.port = ln.Addr().(*net.TCPAddr).Port
		f.workDir = filepath.Join(dir, fmt.Sprintf("master%d", i+1))
		m, err := startMaster(ctx, &f, fs, ln, log.With("master", i+1))
		if err != nil {
			for _, l := range lns[i:] {
				l.Close()
			}
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// listenMasters listens on n HTTP ports whose Raft ports (+1000) are free
// too: consecutive from base, or chosen by the system when base is 0.
func listenMasters(ip string, base, n int) ([]net.Listener, error) {
	var lns []net.Listener
	closeAll := func() {
		for _, l := range lns {
			l.Close()
		}
	}
	for i := 0; len(lns) < n; i++ {
		if i > 100 {
			closeAll()
			return nil, fmt.Errorf("could not find %d free port pairs (HTTP and HTTP+%d)", n, replog.PortOffset)
		}
		port := 0
		if base != 0 {
			port = base + len(lns)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			closeAll()
			return nil, err
		}
		p := ln.Addr().(*net.TCPAddr).Port
		raft, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p+replog.PortOffset)))
		if err != nil {
			ln.Close()
			if base != 0 {
				closeAll()
				return nil, fmt.Errorf("master port %d: its Raft port %d is taken: %v", p, p+replog.PortOffset, err)
			}
			continue
		}
		raft.Close()
		lns = append(lns, ln)
	}
	return lns, nil
}

// fatalOf merges the masters' fatal errors.
func fatalOf(masters []*runningMaster) <-chan error {
	out := make(chan error, len(masters))
	for _, m := range masters {
		go func() {
			if err, ok := <-m.fatal; ok {
				out <- err
			}
		}()
	}
	return out
}

// waitLeaderReady polls until a master leads, answers /health, and has n
// agents registered; it returns the leader.
func waitLeaderReady(ctx context.Context, masters []*runningMaster, n int, timeout time.Duration) (*runningMaster, error) {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	if src := masters[0].tls; src != nil {
		client.Transport = src.Transport()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var leader *runningMaster
		for _, m := range masters {
			if s := m.m.Snapshot(); s != nil && s.Elected {
				leader = m
			}
		}
		healthy, registered := false, 0
		if leader != nil {
			if resp, err := client.Get("http://" + leader.addr() + "/health"); err == nil {
				healthy = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
			registered = len(leader.m.Snapshot().Agents)
		}
		if healthy && registered >= n {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("cluster not ready after %v: leader elected=%v, healthy=%v, %d of %d agents registered", timeout, leader != nil, healthy, registered, n)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// waitAllStopped waits (bounded) for the servers to finish shutting down.
func waitAllStopped(masters []*runningMaster, agents []*runningAgent) {
	// Bounded by more than an executor's shutdown grace (5 s by default):
	// an agent stopping with killOnExit destroys its containers on its
	// loop, and returning before that ends would let this process exit
	// with the destroys half done and the tasks still running.
	timeout := time.After(30 * time.Second)
	for _, a := range agents {
		select {
		case <-a.done: // its HTTP server
		case <-timeout:
			return
		}
		select {
		case <-a.a.Done(): // its loop, containers destroyed
		case <-timeout:
			return
		}
	}
	for _, m := range masters {
		select {
		case <-m.done:
		case <-timeout:
			return
		}
	}
}

// waitReady polls until the single master m (at addr) answers /health and
// has n agents registered.
func waitReady(ctx context.Context, addr string, m *runningMaster, n int, timeout time.Duration) error {
	_, err := waitLeaderReady(ctx, []*runningMaster{m}, n, timeout)
	return err
}

// waitStopped waits (bounded) for a master and agents to shut down.
func waitStopped(m *runningMaster, agents []*runningAgent) {
	waitAllStopped([]*runningMaster{m}, agents)
}
