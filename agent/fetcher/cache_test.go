package fetcher

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// counting serves files and counts requests per path; a handler hook can
// hold or fail requests.
type counting struct {
	mu    sync.Mutex
	hits  map[string]int
	files map[string][]byte
	hook  func(w http.ResponseWriter, r *http.Request, n int) bool // true: handled
	srv   *httptest.Server
}

func newCounting(t *testing.T, files map[string][]byte) *counting {
	c := &counting{hits: map[string]int{}, files: files}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.hits[r.URL.Path]++
		n := c.hits[r.URL.Path]
		hook := c.hook
		body, ok := c.files[r.URL.Path]
		c.mu.Unlock()
		if hook != nil && hook(w, r, n) {
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *counting) count(p string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits[p]
}

func cached(v string) *mesos.CommandInfo_URI {
	return &mesos.CommandInfo_URI{Value: proto.String(v), Cache: proto.Bool(true)}
}

func newSandbox(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "sandbox")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func newTestCache(t *testing.T, capacity int64) *Cache {
	t.Helper()
	c, err := NewCache(filepath.Join(t.TempDir(), "cache"), capacity)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cacheFiles lists the entry files in the cache directory.
func cacheFiles(t *testing.T, c *Cache) []string {
	t.Helper()
	des, err := os.ReadDir(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestCacheHitsAndExtraction(t *testing.T) {
	tgz := gz(t, makeTar(t, []tarEntry{{name: "app/run.sh", body: "#!/bin/sh\n", mode: 0o755}}))
	srv := newCounting(t, map[string][]byte{"/app.tar.gz": tgz, "/tool": []byte("tool"), "/plain": []byte("direct")})
	cache := newTestCache(t, 1<<20)
	opts := Options{Cache: cache, User: "alice"}

	tool := cached(srv.srv.URL + "/tool")
	tool.Executable = proto.Bool(true)
	archive := cached(srv.srv.URL + "/app.tar.gz")
	archive.Extract = proto.Bool(true)
	plain := uri(srv.srv.URL + "/plain") // cache unset: always fetched directly
	for i := 0; i < 3; i++ {
		sb := newSandbox(t)
		if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{archive, tool, plain}, sb, opts); err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if got := readFile(t, filepath.Join(sb, "app/run.sh")); got != "#!/bin/sh\n" {
			t.Fatalf("fetch %d: extracted %q", i, got)
		}
		fi, err := os.Stat(filepath.Join(sb, "tool"))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("fetch %d: tool %v %v", i, fi, err)
		}
		if readFile(t, filepath.Join(sb, "plain")) != "direct" {
			t.Fatalf("fetch %d: plain", i)
		}
	}
	if n := srv.count("/app.tar.gz"); n != 1 {
		t.Errorf("archive downloaded %d times, want 1", n)
	}
	if n := srv.count("/tool"); n != 1 {
		t.Errorf("tool downloaded %d times, want 1", n)
	}
	if n := srv.count("/plain"); n != 3 {
		t.Errorf("uncached URI downloaded %d times, want 3", n)
	}
	if want := int64(len(tgz) + len("tool")); cache.Used() != want {
		t.Errorf("Used() = %d, want %d", cache.Used(), want)
	}
	// A cached executable is chmod-ed in the sandbox copy, not in the cache.
	for _, name := range cacheFiles(t, cache) {
		if fi, _ := os.Stat(filepath.Join(cache.Dir(), name)); fi.Mode().Perm() != 0o644 {
			t.Errorf("cache file %s has mode %v", name, fi.Mode())
		}
	}

	// Entries are per user.
	if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{tool}, newSandbox(t), Options{Cache: cache, User: "bob"}); err != nil {
		t.Fatal(err)
	}
	if n := srv.count("/tool"); n != 2 {
		t.Errorf("tool downloaded %d times after another user's fetch, want 2", n)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	body := strings.Repeat("x", 100)
	srv := newCounting(t, map[string][]byte{"/a": []byte(body), "/b": []byte(body), "/c": []byte(body)})
	cache := newTestCache(t, 250)
	fetch := func(p string) {
		t.Helper()
		if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{cached(srv.srv.URL + p)}, newSandbox(t), Options{Cache: cache}); err != nil {
			t.Fatal(err)
		}
	}
	fetch("/a")
	fetch("/b")
	fetch("/a") // hit: a becomes the most recently used
	fetch("/c") // 300 > 250: evicts b
	if cache.Used() != 200 || cache.Len() != 2 {
		t.Fatalf("after eviction: used %d, %d entries", cache.Used(), cache.Len())
	}
	if got := len(cacheFiles(t, cache)); got != 2 {
		t.Fatalf("%d files in the cache directory, want 2: %v", got, cacheFiles(t, cache))
	}
	fetch("/a")
	fetch("/c")
	want := map[string]int{"/a": 1, "/b": 1, "/c": 1}
	for p, n := range want {
		if srv.count(p) != n {
			t.Errorf("%s downloaded %d times, want %d", p, srv.count(p), n)
		}
	}
	fetch("/b") // evicted: downloaded again, evicting a (LRU)
	if srv.count("/b") != 2 {
		t.Errorf("/b downloaded %d times, want 2", srv.count("/b"))
	}
	fetch("/c")
	if srv.count("/c") != 1 {
		t.Errorf("/c evicted instead of /a")
	}

	// Shrinking the capacity evicts at once.
	cache.SetCapacity(100)
	if cache.Used() > 100 || len(cacheFiles(t, cache)) != 1 {
		t.Errorf("after shrink: used %d, files %v", cache.Used(), cacheFiles(t, cache))
	}
}

func TestCacheOversizedEntryNotKept(t *testing.T) {
	srv := newCounting(t, map[string][]byte{"/big": []byte(strings.Repeat("y", 500)), "/small": []byte("s")})
	cache := newTestCache(t, 100)
	opts := Options{Cache: cache}
	small := cached(srv.srv.URL + "/small")
	if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{small}, newSandbox(t), opts); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		sb := newSandbox(t)
		if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{cached(srv.srv.URL + "/big")}, sb, opts); err != nil {
			t.Fatal(err)
		}
		if len(readFile(t, filepath.Join(sb, "big"))) != 500 {
			t.Fatal("big file truncated")
		}
	}
	if srv.count("/big") != 2 {
		t.Errorf("oversized URI downloaded %d times, want 2 (never cached)", srv.count("/big"))
	}
	// It did not evict the small entry to make room it could never have.
	if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{small}, newSandbox(t), opts); err != nil {
		t.Fatal(err)
	}
	if srv.count("/small") != 1 {
		t.Errorf("small entry evicted by an oversized download")
	}
	if files := cacheFiles(t, cache); len(files) != 1 {
		t.Errorf("cache directory holds %v, want the small entry only", files)
	}
}

