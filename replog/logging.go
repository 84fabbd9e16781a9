package replog

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"mezzo/internal/hclogslog"
)

// raftLogger is the hclog.Logger Raft and its transport and snapshot
// store log through: the process's slog handler (one format for every
// line), with the messages Raft grades too loudly for how replog uses it
// re-graded by regrade.
func raftLogger(c Config) hclog.Logger {
	single := c.single || len(c.Peers) == 1
	return hclogslog.New(c.Logger.Handler(), hclogslog.Options{
		Name:   "raft",
		Adjust: func(level hclog.Level, msg string, args []any) hclog.Level { return regrade(level, msg, args, single) },
	})
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
func regrade(level hclog.Level, msg string, args []any, single bool) hclog.Level {
	switch {
	case msg == "heartbeat timeout reached, starting election":
		// Every node starts as a follower and campaigns once its
		// heartbeat timeout passes without a leader. With no leader
		// known (a start, or a new group) or no peer to have lost (a
		// single node), that is how a healthy node comes up; a WARN is
		// kept for a follower that lost a leader it knew.
		if single || argString(args, "last-leader-addr") == "" {
			return hclog.Info
		}
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

// argString returns the value of key among hclog's key/value args as a
// string ("" if absent).
func argString(args []any, key string) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == key {
			switch v := args[i+1].(type) {
			case string:
				return v
			case raft.ServerAddress:
				return string(v)
			case raft.ServerID:
				return string(v)
			}
		}
	}
	return ""
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
