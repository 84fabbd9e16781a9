package replog

import (
	"errors"
	"testing"
	"time"

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
		{"leader: a new or returning follower lacks entries", hclog.Warn, "appendEntries rejected, sending older logs",
			[]any{"peer", raft.Server{ID: "b:6050", Address: "b:6050"}, "next", uint64(1)}, false, hclog.Info},
		{"follower: behind the leader (an empty log)", hclog.Warn, "failed to get previous log",
			[]any{"previous-index", uint64(1), "last-index", uint64(0), "error", raft.ErrLogNotFound}, false, hclog.Info},
		{"follower: an entry missing inside its log", hclog.Warn, "failed to get previous log",
			[]any{"previous-index", uint64(5), "last-index", uint64(9), "error", raft.ErrLogNotFound}, false, hclog.Warn},
		{"a real warning", hclog.Warn, "failed to contact quorum of nodes, stepping down", nil, false, hclog.Warn},
	} {
		st := newLogState(Config{single: tc.single})
		if got := st.regrade(tc.level, tc.msg, tc.args); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRegradePeerFailures: a peer that does not answer is INFO soon
// after the start if this node never reached it (the group forming), WARN
// (not ERROR) otherwise, and reported once a minute per peer, not at
// every retry.
func TestRegradePeerFailures(t *testing.T) {
	now := time.Unix(1000, 0)
	st := newLogState(Config{Peers: []string{"a:6050", "b:6050", "c:6050"}})
	st.now, st.started = func() time.Time { return now }, now
	refused := errors.New("dial tcp b:6050: connect: connection refused")
	heartbeat := func(peer string) hclog.Level {
		return st.regrade(hclog.Error, "failed to heartbeat to", []any{"peer", raft.ServerAddress(peer), "error", refused})
	}
	vote := func(peer string) hclog.Level {
		return st.regrade(hclog.Error, "failed to make requestVote RPC",
			[]any{"target", raft.Server{ID: raft.ServerID(peer), Address: raft.ServerAddress(peer)}, "error", refused})
	}
	pipelining := func(peer string) hclog.Level {
		return st.regrade(hclog.Info, "pipelining replication", []any{"peer", raft.Server{Address: raft.ServerAddress(peer)}})
	}
	electionTimeout := func() hclog.Level {
		return st.regrade(hclog.Warn, "Election timeout reached, restarting election", nil)
	}
	steps := []struct {
		name string
		got  func() hclog.Level
		want hclog.Level
	}{
		{"forming: first refusal of b", func() hclog.Level { return vote("b:6050") }, hclog.Info},
		{"forming: b again", func() hclog.Level { return heartbeat("b:6050") }, hclog.Debug},
		{"forming: c, another peer", func() hclog.Level { return vote("c:6050") }, hclog.Info},
		{"forming: election timeout", electionTimeout, hclog.Info},
		{"elected", func() hclog.Level { return st.regrade(hclog.Info, "entering leader state", nil) }, hclog.Info},
		{"c not up yet, soon after the start", func() hclog.Level { return heartbeat("c:6050") }, hclog.Info},
		{"b replicated to", func() hclog.Level { return pipelining("b:6050") }, hclog.Debug},
		{"b fails: news at once, WARN not ERROR", func() hclog.Level { return heartbeat("b:6050") }, hclog.Warn},
		{"b retry within the minute: DEBUG", func() hclog.Level { return heartbeat("b:6050") }, hclog.Debug},
		{"a minute later: WARN again", func() hclog.Level { now = now.Add(peerReportEvery); return heartbeat("b:6050") }, hclog.Warn},
		{"b retry: DEBUG", func() hclog.Level { return heartbeat("b:6050") }, hclog.Debug},
		{"b answers again", func() hclog.Level { return pipelining("b:6050") }, hclog.Debug},
		{"b fails again: news at once", func() hclog.Level { return heartbeat("b:6050") }, hclog.Warn},
		{"c never came up, past the grace: WARN", func() hclog.Level {
			return st.regrade(hclog.Warn, "failed to contact", []any{"server-id", raft.ServerID("c:6050"), "time", time.Second})
		}, hclog.Warn},
		{"formed, election timeout", electionTimeout, hclog.Warn},
	}
	for _, s := range steps {
		if got := s.got(); got != s.want {
			t.Errorf("%s: %v, want %v", s.name, got, s.want)
		}
	}
}

// TestRegradeGroupThatNeverForms: past the start grace, a node that never
// saw a leader warns (its peers are misconfigured or down), once a minute.
func TestRegradeGroupThatNeverForms(t *testing.T) {
	now := time.Unix(1000, 0)
	st := newLogState(Config{Peers: []string{"a:6050", "b:6050", "c:6050"}})
	st.now, st.started = func() time.Time { return now }, now
	now = now.Add(startGrace)
	if got := st.regrade(hclog.Warn, "Election timeout reached, restarting election", nil); got != hclog.Warn {
		t.Errorf("election timeout past the grace: %v, want WARN", got)
	}
	if got := st.regrade(hclog.Error, "failed to make requestVote RPC", []any{"target", raft.Server{Address: "b:6050"}}); got != hclog.Warn {
		t.Errorf("unreachable peer past the grace: %v, want WARN", got)
	}
}

// TestRegradeWhileClosing: once the process stops (Quiesce), Raft's
// complaints about peers, the quorum and elections are DEBUG; other
// errors keep their level.
func TestRegradeWhileClosing(t *testing.T) {
	st := newLogState(Config{Peers: []string{"a:6050", "b:6050", "c:6050"}})
	st.markFormed()
	st.closing.Store(true)
	for _, tc := range []struct {
		level hclog.Level
		msg   string
		args  []any
		want  hclog.Level
	}{
		{hclog.Error, "failed to heartbeat to", []any{"peer", raft.ServerAddress("b:6050"), "error", errors.New("EOF")}, hclog.Debug},
		{hclog.Warn, "failed to contact quorum of nodes, stepping down", nil, hclog.Debug},
		{hclog.Error, "failed to decode incoming command", []any{"error", raft.ErrTransportShutdown}, hclog.Debug},
		{hclog.Error, "failed to commit logs", []any{"error", errors.New("disk full")}, hclog.Error},
	} {
		if got := st.regrade(tc.level, tc.msg, tc.args); got != tc.want {
			t.Errorf("%s while closing: %v, want %v", tc.msg, got, tc.want)
		}
	}
}
