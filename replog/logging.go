package replog

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"mezzo/internal/hclogslog"
)

// raftLogger is the hclog.Logger Raft and its transport and snapshot
// store log through: the process's slog handler (one format for every
// line), with the messages Raft grades too loudly for how replog uses it
// re-graded by st.regrade.
func raftLogger(c Config, st *logState) hclog.Logger {
	return hclogslog.New(c.Logger.Handler(), hclogslog.Options{Name: "raft", Adjust: st.regrade})
}

// peerReportEvery is how often one peer's failures are reported above
// DEBUG: Raft logs every failed RPC to a peer that is down (each retry,
// with backoff), a few dozen lines a second, where one line says it.
const peerReportEvery = time.Minute

// startGrace is how long after this node's start a peer it never reached
// may fail without a warning: masters of a group start one by one (three
// hosts booting), and the last is not up when the first two elect.
const startGrace = time.Minute

// logState is what regrade needs to know beyond the message: whether
// this node ever knew a leader (before that, the group is forming), which
// peers it has reached, and when each peer's failure was last reported.
// Safe for concurrent use.
type logState struct {
	single bool // a one-node group: no peer to lose
	// formed: a leader has been known since this node started (set by
	// watchLeaderProcess, or by Raft's own "entering leader state").
	formed atomic.Bool
	// closing: the process is stopping (Log.Quiesce); what Raft says about
	// peers, elections and its transport from then on is the stop's echo.
	closing atomic.Bool
	now     func() time.Time
	started time.Time

	mu       sync.Mutex
	reached  map[string]bool      // peers this node replicated to (Raft's "pipelining replication")
	reported map[string]time.Time // peer (or "election") -> last report above DEBUG
}

func newLogState(c Config) *logState {
	return &logState{single: c.single || len(c.Peers) == 1, now: time.Now, started: time.Now(),
		reached: map[string]bool{}, reported: map[string]time.Time{}}
}

// starting reports whether this node is within startGrace of its start.
func (st *logState) starting() bool { return st.now().Sub(st.started) < startGrace }

// peerFailure names Raft's messages about one peer not answering, and
// the argument that names the peer.
var peerFailure = map[string]string{
	"failed to heartbeat to":                  "peer",
	"failed to appendEntries to":              "peer",
	"failed to start pipeline replication to": "peer",
	"failed to send snapshot to":              "peer",
	"failed to make requestVote RPC":          "target",
	"failed to contact":                       "server-id",
}

// markFormed records that a leader is known. The first time, the
// reports made while the group formed are forgotten: from now on a peer
// that fails is news at once.
func (st *logState) markFormed() {
	if st.formed.Swap(true) {
		return
	}
	st.mu.Lock()
	clear(st.reported)
	st.mu.Unlock()
}

// throttled returns level for the first report about key in
// peerReportEvery and DEBUG for the rest.
func (st *logState) throttled(key string, level hclog.Level) hclog.Level {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	if last, ok := st.reported[key]; ok && now.Sub(last) < peerReportEvery {
		return hclog.Debug
	}
	st.reported[key] = now
	return level
}

// routineInfo are Raft's INFO messages that every snapshot (or the opening
// of a node) repeats: DEBUG here, where they do not bury the master's own
// lines. Leadership changes stay INFO (the master logs them too, with its
// epoch).
var routineInfo = []string{
	"starting snapshot up to",
	"snapshot complete up to",
	"compacting logs",
	"creating new snapshot",
	"reaping snapshot",
	"initial configuration",
	"pipelining replication",
	"pre-vote successful, starting election",
}

