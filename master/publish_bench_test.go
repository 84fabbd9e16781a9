package master

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"mezzo/api/protocol"
	"mezzo/internal/clock"
)

// BenchmarkAgentRegistrationStorm registers b.N agents at once (128 in
// flight, as agents reconnecting after a failover) through the real loop
// and an in-memory registrar; it reports agents/s and snapshot builds.
func BenchmarkAgentRegistrationStorm(b *testing.B) {
	m, err := New(Config{ID: "M", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test", Clock: clock.Real,
		Allocator: &recordingAllocator{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	m.Start()
	defer m.Stop()
	sem := make(chan struct{}, 128)
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range b.N {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st, err := m.SubscribeAgent(context.Background(), Principal{}, &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(),
				Subscribe: agentSub(fmt.Sprintf("h%d", i), "cpus:8;mem:16384;ports:[31000-32000]")})
			if err != nil {
				b.Error(err)
				return
			}
			for {
				if evs, ended := st.Drain(); len(evs) > 0 || ended {
					return
				}
				<-st.Ready()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "agents/s")
	b.ReportMetric(float64(m.pub.builds.Load()), "builds")
}
