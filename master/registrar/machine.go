package registrar

import (
	"io"
	"sync"
)

// Machine is the registry's state machine: it holds the registry in memory
// and changes it only by applying log entries, in log order, so every
// replica that applies the same log holds the same registry.
//
// Threading (the contract replog relies on, as hashicorp/raft's FSM):
//   - Apply and Snapshot are called from one goroutine, the store's,
//     never concurrently with each other.
//   - The function Snapshot returns may run concurrently with later Apply
//     calls: Snapshot captures the state (a copy of the maps; the stored
//     messages are immutable) and the function only encodes the capture.
//   - Restore is not called concurrently with Apply or Snapshot; it
//     replaces the whole state.
//   - Registry, Empty and Version may be called from any goroutine.
type Machine struct {
	mu      sync.RWMutex
	s       *state
	entries uint64 // log entries applied since creation or Restore
	skipped uint64 // operations that did not apply (see Apply)
}

// NewMachine returns a Machine holding an empty registry.
func NewMachine() *Machine { return &Machine{s: newState()} }

// Apply applies one log entry (an encoded batch). Operations apply in
// order; one that does not apply to the registry at that point is skipped
// (deterministically, on every replica) and counted. The registrar
// validates operations before writing them, so skips happen only if a
// deposed leader's write lands after a newer leader's. An entry that does
// not decode is ignored as a whole and reported.
func (m *Machine) Apply(entry []byte) error {
	ops, err := decodeEntry(entry)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries++
	m.s.version++
	for _, op := range ops {
		if err := m.s.apply(op); err != nil {
			m.skipped++
		}
	}
	return nil
}

// Snapshot captures the registry and returns a function that writes it in
// the snapshot format (DEFLATE-compressed protobuf Registry).
func (m *Machine) Snapshot() (func(io.Writer) error, error) {
	m.mu.RLock()
	c := m.s.clone()
	m.mu.RUnlock()
	return func(w io.Writer) error { return writeSnapshot(w, c) }, nil
}

// Restore replaces the registry with the snapshot read from r.
func (m *Machine) Restore(r io.Reader) error {
	s, err := readSnapshot(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.s = s
	m.entries = 0
	m.mu.Unlock()
	return nil
}

// Registry returns a view of the registry as of now.
func (m *Machine) Registry() *Registry {
	m.mu.RLock()
	c := m.s.clone()
	m.mu.RUnlock()
	return &Registry{s: c}
}

// Empty reports whether the registry was never written (no batch applied
// and no non-empty snapshot restored).
func (m *Machine) Empty() bool { return m.Version() == 0 }

// Version is the number of batches applied since the registry was created
// (carried across snapshots).
func (m *Machine) Version() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.s.version
}

// Skipped is the number of logged operations that did not apply.
func (m *Machine) Skipped() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.skipped
}

// Counts returns the number of admitted, unreachable and gone agents.
func (m *Machine) Counts() (admitted, unreachable, gone int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.s.agents), len(m.s.unreachable), len(m.s.gone)
}
