package replog

import (
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestRegrade: each rule of regrade, and that other messages keep Raft's
// level.
func TestRegrade(t *testing.T) {
	const election = "heartbeat timeout reached, starting election"
	for _, tc := range []struct {
		name   string
		level  hclog.Level
		msg    string
		args   []any
		single bool
		want   hclog.Level
	}{
		{"start of a group member: no leader known", hclog.Warn, election,
			[]any{"last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID("")}, false, hclog.Info},
		{"single node", hclog.Warn, election,
			[]any{"last-leader-addr", raft.ServerAddress("local"), "last-leader-id", raft.ServerID("local")}, true, hclog.Info},
		{"a follower lost the leader it knew", hclog.Warn, election,
			[]any{"last-leader-addr", raft.ServerAddress("10.0.0.1:6050"), "last-leader-id", raft.ServerID("10.0.0.1:6050")}, false, hclog.Warn},
		{"own transport closing", hclog.Error, "failed to decode incoming command",
			[]any{"error", raft.ErrTransportShutdown}, false, hclog.Debug},
		{"other decode errors", hclog.Error, "failed to decode incoming command",
			[]any{"error", errors.New("unexpected EOF")}, false, hclog.Error},
		{"pre-vote notice", hclog.Warn, "pre-vote is disabled because it is not supported by the Transport", nil, false, hclog.Debug},
		{"snapshot chatter", hclog.Info, "starting snapshot up to", []any{"index", 10}, false, hclog.Debug},
		{"leadership stays INFO", hclog.Info, "entering leader state", nil, false, hclog.Info},
		{"a real warning", hclog.Warn, "failed to contact quorum of nodes, stepping down", nil, false, hclog.Warn},
	} {
		if got := regrade(tc.level, tc.msg, tc.args, tc.single); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
