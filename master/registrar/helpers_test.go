package registrar

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	pb "mezzo/api/registrypb"
)

// gatedStore wraps a MemoryStore. While held, every Append announces
// itself on started and waits for a token on proceed (nil: write; an error:
// fail with it, applying nothing) or for the hold to end.
type gatedStore struct {
	*MemoryStore
	started chan struct{}
	proceed chan error

	mu      sync.Mutex
	held    bool
	open    chan struct{} // closed when the hold ends
	appends int
	batches []int // operations per entry written
}

func newGatedStore(m *Machine) *gatedStore {
	return &gatedStore{MemoryStore: NewMemoryStore(m), started: make(chan struct{}, 100), proceed: make(chan error)}
}

func (s *gatedStore) Append(ctx context.Context, entry []byte) error {
	s.mu.Lock()
	held, open := s.held, s.open
	s.mu.Unlock()
	if held {
		s.started <- struct{}{}
		select {
		case err := <-s.proceed:
			if err != nil {
				return err
			}
		case <-open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	s.appends++
	if b, err := decodeEntry(entry); err == nil {
		s.batches = append(s.batches, len(b))
	}
	s.mu.Unlock()
	return s.MemoryStore.Append(ctx, entry)
}

// hold makes Appends wait for tokens until the test ends.
func (s *gatedStore) hold(t *testing.T) {
	s.mu.Lock()
	s.held, s.open = true, make(chan struct{})
	open := s.open
	s.mu.Unlock()
	t.Cleanup(func() {
		s.mu.Lock()
		s.held = false
		s.mu.Unlock()
		close(open)
	})
}

func (s *gatedStore) count() (int, []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends, append([]int(nil), s.batches...)
}

func testMaster() *mesos.MasterInfo {
	return &mesos.MasterInfo{Id: proto.String("master-1"), Ip: proto.Uint32(0x7f000001), Port: proto.Uint32(5050)}
}

func agent(id string) *mesos.AgentInfo {
	return &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String(id)}, Hostname: proto.String("host-" + id), Port: proto.Int32(5051)}
}

// newRecovered returns a recovered registrar over a gated in-memory store.
func newRecovered(t *testing.T, cfg Config) (*Registrar, *gatedStore, *Machine) {
	t.Helper()
	m := cfg.Machine
	if m == nil {
		m = NewMachine()
	}
	st := newGatedStore(m)
	cfg.Store, cfg.Machine = st, m
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := r.Recover(ctx(t), testMaster()); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	return r, st, m
}

// restoredMachine returns a machine restored from a snapshot of m, as a
// new leader's replica installs it.
func restoredMachine(t *testing.T, m *Machine) *Machine {
	t.Helper()
	var snap bytes.Buffer
	write, _ := m.Snapshot()
	if err := write(&snap); err != nil {
		t.Fatal(err)
	}
	m2 := NewMachine()
	if err := m2.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	return m2
}

// restored returns a recovered registrar over restoredMachine(m): a new
// leader's view of the registry.
func restored(t *testing.T, m *Machine) (*Registrar, *Machine) {
	t.Helper()
	m2 := restoredMachine(t, m)
	r2, err := New(Config{Store: NewMemoryStore(m2), Machine: m2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r2.Close() })
	if _, err := r2.Recover(ctx(t), testMaster()); err != nil {
		t.Fatal(err)
	}
	return r2, m2
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, not a wait for the condition
	}
}

func ids(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// protoOf decodes a registry view fully.
func protoOf(t interface{ Fatal(...any) }, r *Registry) *pb.Registry {
	p, err := r.Proto()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