func TestCacheFailureNotCached(t *testing.T) {
	srv := newCounting(t, map[string][]byte{"/flaky": []byte("ok")})
	srv.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 1 {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	cache := newTestCache(t, 1<<20)
	u := cached(srv.srv.URL + "/flaky")
	err := Fetch(context.Background(), []*mesos.CommandInfo_URI{u}, newSandbox(t), Options{Cache: cache})
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("first fetch: %v", err)
	}
	if cache.Len() != 0 || cache.Used() != 0 || len(cacheFiles(t, cache)) != 0 {
		t.Fatalf("failure left state: %d entries, %d bytes, files %v", cache.Len(), cache.Used(), cacheFiles(t, cache))
	}
	sb := newSandbox(t)
	if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{u}, sb, Options{Cache: cache}); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(sb, "flaky")) != "ok" || srv.count("/flaky") != 2 {
		t.Fatalf("retry: %d requests", srv.count("/flaky"))
	}
}

// entryRefs reports how many fetches hold the entry of key.
func entryRefs(c *Cache, key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		return e.refs
	}
	return 0
}

func waitRefs(t *testing.T, c *Cache, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for entryRefs(c, key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("entry has %d references, want %d", entryRefs(c, key), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCacheConcurrentFetchesDownloadOnce(t *testing.T) {
	release := make(chan struct{})
	srv := newCounting(t, map[string][]byte{"/shared.bin": []byte("shared")})
	srv.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		<-release // hold the download until every fetch has joined it
		return false
	}
	cache := newTestCache(t, 1<<20)
	u := cached(srv.srv.URL + "/shared.bin")
	const n = 8
	sandboxes := make([]string, n)
	errs := make(chan error, n)
	for i := range sandboxes {
		sandboxes[i] = newSandbox(t)
		go func(sb string) {
			errs <- Fetch(context.Background(), []*mesos.CommandInfo_URI{u}, sb, Options{Cache: cache})
		}(sandboxes[i])
	}
	waitRefs(t, cache, cacheKey("", u.GetValue()), n)
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, sb := range sandboxes {
		if readFile(t, filepath.Join(sb, "shared.bin")) != "shared" {
			t.Fatal("wrong content")
		}
	}
	if srv.count("/shared.bin") != 1 {
		t.Fatalf("downloaded %d times, want 1", srv.count("/shared.bin"))
	}
	if entryRefs(cache, cacheKey("", u.GetValue())) != 0 {
		t.Fatal("references leaked")
	}
}

func TestCacheWaiterSurvivesOwnerCancellation(t *testing.T) {
	srv := newCounting(t, map[string][]byte{"/slow": []byte("done")})
	srv.hook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 1 {
			<-r.Context().Done() // the first download hangs until its fetch gives up
			return true
		}
		return false
	}
	cache := newTestCache(t, 1<<20)
	u := cached(srv.srv.URL + "/slow")
	key := cacheKey("", u.GetValue())

	ownerCtx, cancelOwner := context.WithCancel(context.Background())
	ownerErr := make(chan error, 1)
	go func() { ownerErr <- Fetch(ownerCtx, []*mesos.CommandInfo_URI{u}, newSandbox(t), Options{Cache: cache}) }()
	waitRefs(t, cache, key, 1)
	waiterSandbox := newSandbox(t)
	waiterErr := make(chan error, 1)
	go func() {
		waiterErr <- Fetch(context.Background(), []*mesos.CommandInfo_URI{u}, waiterSandbox, Options{Cache: cache})
	}()
	waitRefs(t, cache, key, 2)
	// Cancel the owner only once its request is at the server: cancelled
	// earlier, it never arrives and the waiter's retry would be request 1.
	for deadline := time.Now().Add(10 * time.Second); srv.count("/slow") < 1; {
		if time.Now().After(deadline) {
			t.Fatal("the owner's download never reached the server")
		}
		runtime.Gosched()
	}
	cancelOwner()
	if err := <-ownerErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("owner: %v", err)
	}
	if err := <-waiterErr; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if readFile(t, filepath.Join(waiterSandbox, "slow")) != "done" || srv.count("/slow") != 2 {
		t.Fatalf("waiter content or request count (%d) wrong", srv.count("/slow"))
	}
}

