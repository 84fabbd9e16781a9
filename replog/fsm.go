package replog

import (
	"bufio"
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// fsm adapts a StateMachine to raft.FSM and measures what the log holds
// since the last snapshot, for size-driven snapshots.
type fsm struct {
	sm StateMachine
	// sinceSnap counts the bytes of entries applied since the last
	// snapshot capture; lastSnap is the size of the last snapshot written.
	sinceSnap atomic.Int64
	lastSnap  atomic.Int64
	// onApplied is called after each command entry (on Raft's FSM
	// goroutine); it must not block.
	onApplied func()
}

func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	err := f.sm.Apply(l.Data)
	f.sinceSnap.Add(int64(len(l.Data)))
	if f.onApplied != nil {
		f.onApplied()
	}
	if err != nil {
		return err
	}
	return nil
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	write, err := f.sm.Snapshot()
	if err != nil {
		return nil, err
	}
	f.sinceSnap.Store(0)
	return &fsmSnapshot{write: write, f: f}, nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	err := f.sm.Restore(bufio.NewReaderSize(rc, 1<<16))
	f.sinceSnap.Store(0)
	return err
}

type fsmSnapshot struct {
	write func(io.Writer) error
	f     *fsm
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	cw := &countingWriter{w: sink}
	bw := bufio.NewWriterSize(cw, 1<<16)
	err := s.write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		sink.Cancel()
		return err
	}
	s.f.lastSnap.Store(cw.n)
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
