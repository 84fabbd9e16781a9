package fetcher

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"mezzo/api/mesos"

	"pgregory.net/rapid"
)

// lruOracle is the naive model of the cache: a list of (uri, size), most
// recently used first.
type lruOracle struct {
	capacity int64
	order    []string
	sizes    map[string]int64
}

// access returns whether uri is a hit, updating the model.
func (o *lruOracle) access(uri string, size int64) bool {
	for i, u := range o.order {
		if u == uri {
			o.order = append([]string{u}, append(o.order[:i:i], o.order[i+1:]...)...)
			return true
		}
	}
	if size > o.capacity {
		return false // fetched but never kept
	}
	o.order = append([]string{uri}, o.order...)
	o.sizes[uri] = size
	for o.used() > o.capacity {
		victim := o.order[len(o.order)-1]
		o.order = o.order[:len(o.order)-1]
		delete(o.sizes, victim)
	}
	return false
}

func (o *lruOracle) used() int64 {
	var n int64
	for _, u := range o.order {
		n += o.sizes[u]
	}
	return n
}

// Sequential fetches hit, miss, evict and account bytes exactly as a plain
// LRU list of bounded total size does.
func TestCacheMatchesLRUOracle(t *testing.T) {
	var mu sync.Mutex
	requests := map[string]int{}
	// /<size>/<name> serves size bytes.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests[r.URL.Path]++
		mu.Unlock()
		parts := strings.Split(r.URL.Path, "/")
		n, _ := strconv.Atoi(parts[1])
		w.Write([]byte(strings.Repeat("z", n)))
	}))
	defer srv.Close()
	base := t.TempDir()
	run := 0

	rapid.Check(t, func(rt *rapid.T) {
		run++
		capacity := rapid.Int64Range(1, 400).Draw(rt, "capacity")
		nURIs := rapid.IntRange(1, 6).Draw(rt, "uris")
		sizes := make([]int64, nURIs)
		for i := range sizes {
			sizes[i] = rapid.Int64Range(0, 200).Draw(rt, fmt.Sprintf("size%d", i))
		}
		steps := rapid.SliceOfN(rapid.IntRange(0, nURIs-1), 1, 25).Draw(rt, "steps")

		dir, err := os.MkdirTemp(base, "cache")
		if err != nil {
			rt.Fatal(err)
		}
		cache, err := NewCache(dir, capacity)
		if err != nil {
			rt.Fatal(err)
		}
		oracle := &lruOracle{capacity: capacity, sizes: map[string]int64{}}
		for i, idx := range steps {
			p := fmt.Sprintf("/%d/run%d-u%d", sizes[idx], run, idx)
			mu.Lock()
			before := requests[p]
			mu.Unlock()
			sb, err := os.MkdirTemp(base, "sb")
			if err != nil {
				rt.Fatal(err)
			}
			if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{cached(srv.URL + p)}, sb, Options{Cache: cache}); err != nil {
				rt.Fatalf("step %d: %v", i, err)
			}
			os.RemoveAll(sb)
			mu.Lock()
			hit := requests[p] == before
			mu.Unlock()
			if want := oracle.access(p, sizes[idx]); hit != want {
				rt.Fatalf("step %d (%s): hit=%v, oracle says %v", i, p, hit, want)
			}
			if cache.Used() != oracle.used() || cache.Len() != len(oracle.order) {
				rt.Fatalf("step %d: cache holds %d bytes in %d entries, oracle %d in %d",
					i, cache.Used(), cache.Len(), oracle.used(), len(oracle.order))
			}
			files, err := os.ReadDir(dir)
			if err != nil || len(files) != len(oracle.order) {
				rt.Fatalf("step %d: %d files in the cache directory, want %d (%v)", i, len(files), len(oracle.order), err)
			}
		}
	})
}