// regrade returns the level one Raft message is logged at. Each rule
// names an expected condition that Raft logs as a warning or an error.
func (st *logState) regrade(level hclog.Level, msg string, args []any) hclog.Level {
	switch msg {
	case "entering leader state":
		st.markFormed()
	case "pipelining replication":
		// The peer answers (again): its next failure is news.
		p := peerKey(argValue(args, "peer"))
		st.mu.Lock()
		st.reached[p] = true
		delete(st.reported, p)
		st.mu.Unlock()
	}
	if st.closing.Load() && level >= hclog.Warn && quietWhenClosing(msg, args) {
		return hclog.Debug
	}
	if key, ok := peerFailure[msg]; ok {
		// A peer that does not answer. Soon after this node started,
		// from a peer it never reached, that is how a group comes up
		// (masters start one by one): INFO. Otherwise a master is down
		// or cut off: WARN, not ERROR (a quorum still serves; losing it
		// is "failed to contact quorum" and the master stepping down).
		// Either way once a minute per peer, not at every retry.
		if isShutdown(args) {
			return hclog.Debug
		}
		p := peerKey(argValue(args, key))
		st.mu.Lock()
		reached := st.reached[p]
		st.mu.Unlock()
		report := hclog.Warn
		if !reached && st.starting() {
			report = hclog.Info
		}
		return st.throttled(p, min(level, report))
	}
	switch {
	case msg == "appendEntries rejected, sending older logs":
		// The leader's side of a follower that lacks entries: one that
		// just joined with an empty log or was down a while. Raft backs
		// up and sends what is missing; that is replication working, not
		// a fault (a follower that stays down is reported as a peer
		// failure). Once a minute per peer.
		return st.throttled("catch-up "+peerKey(argValue(args, "peer")), min(level, hclog.Info))
	case msg == "failed to get previous log" && argUint(args, "last-index") < argUint(args, "previous-index"):
		// The follower's side of the same: the leader's entry comes after
		// this node's last one. A mismatch inside the log (a divergent
		// entry) keeps Raft's WARN.
		return st.throttled("catch-up", min(level, hclog.Info))
	case msg == "heartbeat timeout reached, starting election":
		// Every node starts as a follower and campaigns once its
		// heartbeat timeout passes without a leader. With no leader
		// known (a start, or a new group) or no peer to have lost (a
		// single node), that is how a healthy node comes up; a WARN is
		// kept for a follower that lost a leader it knew.
		if st.single || argString(args, "last-leader-addr") == "" {
			return hclog.Info
		}
	case msg == "Election timeout reached, restarting election":
		// No quorum answered: expected while the group forms, a real
		// problem afterwards; repeated every election timeout.
		if !st.formed.Load() && st.starting() {
			return st.throttled("election", hclog.Info)
		}
		return st.throttled("election", level)
	case msg == "pre-vote is disabled because it is not supported by the Transport":
		// A fact of the transport replog chose, not a condition.
		return hclog.Debug
	case level >= hclog.Warn && isShutdown(args):
		// This node's own transport closing under a request in flight.
		return hclog.Debug
	case level == hclog.Info:
		for _, p := range routineInfo {
			if strings.HasPrefix(msg, p) {
				return hclog.Debug
			}
		}
	}
	return level
}

// quietWhenClosing reports whether a message is the echo of this process
// stopping: peers (in `mezzo local`, in the same process) going away, the
// quorum with them, elections, the transport closing.
func quietWhenClosing(msg string, args []any) bool {
	if _, ok := peerFailure[msg]; ok {
		return true
	}
	switch msg {
	case "failed to contact quorum of nodes, stepping down",
		"Election timeout reached, restarting election",
		"heartbeat timeout reached, starting election":
		return true
	}
	return isShutdown(args)
}

// argValue returns the value of key among hclog's key/value args.
func argValue(args []any, key string) any {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == key {
			return args[i+1]
		}
	}
	return nil
}

// peerKey names a peer as Raft's messages give it (a Server, an
// address or an ID; replog's IDs are the addresses).
func peerKey(v any) string {
	switch p := v.(type) {
	case raft.Server:
		return string(p.Address)
	case *raft.Server:
		return string(p.Address)
	case raft.ServerAddress:
		return string(p)
	case raft.ServerID:
		return string(p)
	case string:
		return p
	}
	return ""
}

// argString returns the value of key among hclog's key/value args as a
// string ("" if absent).
func argString(args []any, key string) string {
	switch v := argValue(args, key).(type) {
	case string:
		return v
	case raft.ServerAddress:
		return string(v)
	case raft.ServerID:
		return string(v)
	}
	return ""
}

// argUint returns the value of key among hclog's key/value args as an
// unsigned integer (0 if absent or of another type).
func argUint(args []any, key string) uint64 {
	if v, ok := argValue(args, key).(uint64); ok {
		return v
	}
	return 0
}

// isShutdown reports whether a message's "error" is Raft's transport
// shutting down (this node is closing).
func isShutdown(args []any) bool {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "error" {
			if err, ok := args[i+1].(error); ok {
				return errors.Is(err, raft.ErrTransportShutdown) || err.Error() == raft.ErrTransportShutdown.Error()
			}
		}
	}
	return false
}

// defaultLogger is Config.Logger's default: text on LogOutput at LogLevel.
func defaultLogger(c Config) *slog.Logger {
	var lv slog.Level
	switch strings.ToLower(c.LogLevel) {
	case "trace":
		lv = hclogslog.LevelTrace
	case "debug":
		lv = slog.LevelDebug
	case "info":
		lv = slog.LevelInfo
	case "error":
		lv = slog.LevelError
	default:
		lv = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(c.LogOutput, &slog.HandlerOptions{Level: lv}))
}
