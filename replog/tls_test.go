package replog

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"mezzo/internal/tlsconfig"
	"mezzo/master/registrar"
)

// freeAddr is a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func tlsPair(t *testing.T, f tlsconfig.Files) (server, client *tls.Config) {
	t.Helper()
	s, err := tlsconfig.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	server, err = s.Server(tlsconfig.PeersRequired)
	if err != nil {
		t.Fatal(err)
	}
	return server, s.Client()
}

// Masters replicate the registry over mutual TLS; a peer speaking plain
// TCP, or holding a certificate of another CA, cannot send Raft RPCs.
func TestClusterOverTLS(t *testing.T) {
	c := testCtx(t)
	files, err := tlsconfig.Throwaway(t.TempDir(), []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	server, client := tlsPair(t, files)
	peers := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = openNode(t, Config{
			Dir: t.TempDir(), Peers: peers, BindAddr: peers[i], Bootstrap: true,
			HeartbeatTimeout: 150 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond,
			LogOutput: io.Discard, LogLevel: "error", ServerTLS: server, ClientTLS: client,
		})
	}
	var lead *node
	eventually(t, "a leader", func() bool {
		for _, n := range nodes {
			if n.log.IsLeader() {
				lead = n
			}
		}
		return lead != nil
	})
	r := newRegistrar(t, lead)
	if _, err := r.Recover(c, masterInfo(lead.log.ID())); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := r.Apply(c, registrar.Admit(agentInfo(i), "")); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		eventually(t, "replication over TLS to "+n.log.ID(), func() bool { a, _, _ := n.machine.Counts(); return a == 5 })
	}

	// An intruder asks a follower to vote for it, with a term far ahead.
	var follower *node
	for _, n := range nodes {
		if n != lead {
			follower = n
		}
	}
	req := &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ID: []byte("intruder"), Addr: []byte("127.0.0.1:1")},
		Term: 1 << 40, LastLogIndex: 1 << 40, LastLogTerm: 1 << 40}
	plain, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 1, time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.RequestVote(raft.ServerID(follower.log.ID()), raft.ServerAddress(follower.log.ID()), req, &raft.RequestVoteResponse{}); err == nil {
		t.Fatal("a plaintext peer's RequestVote was answered")
	}
	other, err := tlsconfig.Throwaway(t.TempDir(), []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other.CA = files.CA // trusts the cluster, but its certificate is another CA's
	oserver, oclient := tlsPair(t, other)
	intruder, err := newTLSTransport("127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, oserver, oclient, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.(io.Closer).Close()
	if err := intruder.(*raft.NetworkTransport).RequestVote(raft.ServerID(follower.log.ID()), raft.ServerAddress(follower.log.ID()), req, &raft.RequestVoteResponse{}); err == nil {
		t.Fatal("a peer with another CA's certificate had its RequestVote answered")
	}
	if follower.log.Term() >= 1<<40 {
		t.Fatal("the intruder's term reached the follower")
	}
}
