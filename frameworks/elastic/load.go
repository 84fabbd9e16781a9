package elastic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Segment is a stretch of a load profile: the rate goes linearly from
// From to To requests per second over Duration.
type Segment struct {
	From, To float64
	Duration time.Duration
}

// Profile is a load over time (the paper's httperf run: rising, then
// falling).
type Profile []Segment

// ParseProfile reads "RATE:DURATION" and "FROM-TO:DURATION" segments,
// comma-separated: "10-300:60s,300:30s,300-10:60s".
func ParseProfile(text string) (Profile, error) {
	var p Profile
	for _, seg := range strings.Split(text, ",") {
		seg = strings.TrimSpace(seg)
		rates, dur, ok := strings.Cut(seg, ":")
		if !ok {
			return nil, fmt.Errorf("load segment %q: expecting RATE:DURATION or FROM-TO:DURATION", seg)
		}
		d, err := time.ParseDuration(strings.TrimSpace(dur))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("load segment %q: the duration must be positive, like 30s", seg)
		}
		from, to, ranged := strings.Cut(rates, "-")
		if !ranged {
			to = from
		}
		f, err1 := strconv.ParseFloat(strings.TrimSpace(from), 64)
		t, err2 := strconv.ParseFloat(strings.TrimSpace(to), 64)
		if err1 != nil || err2 != nil || f < 0 || t < 0 {
			return nil, fmt.Errorf("load segment %q: rates are requests per second, not negative", seg)
		}
		p = append(p, Segment{From: f, To: t, Duration: d})
	}
	return p, nil
}

// Length is the profile's total duration.
func (p Profile) Length() time.Duration {
	var d time.Duration
	for _, s := range p {
		d += s.Duration
	}
	return d
}

// Rate is the load at elapsed (0 after the end).
func (p Profile) Rate(elapsed time.Duration) float64 {
	for _, s := range p {
		if elapsed < s.Duration {
			return s.From + (s.To-s.From)*float64(elapsed)/float64(s.Duration)
		}
		elapsed -= s.Duration
	}
	return 0
}

// Peak is the profile's highest rate.
func (p Profile) Peak() float64 {
	peak := 0.0
	for _, s := range p {
		peak = max(peak, s.From, s.To)
	}
	return peak
}

// LoadResult is what a generator sent and got back.
type LoadResult struct {
	Sent    int64 `json:"sent"`
	OK      int64 `json:"ok"`
	Failed  int64 `json:"failed"`
	Dropped int64 `json:"dropped"` // not sent: too many in flight
	// Latency quantiles of the answered requests, in milliseconds.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
}

// Generate sends GET requests to url at the profile's rate, open loop
// (a request is sent on time whether or not earlier ones were answered,
// as httperf does), with at most maxInFlight outstanding, until the
// profile ends or ctx does.
func Generate(ctx context.Context, client *http.Client, url string, p Profile, maxInFlight int) (LoadResult, error) {
	if len(p) == 0 {
		return LoadResult{}, errors.New("empty load profile")
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if maxInFlight <= 0 {
		maxInFlight = 512
	}
	var (
		res      LoadResult
		ok, bad  atomic.Int64
		inFlight atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		lat      []float64
	)
	start := time.Now()
	next := time.Duration(0)
	for {
		rate := p.Rate(next)
		if next >= p.Length() {
			break
		}
		if rate <= 0 {
			next += 10 * time.Millisecond
			continue
		}
		if d := time.Until(start.Add(next)); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				wg.Wait()
				return res, ctx.Err()
			case <-t.C:
			}
		}
		next += time.Duration(float64(time.Second) / rate)
		if inFlight.Load() >= int64(maxInFlight) {
			res.Dropped++
			continue
		}
		res.Sent++
		inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inFlight.Add(-1)
			t0 := time.Now()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				bad.Add(1)
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				bad.Add(1)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				bad.Add(1)
				return
			}
			ok.Add(1)
			mu.Lock()
			lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.OK, res.Failed = ok.Load(), bad.Load()
	slices.Sort(lat)
	res.P50MS, res.P99MS = quantile(lat, 0.5), quantile(lat, 0.99)
	return res, nil
}

// quantile of sorted xs, nearest rank.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// ReplicaHandler is what a replica serves (`mezzo elastic replica`):
// every request costs about work of CPU (a page to render) and answers
// name; /health answers at once.
func ReplicaHandler(name string, work time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		for end := time.Now().Add(work); time.Now().Before(end); {
			// Busy on purpose: the request's CPU cost.
		}
		io.WriteString(w, name+"\n")
	})
	return mux
}
