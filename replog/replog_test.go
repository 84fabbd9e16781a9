package replog

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/master/registrar"
)

var _ registrar.Store = (*Log)(nil)
var _ StateMachine = (*registrar.Machine)(nil)

func testCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

func masterInfo(id string) *mesos.MasterInfo {
	return &mesos.MasterInfo{Id: proto.String(id), Ip: proto.Uint32(0x7f000001), Port: proto.Uint32(5050)}
}

func agentInfo(i int) *mesos.AgentInfo {
	return &mesos.AgentInfo{
		Id:       &mesos.AgentID{Value: proto.String(fmt.Sprintf("a1b2c3d4-0000-4000-8000-0123456789ab-S%d", i))},
		Hostname: proto.String(fmt.Sprintf("agent-%05d.example.com", i)),
		Port:     proto.Int32(5051),
	}
}

// node is one replog node with a registry machine.
type node struct {
	log     *Log
	machine *registrar.Machine
}

// singleConfig is a single-node group: no port, a fixed ID.
func singleConfig(dir string) Config {
	return Config{Dir: dir, Bootstrap: true, LogOutput: io.Discard, LogLevel: "error"}
}

func newTransport(t *testing.T) raft.Transport {
	t.Helper()
	tr, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 3, 2*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func openNode(t *testing.T, cfg Config) *node {
	t.Helper()
	m := registrar.NewMachine()
	l, err := Open(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &node{log: l, machine: m}
}

func newRegistrar(t *testing.T, n *node) *registrar.Registrar {
	t.Helper()
	r, err := registrar.New(registrar.Config{Store: n.log, Machine: n.machine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestSingleNodeRestart: a one-node group writes, closes, reopens the same
// directory and recovers the registry intact.
func TestSingleNodeRestart(t *testing.T) {
	c := testCtx(t)
	cfg := singleConfig(t.TempDir())
	n := openNode(t, cfg)
	if err := n.log.AwaitLeader(c); err != nil {
		t.Fatal(err)
	}
	r := newRegistrar(t, n)
	if _, err := r.Recover(c, masterInfo("m1")); err != nil {
		t.Fatal(err)
	}
	const agents = 500
	errs := make(chan error, agents)
	for i := range agents {
		go func() { errs <- r.Apply(c, registrar.Admit(agentInfo(i), "")) }()
	}
	for range agents {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, op := range []registrar.Operation{registrar.MarkUnreachable(agentInfo(1).GetId().GetValue(), time.Unix(10, 0)), registrar.Remove(agentInfo(2).GetId().GetValue(), time.Unix(11, 0))} {
		if err := r.Apply(c, op); err != nil {
			t.Fatal(err)
		}
	}
	want, err := n.machine.Registry().Proto()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := n.log.Close(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	n2 := openNode(t, cfg)
	if !n2.log.HadState() {
		t.Fatal("reopened log reports no previous state")
	}
	if err := n2.log.AwaitLeader(c); err != nil {
		t.Fatal(err)
	}
	r2, _ := registrar.New(registrar.Config{Store: n2.log, Machine: n2.machine, Strict: true})
	defer r2.Close()
	view, err := r2.Recover(c, masterInfo("m2"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := view.Proto()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recovered %d agents in %v", len(got.GetAgents()), time.Since(start))
	if len(got.GetAgents()) != agents-2 || len(got.GetUnreachable()) != 1 || len(got.GetGone()) != 1 {
		t.Fatalf("recovered %d admitted, %d unreachable, %d gone", len(got.GetAgents()), len(got.GetUnreachable()), len(got.GetGone()))
	}
	if got.GetMaster().GetId() != "m2" || got.GetVersion() <= want.GetVersion() {
		t.Fatalf("recovered master %q version %d (before restart %d)", got.GetMaster().GetId(), got.GetVersion(), want.GetVersion())
	}
	want.Master, want.Version = got.Master, got.Version
	if !proto.Equal(want, got) {
		t.Fatal("recovered registry differs from the one written")
	}
	if err := r2.Apply(c, registrar.Readmit(agentInfo(2), "")); !errors.Is(err, registrar.ErrGone) {
		t.Fatalf("readmit of a removed agent after restart = %v, want ErrGone", err)
	}
}

// TestCluster: three nodes on loopback elect a leader, replicate, and when
// the leader stops a new one takes over with the data.
func TestCluster(t *testing.T) {
	c := testCtx(t)
	trans := []raft.Transport{newTransport(t), newTransport(t), newTransport(t)}
	var peers []string
	for _, tr := range trans {
		peers = append(peers, string(tr.LocalAddr()))
	}
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = openNode(t, Config{
			Dir: t.TempDir(), Peers: peers, Bootstrap: true, transport: trans[i],
			HeartbeatTimeout: 150 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond,
			LogOutput: io.Discard, LogLevel: "error",
		})
	}
	leaderOf := func(ns []*node) *node {
		for _, n := range ns {
			if n.log.IsLeader() {
				return n
			}
		}
		return nil
	}
	eventually(t, "a leader", func() bool { return leaderOf(nodes) != nil })
	lead := leaderOf(nodes)
	r := newRegistrar(t, lead)
	if _, err := r.Recover(c, masterInfo(lead.log.ID())); err != nil {
		t.Fatal(err)
	}
	term := lead.log.Term()
	for i := range 20 {
		if err := r.Apply(c, registrar.Admit(agentInfo(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		eventually(t, "replication to "+n.log.ID(), func() bool { a, _, _ := n.machine.Counts(); return a == 20 })
		if addr, _ := n.log.Leader(); addr != lead.log.ID() {
			t.Fatalf("%s sees leader %q, want %q", n.log.ID(), addr, lead.log.ID())
		}
	}

	// A follower refuses writes.
	var follower *node
	for _, n := range nodes {
		if n != lead {
			follower = n
		}
	}
	if err := follower.log.Append(c, []byte{1}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Append on a follower = %v, want ErrNotLeader", err)
	}

	// Stop the leader.
	r.Close()
	lead.log.Close()
	var rest []*node
	for _, n := range nodes {
		if n != lead {
			rest = append(rest, n)
		}
	}
	eventually(t, "a new leader", func() bool { return leaderOf(rest) != nil })
	next := leaderOf(rest)
	if next.log.Term() <= term {
		t.Fatalf("new leader's term %d is not above the old %d", next.log.Term(), term)
	}
	r2 := newRegistrar(t, next)
	reg, err := r2.Recover(c, masterInfo(next.log.ID()))
	if err != nil {
		t.Fatal(err)
	}
	if reg.NumAgents() != 20 || reg.Master().GetId() != next.log.ID() {
		t.Fatalf("new leader recovered %d agents, master %q", reg.NumAgents(), reg.Master().GetId())
	}
	if err := r2.Apply(c, registrar.Admit(agentInfo(100), "")); err != nil {
		t.Fatalf("write through the new leader: %v", err)
	}
	for _, n := range rest {
		eventually(t, "replication after failover", func() bool { a, _, _ := n.machine.Counts(); return a == 21 })
	}
}

// TestSnapshotCompaction: churn that keeps the registry the same size
// keeps the directory bounded: snapshots are taken and the log compacted.
func TestSnapshotCompaction(t *testing.T) {
	c := testCtx(t)
	cfg := singleConfig(t.TempDir())
	cfg.SnapshotMinBytes = 64 << 10
	cfg.TrailingLogs = 4
	n := openNode(t, cfg)
	if err := n.log.AwaitLeader(c); err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Log: n.log}
	r, _ := registrar.New(registrar.Config{Store: store, Machine: n.machine})
	defer r.Close()
	if _, err := r.Recover(c, masterInfo("m")); err != nil {
		t.Fatal(err)
	}
	const agents = 200
	applyAll := func(round int) {
		errs := make(chan error, agents)
		for i := range agents {
			info := agentInfo(i)
			if round > 0 {
				// Incompressible churn: the registry's size stays put, the
				// bytes written keep growing.
				noise := make([]byte, 96)
				rand.Read(noise)
				info.Attributes = []*mesos.Attribute{{Name: proto.String("noise"), Type: mesos.Value_TEXT.Enum(),
					Text: &mesos.Value_Text{Value: proto.String(base64.StdEncoding.EncodeToString(noise))}}}
			}
			op := registrar.Readmit(info, "")
			go func() { errs <- r.Apply(c, op) }()
		}
		for range agents {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	var peak int64
	for round := range 80 {
		applyAll(round)
		size, err := n.log.DiskUsage()
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, size)
	}
	stats := n.log.Stats()
	first, _ := n.log.bolt.FirstIndex()
	t.Logf("appended %d bytes in %d entries; directory peaked at %d bytes; last snapshot index %s, log starts at %d",
		store.bytes.Load(), store.entries.Load(), peak, stats["last_snapshot_index"], first)
	if stats["last_snapshot_index"] == "0" {
		t.Fatal("no snapshot was taken")
	}
	if first <= 1 {
		t.Fatalf("log not compacted: first index %d", first)
	}
	if written := store.bytes.Load(); peak > written/2 || peak > 1<<20 {
		t.Fatalf("directory peaked at %d bytes after %d written; want ≤ half of it and ≤ 1 MiB", peak, written)
	}
}

// countingStore counts what is appended.
type countingStore struct {
	*Log
	bytes, entries atomic.Int64
}

func (s *countingStore) Append(ctx context.Context, entry []byte) error {
	s.bytes.Add(int64(len(entry)))
	s.entries.Add(1)
	return s.Log.Append(ctx, entry)
}

// TestDiskFailure: when the log store fails under a leader, Append fails,
// the node steps down and OnFatal fires.
func TestDiskFailure(t *testing.T) {
	c := testCtx(t)
	cfg := singleConfig(t.TempDir())
	fatal := make(chan error, 1)
	cfg.OnFatal = func(err error) { fatal <- err }
	n := openNode(t, cfg)
	if err := n.log.AwaitLeader(c); err != nil {
		t.Fatal(err)
	}
	r := newRegistrar(t, n)
	if _, err := r.Recover(c, masterInfo("m")); err != nil {
		t.Fatal(err)
	}
	leading := n.log.LeaderCh()
	if v := <-leading; !v {
		t.Fatal("LeaderCh does not report leadership")
	}
	n.log.bolt.Close() // the disk goes away underneath
	err := r.Apply(c, registrar.Admit(agentInfo(1), ""))
	if err == nil {
		t.Fatal("Apply succeeded on a closed store")
	}
	select {
	case ferr := <-fatal:
		t.Logf("OnFatal: %v", ferr)
	case <-c.Done():
		t.Fatal("OnFatal not called")
	}
	if n.log.IsLeader() {
		t.Fatal("node still leads after a disk failure")
	}
	eventually(t, "LeaderCh false", func() bool {
		select {
		case v := <-leading:
			return !v
		default:
			return false
		}
	})
	if err := r.Apply(c, registrar.Admit(agentInfo(2), "")); err == nil {
		t.Fatal("Apply after the failure succeeded")
	}
	if err := n.log.Append(c, []byte{1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after the failure = %v, want ErrClosed", err)
	}
}

func TestAddr(t *testing.T) {
	cases := []struct {
		in, raft string
		err      bool
	}{
		{"127.0.0.1:5050", "127.0.0.1:6050", false},
		{"master-1.example.com:5050", "master-1.example.com:6050", false},
		{"[::1]:5050", "[::1]:6050", false},
		{"127.0.0.1:65000", "", true},
		{"127.0.0.1", "", true},
		{"127.0.0.1:x", "", true},
	}
	for _, tc := range cases {
		got, err := RaftAddr(tc.in)
		if (err != nil) != tc.err || got != tc.raft {
			t.Errorf("RaftAddr(%q) = %q, %v", tc.in, got, err)
		}
		if err == nil {
			if back, err := HTTPAddr(got); err != nil || back != tc.in {
				t.Errorf("HTTPAddr(%q) = %q, %v", got, back, err)
			}
		}
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no dir", Config{BindAddr: "127.0.0.1:6050"}, "Dir is required"},
		{"no bind", Config{Dir: "x", Peers: []string{"a:1", "b:1"}}, "BindAddr is required"},
		{"bad bind", Config{Dir: "x", BindAddr: "nope", Peers: []string{"a:1", "b:1"}}, "BindAddr"},
		{"self not in peers", Config{Dir: "x", BindAddr: "127.0.0.1:6050", Peers: []string{"127.0.0.1:6051"}}, "does not include"},
		{"duplicate peers", Config{Dir: "x", BindAddr: "127.0.0.1:6050", Peers: []string{"127.0.0.1:6050", "127.0.0.1:6050"}}, "twice"},
	}
	for _, tc := range cases {
		_, err := tc.cfg.withDefaults()
		if err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	c, err := (&Config{Dir: "x"}).withDefaults()
	if err != nil || c.ID != SingleNodeID || len(c.Peers) != 1 || !c.single || c.HeartbeatTimeout != 20*time.Millisecond {
		t.Fatalf("single-node defaults: %+v, %v", c, err)
	}
}

// DirSize counts what is there and survives files vanishing under it.
func TestDirSize(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, n := range map[string]int{"x": 10, "a/y": 20, "a/b/z": 30} {
		if err := os.WriteFile(filepath.Join(dir, p), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := DirSize(dir); err != nil || n != 60 {
		t.Fatalf("DirSize = %d, %v; want 60", n, err)
	}
	if _, err := DirSize(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("DirSize of a missing directory: no error")
	}
}
