package h2c

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

// BenchmarkRoundTrip measures an agent's subscription: a POST with a
// 300-byte body whose 200 response streams one 100-byte record, after
// which the client closes the body. The server runs in the same process,
// so time and allocations include its share; only the client differs
// between the sub-benchmarks.
func BenchmarkRoundTrip(b *testing.B) {
	record := bytes.Repeat([]byte("r"), 100)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(200)
		w.Write(record)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // until the client closes the body
	})
	_, addr := startServer(b, h, 250)
	url := "http://" + addr + "/internal/v1/agent"
	body := bytes.Repeat([]byte("a"), 300)

	run := func(b *testing.B, rt http.RoundTripper) {
		// Agents' requests carry a context that can be cancelled.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.ReportAllocs()
		b.SetParallelism(8) // many agents at once, as in a failover
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, len(record))
			for pb.Next() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/x-protobuf")
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := io.ReadFull(resp.Body, buf); err != nil {
					b.Error(err)
				}
				resp.Body.Close()
			}
		})
	}
	b.Run("lean", func(b *testing.B) {
		tr := New(Config{})
		defer tr.Close()
		run(b, tr)
	})
	b.Run("nethttp", func(b *testing.B) {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr := &http.Transport{Protocols: &p}
		defer tr.CloseIdleConnections()
		run(b, tr)
	})
}
