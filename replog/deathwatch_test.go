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

// When the leader's process dies, the followers elect a new leader at
// once, far sooner than their heartbeat timeout, also when the follower
// whose turn is first died with it; while the leader lives, nobody hastens
// anything.
//
// Of three, when the first in turn died too, the last cannot win alone
// and must not campaign early: a second campaign while the first's was
// merely slow to be seen split the vote.
func TestLeaderDeathHastensElection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
		// alsoFirst: kill the survivor that would campaign first too.
		alsoFirst bool
	}{
		{"leader", 3, false},
		{"leader and the first in turn", 5, true},
		{"leader and the first in turn of three", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testLeaderDeath(t, tc.nodes, tc.alsoFirst) })
	}
}

func testLeaderDeath(t *testing.T, size int, alsoFirst bool) {
	const slow = 30 * time.Second
	trans := make([]raft.Transport, size)
	layers := make([]*killableLayer, size)
	var peers []string
	for i := range trans {
		trans[i], layers[i] = newKillableTransport(t)
		peers = append(peers, string(trans[i].LocalAddr()))
	}
	nodes := make([]*node, size)
	for i := range nodes {
		nodes[i] = openNode(t, Config{
			Dir: t.TempDir(), Peers: peers, Bootstrap: true, transport: trans[i],
			HeartbeatTimeout: 150 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond,
			LogOutput: io.Discard, LogLevel: "error",
		})
	}
	lead := -1
	eventually(t, "a leader", func() bool {
		for i, n := range nodes {
			if n.log.IsLeader() {
				lead = i
				return true
			}
		}
		return false
	})
	// Every node holds the whole log, so the first in turn can win.
	eventually(t, "the log everywhere", func() bool {
		for _, n := range nodes {
			if n.log.raft.AppliedIndex() < nodes[lead].log.raft.LastIndex() {
				return false
			}
		}
		return true
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
	dead := map[int]bool{lead: true}
	first := ""
	for i, n := range nodes {
		if i == lead {
			continue
		}
		if h := n.log.hastened.Load(); h != 0 {
			t.Fatalf("%s hastened %d elections while the leader lived", n.log.ID(), h)
		}
		if id := n.log.ID(); first == "" || id < first {
			first = id
		}
	}
	if alsoFirst {
		for i, n := range nodes {
			if n.log.ID() == first {
				dead[i] = true
			}
		}
	}
	for i, n := range nodes {
		if dead[i] {
			if err := n.log.raft.Shutdown().Error(); err != nil {
				t.Fatal(err)
			}
			layers[i].kill()
		}
	}
	if size-len(dead) < size/2+1 {
		// No quorum left: nobody may hasten; watch for a while (several
		// campaign turns).
		stagger := nodes[0].log.cfg.CampaignStagger
		for end := time.Now().Add(8 * stagger); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			for i, n := range nodes {
				if h := n.log.hastened.Load(); !dead[i] && h != 0 {
					t.Fatalf("%s campaigned early without a quorum left", n.log.ID())
				}
			}
		}
		return
	}
	deadline := time.Now().Add(slow / 3)
	for {
		elected := false
		for i, n := range nodes {
			elected = elected || !dead[i] && n.log.IsLeader()
		}
		if elected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader %v after the old one died (heartbeat timeout %v)", slow/3, slow)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	hastened := int64(0)
	for i, n := range nodes {
		if !dead[i] {
			hastened += n.log.hastened.Load()
		}
	}
	if hastened == 0 {
		t.Fatal("a new leader was elected but no follower hastened")
	}
	// The survivors name the new leader, not the dead one.
	for i, n := range nodes {
		if dead[i] {
			continue
		}
		eventually(t, "a leader named by "+n.log.ID(), func() bool {
			addr, _ := n.log.Leader()
			return addr != ""
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
