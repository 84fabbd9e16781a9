package registrar

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "mezzo/api/registrypb"
)

func seedEntries() [][]byte {
	var b []byte
	for _, op := range []Operation{Admit(agent("a"), ""), Admit(agent("b"), "p"), MarkUnreachable("b", t0), MarkReachable(agent("b"), "q"),
		MarkUnreachable("a", t0), Remove("a", t0), UpdateWeights(nil)} {
		b = appendOp(b, op.enc)
	}
	big := b
	for len(big) < 2*compressMin {
		big = append(big, b...)
	}
	return [][]byte{encodeEntry(b), encodeEntry(big), {entryPlain}, {entryDeflate, 1, 2, 3}, {9}}
}

// FuzzMachineApply: arbitrary log entries never panic the state machine,
// and a failed decode leaves the registry unchanged.
func FuzzMachineApply(f *testing.F) {
	for _, e := range seedEntries() {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, entry []byte) {
		m := NewMachine()
		if err := m.Apply(entry); err != nil && m.Version() != 0 {
			t.Fatalf("failed entry changed the version")
		}
		// Agent infos are decoded lazily: a malformed one is an error
		// here, never a panic.
		m.Registry().Proto()
		m.Registry().Agents()
	})
}

// FuzzRestore: arbitrary snapshots never panic Restore.
func FuzzRestore(f *testing.F) {
	m := NewMachine()
	for _, e := range seedEntries() {
		m.Apply(e)
	}
	var buf bytes.Buffer
	write, _ := m.Snapshot()
	write(&buf)
	f.Add(buf.Bytes())
	f.Add(append(append([]byte{}, snapshotMagic...), 0, 0))
	bad, _ := proto.Marshal(&pb.Registry{Agents: []*pb.Agent{{}}})
	var b2 bytes.Buffer
	b2.Write(snapshotMagic)
	deflate(&b2, bad)
	f.Add(b2.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewMachine()
		if err := m.Restore(bytes.NewReader(data)); err == nil {
			m.Registry().Agents()
		}
	})
}
