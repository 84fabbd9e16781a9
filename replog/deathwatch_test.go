package replog

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// killableLayer is a TCP stream layer whose kill does what the kernel does
// when a process dies: the listening port closes (new connections are
// refused) and every accepted connection is reset. A plain transport
// Close leaves accepted connections open until their handlers return.
type killableLayer struct {
	net.Listener
	mu       sync.Mutex
	accepted []net.Conn
}

func (k *killableLayer) Accept() (net.Conn, error) {
	c, err := k.Listener.Accept()
	if err == nil {
		k.mu.Lock()
		k.accepted = append(k.accepted, c)
		k.mu.Unlock()
	}
	return c, err
}

func (k *killableLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

func (k *killableLayer) kill() {
	k.Listener.Close()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.accepted {
		c.Close()
	}
}

func newKillableTransport(t *testing.T) (raft.Transport, *killableLayer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k := &killableLayer{Listener: ln}
	return raft.NewNetworkTransportWithLogger(k, 3, 2*time.Second, hclog.NewNullLogger()), k
}

// When the leader's process dies, the followers elect a new leader within
// about FastElectionTimeout, far sooner than their heartbeat timeout; while
// it lives, nobody hastens anything.
func TestLeaderDeathHastensElection(t *testing.T) {
	const slow = 30 * time.Second
	trans := make([]raft.Transport, 3)
	layers := make([]*killableLayer, 3)
	var peers []string
	for i := range trans {
		trans[i], layers[i] = newKillableTransport(t)
		peers = append(peers, string(trans[i].LocalAddr()))
	}
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = openNode(t, Config{
			Dir: t.TempDir(), Peers: peers, Bootstrap: true, transport: trans[i],
			HeartbeatTimeout: 150 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond,
			FastElectionTimeout: 100 * time.Millisecond,
			LogOutput:           io.Discard, LogLevel: "error",
		})
	}
	var lead *node
	eventually(t, "a leader", func() bool {
		for _, n := range nodes {
			if n.log.IsLeader() {
				lead = n
				return true
			}
		}
		return false
	})
	// From now on Raft alone would wait at least 30 s for a dead leader.
	for _, n := range nodes {
		rc := n.log.raft.ReloadableConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = slow, slow
		if err := n.log.raft.ReloadConfig(rc); err != nil {
			t.Fatal(err)
		}
	}
	// While the leader lives, nobody hastens anything.
	var rest []*node
	for _, n := range nodes {
		if n == lead {
			continue
		}
		rest = append(rest, n)
		if h := n.log.hastened.Load(); h != 0 {
			t.Fatalf("%s hastened %d elections while the leader lived", n.log.ID(), h)
		}
	}
	for i, n := range nodes {
		if n == lead {
			if err := n.log.raft.Shutdown().Error(); err != nil {
				t.Fatal(err)
			}
			layers[i].kill()
		}
	}
	deadline := time.Now().Add(slow / 3)
	for {
		var next *node
		for _, n := range rest {
			if n.log.IsLeader() {
				next = n
			}
		}
		if next != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader %v after the old one died (heartbeat timeout %v)", slow/3, slow)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	hastened := int64(0)
	for _, n := range rest {
		hastened += n.log.hastened.Load()
	}
	if hastened == 0 {
		t.Fatal("a new leader was elected but no follower hastened")
	}
	// The configured timeouts are back once the new leader is known.
	for _, n := range rest {
		eventually(t, "timeouts restored on "+n.log.ID(), func() bool {
			return n.log.raft.ReloadableConfig().HeartbeatTimeout == slow
		})
	}
}

func TestIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil || isRefused(err) {
		t.Fatalf("dial to a listening port: %v", err)
	}
	c.Close()
	ln.Close()
	_, err = net.Dial("tcp", addr)
	if !isRefused(err) {
		t.Fatalf("dial to a closed port = %v, want refused", err)
	}
	if isRefused(errors.New("i/o timeout")) {
		t.Fatal("a timeout is not a refusal")
	}
}
