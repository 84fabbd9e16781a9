package registrar

import (
	"context"
	"sync"
)

// Store makes registry log entries durable and applies them, in log order,
// to the Machine it was built around. package replog implements it over
// Raft; MemoryStore implements it in process.
//
// Threading: the Registrar calls Append and Barrier from its own goroutine
// only, one call at a time (at most one write in flight). A Store may apply
// entries written by other nodes (a replicated store on a follower) on its
// own goroutine at any time; the Machine serializes that.
type Store interface {
	// Append writes one entry (an encoded batch of operations). It returns
	// nil only once the entry is durable (on local disk, and on a quorum
	// for a replicated store) and applied to the Machine; a non-nil error
	// from the Machine's Apply is returned as is.
	//
	// On error the entry may still become durable later (a replicated
	// store cannot always tell: the leader lost its leadership while the
	// entry was in flight). The registrar therefore treats a failed write
	// like a lost leadership and refuses to write until Recover runs again,
	// which re-reads the registry after a Barrier.
	Append(ctx context.Context, entry []byte) error

	// Barrier returns once every entry committed before the call has been
	// applied to the Machine. A replicated store fails it unless this node
	// leads; a successful Barrier on a new leader also commits the entries
	// its predecessor left uncommitted.
	Barrier(ctx context.Context) error
}

// MemoryStore is a Store that keeps nothing on disk: Append applies the
// entry to the Machine at once. For tests and single-process tools; it
// survives nothing.
type MemoryStore struct {
	m      *Machine
	mu     sync.Mutex
	writes int
	bytes  int
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns a MemoryStore applying entries to m.
func NewMemoryStore(m *Machine) *MemoryStore { return &MemoryStore{m: m} }

// Append implements Store.
func (s *MemoryStore) Append(ctx context.Context, entry []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	s.bytes += len(entry)
	return s.m.Apply(entry)
}

// Barrier implements Store: entries are applied synchronously, so there is
// nothing to wait for.
func (s *MemoryStore) Barrier(ctx context.Context) error { return ctx.Err() }

// Writes returns the number of entries appended and their total size.
func (s *MemoryStore) Writes() (entries, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes, s.bytes
}