func TestNewCacheClearsOnlyItsEntries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"c1-app.tar.gz", "c22-x", ".tmp-0a1b", "keep.txt", "cfg", "c-not-ours"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewCache(dir, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cacheFiles(t, c), ",")
	if got != "c-not-ours,cfg,keep.txt" {
		t.Fatalf("left %q", got)
	}
	for _, tc := range []struct {
		dir  string
		size int64
	}{{"", 10}, {dir, 0}, {dir, -1}, {filepath.Join(dir, "keep.txt", "sub"), 10}} {
		if _, err := NewCache(tc.dir, tc.size); err == nil {
			t.Errorf("NewCache(%q, %d) accepted", tc.dir, tc.size)
		}
	}
}

func TestCacheFromOptions(t *testing.T) {
	srv := newCounting(t, map[string][]byte{"/f": []byte("f")})
	dir := filepath.Join(t.TempDir(), "fetch")
	opts := Options{CacheDir: dir, CacheSize: 1 << 20}
	for i := 0; i < 2; i++ {
		if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{cached(srv.srv.URL + "/f")}, newSandbox(t), opts); err != nil {
			t.Fatal(err)
		}
	}
	if srv.count("/f") != 1 {
		t.Fatalf("downloaded %d times through Options.CacheDir, want 1", srv.count("/f"))
	}
	// Caching off: the cache flag is ignored.
	for i := 0; i < 2; i++ {
		if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{cached(srv.srv.URL + "/f")}, newSandbox(t), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if srv.count("/f") != 3 {
		t.Fatalf("downloaded %d times, want 3", srv.count("/f"))
	}
	// A cache directory that cannot be created fails the fetch clearly.
	bad := Options{CacheDir: filepath.Join(t.TempDir(), "file"), CacheSize: 10}
	os.WriteFile(bad.CacheDir, nil, 0o644)
	err := Fetch(context.Background(), []*mesos.CommandInfo_URI{cached(srv.srv.URL + "/f")}, newSandbox(t), bad)
	if err == nil || !strings.Contains(err.Error(), "fetcher cache") {
		t.Fatalf("got %v", err)
	}
}

func TestCachedLocalFileStillConfined(t *testing.T) {
	sb, outside := layout(t)
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("s"), 0o600)
	cache := newTestCache(t, 1<<20)
	allowed := t.TempDir()
	err := Fetch(context.Background(), []*mesos.CommandInfo_URI{cached("file://" + secret)}, sb, Options{Cache: cache, AllowedFileDirs: []string{allowed}})
	if err == nil || !strings.Contains(err.Error(), "the fetcher refused") {
		t.Fatalf("got %v", err)
	}
	if cache.Len() != 0 {
		t.Fatal("refused file was cached")
	}
}

// A cached local file keeps its permission bits in the cache and in every
// sandbox served from it.
func TestCachedLocalFileKeepsPermissions(t *testing.T) {
	_, outside := layout(t)
	src := filepath.Join(outside, "tool")
	os.WriteFile(src, []byte("t"), 0o600)
	os.Chmod(src, 0o750)
	cache := newTestCache(t, 1<<20)
	for i := range 2 {
		sb := newSandbox(t)
		if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{cached("file://" + src)}, sb,
			Options{Cache: cache, AllowedFileDirs: []string{outside}}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(sb, "tool"))
		if err != nil || fi.Mode().Perm() != 0o750 {
			t.Errorf("fetch %d: %v %v, want mode 0750", i, fi.Mode(), err)
		}
	}
	if cache.Len() != 1 {
		t.Errorf("cache holds %d entries, want 1", cache.Len())
	}
}
