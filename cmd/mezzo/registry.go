package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"mezzo/master"
	"mezzo/master/registrar"
	"mezzo/replog"
)

// registry is a master's replicated registry: the Raft log under
// <work_dir>/registry, the registry state machine and the batching
// registrar, with the adapters the master takes (Registrar, Election).
type registry struct {
	log      *replog.Log
	reg      *registrar.Registrar
	adapter  *master.ReplicatedRegistrar
	election *raftElection
}

// registryConfig is what openRegistry needs from the flags.
type registryConfig struct {
	workDir string
	// self is this master's HTTP address as listed in masters ("" for a
	// single master); masters are every master's HTTP address.
	self    string
	masters []string
	// bindIP is the IP the Raft transport listens on (--ip).
	bindIP       string
	strict       bool
	raftTimeout  time.Duration
	raftLease    time.Duration // replog.Config.LeaseTimeout (0: default)
	storeTimeout time.Duration
	onFatal      func(error)
	// log is the process's logger; Raft logs through it too.
	log *slog.Logger
	// serverTLS and clientTLS carry Raft over mutual TLS (nil: TCP).
	serverTLS, clientTLS *tls.Config
}

// openRegistry opens (or creates) the registry. One master: a one-node
// Raft group on local disk. Several: this node of the group whose voters
// are the masters' Raft addresses (HTTP port + 1000).
func openRegistry(c registryConfig) (*registry, error) {
	if c.workDir == "" {
		return nil, fmt.Errorf("--work_dir is required: the master keeps its registry (the replicated log) there; use --registry=in_memory to run without one (state is lost on restart)")
	}
	lc := replog.Config{
		Dir:       filepath.Join(c.workDir, "registry"),
		Bootstrap: true,
		Logger:    c.log,
		OnFatal:   c.onFatal,
	}
	if len(c.masters) > 0 {
		for _, m := range c.masters {
			ra, err := replog.RaftAddr(m)
			if err != nil {
				return nil, fmt.Errorf("--masters: %v", err)
			}
			lc.Peers = append(lc.Peers, ra)
		}
		adv, err := replog.RaftAddr(c.self)
		if err != nil {
			return nil, fmt.Errorf("--masters: %v", err)
		}
		_, port, _ := net.SplitHostPort(adv)
		lc.BindAddr = net.JoinHostPort(c.bindIP, port)
		lc.Advertise = adv
		lc.ID = adv
		if c.raftTimeout > 0 {
			lc.HeartbeatTimeout = c.raftTimeout
			lc.ElectionTimeout = c.raftTimeout
		}
		lc.LeaseTimeout = c.raftLease
		lc.ServerTLS, lc.ClientTLS = c.serverTLS, c.clientTLS
	}
	m := registrar.NewMachine()
	l, err := replog.Open(lc, m)
	if err != nil {
		return nil, err
	}
	reg, err := registrar.New(registrar.Config{Store: l, Machine: m, Strict: c.strict, WriteTimeout: c.storeTimeout})
	if err != nil {
		l.Close()
		return nil, err
	}
	return &registry{
		log:      l,
		reg:      reg,
		adapter:  master.NewReplicatedRegistrar(reg, nil),
		election: &raftElection{log: l, self: c.self, single: len(c.masters) == 0, suspect: c.raftTimeout / 4},
	}, nil
}

// Close stops the registrar, then the Raft node.
func (r *registry) Close() {
	r.reg.Close()
	r.log.Close()
}

// raftElection adapts replog.Log to master.Election: Raft leadership is
// master leadership; the leader's HTTP address is its Raft address minus
// the port offset.
type raftElection struct {
	log    *replog.Log
	self   string
	single bool
	// suspect: a follower that has not heard from the leader for this
	// long reports no leader (it is probably dead and an election is
	// coming), so requests wait for the new one instead of being sent to
	// a dead address. 0: never.
	suspect time.Duration
}

func (e *raftElection) LeaderCh() <-chan bool { return e.log.LeaderCh() }
func (e *raftElection) IsLeader() bool        { return e.log.IsLeader() }
func (e *raftElection) Term() uint64          { return e.log.Term() }

func (e *raftElection) LeaderAddr() string {
	if e.single {
		return e.self // "" until the master knows its address
	}
	addr, _ := e.log.Leader()
	if addr == "" {
		return ""
	}
	if e.suspect > 0 && !e.log.IsLeader() {
		// Raft's own view of its last contact with the leader.
		if d, err := time.ParseDuration(e.log.Stats()["last_contact"]); err == nil && d > e.suspect {
			return ""
		}
	}
	h, err := replog.HTTPAddr(addr)
	if err != nil {
		return ""
	}
	return h
}

// parseMasters parses --masters (comma-separated HTTP addresses) and
// finds this master in it: the entry with this port whose host is --ip,
// --hostname, or resolves to --ip.
func parseMasters(list, ip, hostname string, port int) (all []string, self string, err error) {
	seen := map[string]bool{}
	for _, m := range strings.Split(list, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		m = strings.TrimPrefix(m, "http://")
		host, p, err := net.SplitHostPort(m)
		if err != nil {
			return nil, "", fmt.Errorf("--masters: %q is not host:port: %v", m, err)
		}
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n+replog.PortOffset > 65535 {
			return nil, "", fmt.Errorf("--masters: %q: bad port (the Raft port, port+%d, must be valid too)", m, replog.PortOffset)
		}
		if seen[m] {
			return nil, "", fmt.Errorf("--masters: %q is listed twice", m)
		}
		seen[m] = true
		all = append(all, m)
		if p != strconv.Itoa(port) {
			continue
		}
		if host == ip || host == hostname || resolvesTo(host, ip) {
			if self != "" {
				return nil, "", fmt.Errorf("--masters: both %q and %q could be this master (--ip=%s --port=%d)", self, m, ip, port)
			}
			self = m
		}
	}
	if len(all) == 0 {
		return nil, "", fmt.Errorf("--masters: no address given")
	}
	if self == "" {
		return nil, "", fmt.Errorf("--masters=%s does not list this master (--ip=%s or --hostname=%s, --port=%d)", list, ip, hostname, port)
	}
	return all, self, nil
}

func resolvesTo(host, ip string) bool {
	addrs, err := net.LookupHost(host)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if a == ip {
			return true
		}
	}
	return false
}

// parseRateLimit parses --agent_removal_rate_limit ("1/10mins": one
// removal per ten minutes) into the interval between removals.
func parseRateLimit(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	n, per, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err != nil || count <= 0 {
		return 0, fmt.Errorf("--agent_removal_rate_limit: %q is not <number>/<duration> (e.g. 1/10mins)", s)
	}
	var d time.Duration
	if err := (durationValue{&d}).Set(strings.TrimSpace(per)); err != nil || d <= 0 {
		return 0, fmt.Errorf("--agent_removal_rate_limit: %q: bad duration %q", s, per)
	}
	return d / time.Duration(count), nil
}
