package sim

import (
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// countingDialer counts TCP connections dialed and open.
type countingDialer struct {
	dials, open atomic.Int64
}

func (c *countingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.dials.Add(1)
	c.open.Add(1)
	return &closeHook{Conn: conn, closed: func() { c.open.Add(-1) }}, nil
}

// runSharedFleet registers n agents with the master at addr and returns
// the dialer's counts while they are all registered.
func runSharedFleet(t *testing.T, addr string, n int) (dials, open int64) {
	t.Helper()
	cd := &countingDialer{}
	f, err := NewFleet(FleetConfig{Agents: n, Agent: AgentConfig{Masters: []string{addr}, Dial: cd.dial}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	f.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.WaitRegistered(ctx, n); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapInuse) - int64(before.HeapInuse)
	stack := int64(after.StackInuse) - int64(before.StackInuse)
	t.Logf("%d agents: %d dials, %d open connections; +%d goroutines; heap +%d KiB, stacks +%d KiB: %d B/agent",
		n, cd.dials.Load(), cd.open.Load(), runtime.NumGoroutine()-g0, heap>>10, stack>>10, (heap+stack)/int64(n))
	if c := f.Conns(); c.Open != cd.open.Load() || c.Dialed != cd.dials.Load() {
		t.Fatalf("fleet counts %+v, dialer counts %d dialed %d open", c, cd.dials.Load(), cd.open.Load())
	}
	return cd.dials.Load(), cd.open.Load()
}

// TestFleetSharesConnections: 2,000 agents hold their event streams over
// a handful of TCP connections (counted by a custom DialContext).
//
// The number is set by the server's HTTP/2 concurrent-stream limit and by
// the fleet's clients (one per agentsPerClient agents, each with its own
// connections): a master allowing 10,000 streams per connection (as the
// fake one here does) carries each client's agents on one or two once
// running, but a cold start may open up to one per 100 of them: the first
// connections fill to 100 streams before the server's SETTINGS arrive. Against a real `mezzo master`, which allows 250 streams, 2,000
// streams need 8 connections, and a cold start may open up to 20.
func TestFleetSharesConnections(t *testing.T) {
	const n = 2000
	t.Run("real master", func(t *testing.T) {
		m := startMaster(t, freePort(t), "")
		// Extra dials beyond the open ones are duplicates the HTTP/2 pool
		// closed at once.
		if d, o := runSharedFleet(t, m.Addr, n); o > n/100 || d > n/100+8 {
			t.Fatalf("%d dials, %d open connections for %d agents, want at most %d open", d, o, n, n/100)
		}
	})
	t.Run("10000 streams per connection", func(t *testing.T) {
		fm := newFakeMaster(t, 10000)
		if d, o := runSharedFleet(t, fm.addr, n); o > n/100 || d > n/100+8 {
			t.Fatalf("%d dials, %d open connections for %d agents, want at most %d open", d, o, n, n/100)
		}
	})
}

type closeHook struct {
	net.Conn
	closed func()
	done   atomic.Bool
}

func (c *closeHook) Close() error {
	if c.done.CompareAndSwap(false, true) {
		c.closed()
	}
	return c.Conn.Close()
}
