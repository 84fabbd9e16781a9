package registrar

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// benchAgent is a typical agent: resources and two attributes.
func benchAgent(i int) *mesos.AgentInfo {
	scalar := func(name string, v float64) *mesos.Resource {
		return &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}}
	}
	text := func(name, v string) *mesos.Attribute {
		return &mesos.Attribute{Name: proto.String(name), Type: mesos.Value_TEXT.Enum(), Text: &mesos.Value_Text{Value: proto.String(v)}}
	}
	return &mesos.AgentInfo{
		Id:         &mesos.AgentID{Value: proto.String(fmt.Sprintf("4f3c8e1a-7d2b-4c9e-a1f0-5b6d7e8f9a0b-S%d", i))},
		Hostname:   proto.String(fmt.Sprintf("agent-%05d.dc1.example.com", i)),
		Port:       proto.Int32(5051),
		Resources:  []*mesos.Resource{scalar("cpus", 32), scalar("mem", 262144), scalar("disk", 1048576)},
		Attributes: []*mesos.Attribute{text("rack", fmt.Sprintf("r%03d", i/40)), text("zone", fmt.Sprintf("z%d", i%3))},
	}
}

// machineWith returns a machine holding n agents admitted as principal
// and the entries that built it (batches of 256).
func machineWith(b *testing.B, n int, principal string) (*Machine, [][]byte) {
	m := NewMachine()
	var entries [][]byte
	var batch []byte
	for i := range n {
		batch = appendOp(batch, Admit(benchAgent(i), principal).enc)
		if (i+1)%256 == 0 || i == n-1 {
			e := encodeEntry(batch)
			entries = append(entries, e)
			if err := m.Apply(e); err != nil {
				b.Fatal(err)
			}
			batch = nil
		}
	}
	return m, entries
}

// BenchmarkSnapshot50k: writing and restoring a 50,000-agent registry.
func BenchmarkSnapshot50k(b *testing.B) { benchSnapshot(b, "") }

// BenchmarkSnapshot50kBound: the same, every agent bound to the principal
// it registered as (--authenticate_agents).
func BenchmarkSnapshot50kBound(b *testing.B) { benchSnapshot(b, "agent") }

func benchSnapshot(b *testing.B, principal string) {
	m, entries := machineWith(b, 50000, principal)
	var buf bytes.Buffer
	write, _ := m.Snapshot()
	write(&buf)
	var logBytes int
	for _, e := range entries {
		logBytes += len(e)
	}
	b.Logf("snapshot %d bytes; log %d bytes in %d entries", buf.Len(), logBytes, len(entries))
	b.Run("write", func(b *testing.B) {
		loopCPU(b, func() {
			var w bytes.Buffer
			write, _ := m.Snapshot()
			write(&w)
		})
	})
	b.Run("restore", func(b *testing.B) {
		loopCPU(b, func() {
			if err := NewMachine().Restore(bytes.NewReader(buf.Bytes())); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("replay", func(b *testing.B) {
		loopCPU(b, func() {
			r := NewMachine()
			for _, e := range entries {
				r.Apply(e)
			}
		})
	})
	b.Run("view", func(b *testing.B) {
		loopCPU(b, func() { m.Registry() })
	})
}

// loopCPU runs f in the benchmark loop and reports the process's CPU time
// (user and system, the garbage collector's included) per iteration as
// cpu-ns/op: on a machine shared with other work, wall times include
// waiting for a core.
func loopCPU(b *testing.B, f func()) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
}
