package promexp

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// BenchmarkTranslate translates the keys of a master with 1000 frameworks
// (16 keys each) and 100 roles: the cost of one scrape's translation.
func BenchmarkTranslate(b *testing.B) {
	values := benchValues()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Translate(values)
	}
	b.ReportMetric(float64(len(values)), "keys")
}

// benchValues are the keys of a master with 1000 frameworks and 100 roles.
func benchValues() map[string]float64 {
	values := map[string]float64{}
	for i := range 1000 {
		p := fmt.Sprintf("master/frameworks/fw%d/F-%d/", i, i)
		for _, k := range []string{"calls", "calls/accept", "calls/decline", "calls/kill", "events", "events/offers", "events/update",
			"offers/sent", "offers/accepted", "offers/declined", "offers/rescinded", "subscribed",
			"tasks/active/task_running", "tasks/active/task_staging", "tasks/terminal/task_finished", "tasks/terminal/task_failed"} {
			values[p+k] = 1
		}
	}
	for i := range 100 {
		values[fmt.Sprintf("allocator/mesos/roles/r%d/shares/dominant", i)] = .1
		values[fmt.Sprintf("allocator/mesos/offer_filters/roles/r%d/active", i)] = 1
	}
	return values
}

// BenchmarkScrape serves /metrics for the same keys: translation, the
// registry's gathering and sorting, and the text encoding.
func BenchmarkScrape(b *testing.B) {
	values := benchValues()
	h := Handler(Source{Values: func() (map[string]float64, error) { return values, nil }})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
