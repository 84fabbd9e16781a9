package replog

import (
	"context"
	"io"
	"testing"
)

type nopMachine struct{}

func (nopMachine) Apply([]byte) error { return nil }
func (nopMachine) Snapshot() (func(io.Writer) error, error) {
	return func(io.Writer) error { return nil }, nil
}
func (nopMachine) Restore(io.Reader) error { return nil }

// BenchmarkAppend: one durable single-node write of a 4 KiB entry (the
// floor under every registrar write: Raft's hand-offs, bbolt's fsyncs).
func BenchmarkAppend(b *testing.B) {
	l, err := Open(Config{Dir: b.TempDir(), Bootstrap: true, LogOutput: io.Discard}, nopMachine{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if err := l.AwaitLeader(ctx); err != nil {
		b.Fatal(err)
	}
	entry := make([]byte, 4096)
	for b.Loop() {
		if err := l.Append(ctx, entry); err != nil {
			b.Fatal(err)
		}
	}
}
