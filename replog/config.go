package replog

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// StateMachine is what the log drives (master/registrar.Machine
// implements it). The threading contract is hashicorp/raft's FSM's:
//   - Apply and Snapshot are called from one goroutine, in log order,
//     never concurrently with each other.
//   - Snapshot must return quickly, capturing the state; the function it
//     returns writes the capture and may run concurrently with Apply.
//   - Restore replaces the whole state; nothing else runs meanwhile.
//   - Apply must be deterministic: every replica applies the same entries.
//     Its error is returned by the Append that wrote the entry (on the
//     leader); the entry stays in the log either way.
type StateMachine interface {
	Apply(entry []byte) error
	Snapshot() (func(w io.Writer) error, error)
	Restore(r io.Reader) error
}

// SingleNodeID is the server ID of a single-node group's node.
const SingleNodeID = "local"

// Config configures one node of the group.
type Config struct {
	// Dir holds this node's state: raft.db (log and stable store) and
	// snapshots/. Created if missing. Required.
	Dir string
	// Peers are the Raft addresses of every voter, this node included,
	// each also its server ID. Empty: a single-node group, which opens no
	// port (an in-process transport) and has the fixed ID SingleNodeID, so
	// the master's address may change between runs.
	Peers []string
	// BindAddr is the Raft transport's listen address (host:port) in a
	// group of several nodes (unused by a single node). With the derivation scheme it is
	// RaftAddr(the master's HTTP address).
	BindAddr string
	// Advertise is the address peers reach this node at (default
	// BindAddr; required when BindAddr's host is unspecified, e.g. ":6050").
	Advertise string
	// ID is this node's Raft server ID (default: Advertise; it must be one
	// of Peers).
	ID string
	// Bootstrap creates the group's initial configuration (Peers) when Dir
	// holds no Raft state yet. Every node of a new group may bootstrap
	// with the same Peers; a node with state ignores it.
	Bootstrap bool

	// HeartbeatTimeout and ElectionTimeout are Raft's. Zero: 1s each for a
	// group of several nodes (hashicorp/raft's defaults); 100ms for a
	// single node (20ms: it has no peer to lose touch with, and it elects
	// itself as soon as the timeout passes, so a restart serves quickly).
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration
	// LeaseTimeout is Raft's leader lease: a leader that has not heard
	// from a quorum for this long steps down. Raft allows at most
	// HeartbeatTimeout, the default: until then no follower may campaign
	// anyway, and a shorter lease only makes a leader that is busy (say,
	// with every agent re-registering after a failover) step down for
	// nothing.
	LeaseTimeout time.Duration
	// CampaignStagger is how long each surviving voter waits for the one
	// before it to win, once the leader's process is found gone
	// (deathwatch.go): the first campaigns at once. Default:
	// HeartbeatTimeout/4.
	CampaignStagger time.Duration
	// CommitTimeout is Raft's (default 50ms).
	CommitTimeout time.Duration

	// SnapshotMinBytes: a snapshot is taken once the entries written since
	// the last one exceed both this (default 1 MiB) and the last
	// snapshot's size, so the log on disk stays about the registry's size
	// and a restart replays at most about one snapshot's worth of log.
	SnapshotMinBytes int64
	// TrailingLogs is how many entries a snapshot leaves in the log for
	// followers to catch up from (default 32; a follower further behind
	// gets the snapshot, which is small).
	TrailingLogs uint64

	// Logger receives Raft's log (and replog's own), through an hclog
	// adapter, so that Raft's lines come in the process's format and at
	// its level; Raft's routine and expected messages are re-graded
	// (logging.go). Default: a text logger on LogOutput at LogLevel.
	Logger *slog.Logger
	// LogOutput and LogLevel ("trace", "debug", "info", "warn", "error";
	// default "warn") make the default Logger; ignored when Logger is
	// set. Default output: os.Stderr.
	LogOutput io.Writer
	LogLevel  string

	// OnFatal is called once, on its own goroutine, when this node cannot
	// write to its disk; the node has already stepped down and shut its
	// Raft down. cmd/ exits loudly. Default: log only.
	OnFatal func(error)

	// ServerTLS and ClientTLS, when set, carry the Raft traffic among the
	// masters over TLS: the listener takes ServerTLS (which should require
	// and verify the peers' certificates: any process that can reach the
	// Raft port could otherwise write the registry) and the dialler
	// ClientTLS, which must present this master's certificate. Both or
	// neither. Unused by a single node.
	ServerTLS, ClientTLS *tls.Config

	// single: Peers was empty (in-memory transport).
	single bool
	// transport replaces the TCP transport (tests build theirs first to
	// learn the ports).
	transport raft.Transport
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if cfg.Dir == "" {
		return cfg, errors.New("replog: Config.Dir is required")
	}
	switch {
	case len(cfg.Peers) == 0:
		// Single node: the in-memory transport, a fixed ID.
		if cfg.ID == "" {
			cfg.ID = SingleNodeID
		}
		if cfg.Advertise == "" {
			cfg.Advertise = cfg.ID
		}
		cfg.Peers = []string{cfg.ID}
		cfg.single = true
	case cfg.transport == nil:
		if cfg.BindAddr == "" {
			return cfg, errors.New("replog: Config.BindAddr is required with Config.Peers")
		}
		if _, _, err := net.SplitHostPort(cfg.BindAddr); err != nil {
			return cfg, fmt.Errorf("replog: Config.BindAddr %q: %w", cfg.BindAddr, err)
		}
		if cfg.Advertise == "" {
			cfg.Advertise = cfg.BindAddr
		}
	default:
		if cfg.Advertise == "" {
			cfg.Advertise = string(cfg.transport.LocalAddr())
		}
	}
	if cfg.ID == "" {
		cfg.ID = cfg.Advertise
	}
	if !slices.Contains(cfg.Peers, cfg.ID) {
		return cfg, fmt.Errorf("replog: Config.Peers %v does not include this node's ID %q", cfg.Peers, cfg.ID)
	}
	if (cfg.ServerTLS == nil) != (cfg.ClientTLS == nil) {
		return cfg, errors.New("replog: Config.ServerTLS and Config.ClientTLS go together")
	}
	seen := map[string]bool{}
	for _, p := range cfg.Peers {
		if seen[p] {
			return cfg, fmt.Errorf("replog: Config.Peers lists %q twice", p)
		}
		seen[p] = true
	}
	single := len(cfg.Peers) == 1
	if cfg.HeartbeatTimeout == 0 {
		cfg.HeartbeatTimeout = pick(single, 20*time.Millisecond, time.Second)
	}
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = pick(single, 20*time.Millisecond, time.Second)
	}
	if cfg.LeaseTimeout == 0 {
		cfg.LeaseTimeout = cfg.HeartbeatTimeout
	}
	if cfg.LeaseTimeout > cfg.HeartbeatTimeout {
		return cfg, fmt.Errorf("replog: Config.LeaseTimeout %v is longer than HeartbeatTimeout %v", cfg.LeaseTimeout, cfg.HeartbeatTimeout)
	}
	if cfg.CampaignStagger == 0 {
		cfg.CampaignStagger = max(cfg.HeartbeatTimeout/4, 5*time.Millisecond)
	}
	if cfg.CommitTimeout == 0 {
		cfg.CommitTimeout = 50 * time.Millisecond
	}
	if cfg.SnapshotMinBytes == 0 {
		cfg.SnapshotMinBytes = 1 << 20
	}
	if cfg.TrailingLogs == 0 {
		cfg.TrailingLogs = 32
	}
	if cfg.LogOutput == nil {
		cfg.LogOutput = os.Stderr
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "warn"
	}
	if cfg.Logger == nil {
		cfg.Logger = defaultLogger(cfg)
	}
	return cfg, nil
}

func pick[T any](cond bool, a, b T) T {
	if cond {
		return a
	}
	return b
}

// raftConfig builds hashicorp/raft's configuration from ours.
func (c *Config) raftConfig(notify chan bool) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.ID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.TrailingLogs = c.TrailingLogs
	// Snapshots are driven by size (see SnapshotMinBytes); Raft's own
	// entry-count trigger stays as a backstop.
	rc.SnapshotThreshold = 8192
	rc.NotifyCh = notify
	return rc
}
