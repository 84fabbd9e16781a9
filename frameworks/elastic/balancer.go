package elastic

import (
	"context"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"mezzo/internal/clock"
)

// Meter measures a rate of events over a sliding window of whole
// buckets (the bucket being filled does not count yet).
type Meter struct {
	clk     clock.Clock
	res     time.Duration // bucket width
	mu      sync.Mutex
	counts  []int64
	epochs  []int64 // which bucket number each slot holds
	started int64   // first bucket number: a young meter averages over its age
}

// NewMeter returns a meter over window (10 buckets).
func NewMeter(clk clock.Clock, window time.Duration) *Meter {
	if clk == nil {
		clk = clock.Real
	}
	const n = 10
	res := max(window/n, time.Millisecond)
	m := &Meter{clk: clk, res: res, counts: make([]int64, n), epochs: make([]int64, n)}
	m.started = m.bucket()
	for i := range m.epochs {
		m.epochs[i] = -1
	}
	return m
}

func (m *Meter) bucket() int64 { return m.clk.Now().UnixNano() / int64(m.res) }

// Add counts n events now.
func (m *Meter) Add(n int64) {
	b := m.bucket()
	m.mu.Lock()
	defer m.mu.Unlock()
	i := int(b % int64(len(m.counts)))
	if m.epochs[i] != b {
		m.epochs[i], m.counts[i] = b, 0
	}
	m.counts[i] += n
}

// Rate is events per second over the complete buckets of the window.
func (m *Meter) Rate() float64 {
	b := m.bucket()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := int64(len(m.counts))
	lo := max(b-n, m.started)
	if b <= lo {
		return 0
	}
	var sum int64
	for i, e := range m.epochs {
		if e >= lo && e < b {
			sum += m.counts[i]
		}
	}
	return float64(sum) / (float64(b-lo) * m.res.Seconds())
}

// Balancer is the service's load balancer (the paper's haproxy): it
// spreads requests round-robin over the running replicas and meters
// the load that arrives, which the scaling policy follows.
type Balancer struct {
	endpoints func() []string
	meter     *Meter
	proxy     *httputil.ReverseProxy
	next      atomic.Uint64
	served    atomic.Int64
	failed    atomic.Int64
}

// target carries the chosen replica from ServeHTTP to the proxy.
type targetKey struct{}

// NewBalancer balances over endpoints() ("host:port"), metering arrivals
// on meter.
func NewBalancer(endpoints func() []string, meter *Meter) *Balancer {
	b := &Balancer{endpoints: endpoints, meter: meter}
	b.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "http"
			r.Out.URL.Host = r.In.Context().Value(targetKey{}).(string)
		},
		ModifyResponse: func(*http.Response) error {
			b.served.Add(1)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			b.failed.Add(1)
			http.Error(w, "replica unreachable: "+err.Error(), http.StatusBadGateway)
		},
	}
	return b
}

// ServeHTTP implements http.Handler.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.meter.Add(1)
	eps := b.endpoints()
	if len(eps) == 0 {
		b.failed.Add(1)
		http.Error(w, "no replica is running yet", http.StatusServiceUnavailable)
		return
	}
	ep := eps[int(b.next.Add(1)%uint64(len(eps)))]
	b.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), targetKey{}, ep)))
}

// Load is the request rate arriving, per second.
func (b *Balancer) Load() float64 { return b.meter.Rate() }

// Counts is how many requests replicas answered and how many failed.
func (b *Balancer) Counts() (served, failed int64) { return b.served.Load(), b.failed.Load() }
