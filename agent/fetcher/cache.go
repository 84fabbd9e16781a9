package fetcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
)

// Mesos's defaults for the agent flags that configure the cache.
const (
	DefaultCacheDir  = "/tmp/mesos/fetch" // --fetcher_cache_dir
	DefaultCacheSize = 2 << 30            // --fetcher_cache_size, bytes
)

// Cache is the fetcher cache. A URI with cache=true is downloaded once into
// the cache directory and copied from there into every sandbox that asks
// for it; entries are keyed by the task's user and the URI. As in Mesos:
//
//   - concurrent fetches of an entry being downloaded wait for that download
//     instead of starting their own;
//   - a failed download is not kept: the next fetch tries again;
//   - least recently used entries not being copied from are evicted to keep
//     the total under the capacity; a download larger than the whole
//     capacity serves the fetches waiting for it and is then dropped
//     (Mesos fetches such URIs directly into the sandbox);
//   - the cache starts empty: NewCache deletes the entries a previous run
//     left in the directory.
//
// A Cache is safe for concurrent use.
type Cache struct {
	dir string

	mu       sync.Mutex
	capacity int64
	entries  map[string]*cacheEntry // by key; only live (not failed) entries
	used     int64                  // bytes of completed entries in entries
	seq      uint64                 // names entry files
	tick     uint64                 // LRU clock
}

// cacheEntry is one cached download. Its fields other than key and file are
// guarded by Cache.mu; err and size are set before ready is closed.
type cacheEntry struct {
	key  string
	file string // absolute path in the cache directory

	ready    chan struct{}
	err      error
	size     int64
	refs     int    // fetches waiting for or copying from the file
	lastUse  uint64 // Cache.tick at the last acquire
	complete bool
	counted  bool // size is included in Cache.used
	dropped  bool // no longer in Cache.entries: delete the file at refs == 0
}

// entryName matches the files a Cache owns in its directory: entries
// ("c<seq>-<name>") and downloads in progress (".tmp-<random>").
var cacheFileName = regexp.MustCompile(`^(c[0-9]+-.*|\.tmp-[0-9a-f]+)$`)

// NewCache opens the cache in dir (created if missing) holding at most
// capacity bytes, and clears the entries a previous agent run left there.
// Only files named like cache entries are removed, so pointing the cache at
// a shared directory cannot delete anything else.
func NewCache(dir string, capacity int64) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("fetcher cache: empty directory (--fetcher_cache_dir)")
	}
	if capacity <= 0 {
		return nil, fmt.Errorf("fetcher cache: size %d must be positive (--fetcher_cache_size)", capacity)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fetcher cache: directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("fetcher cache: %w", err)
	}
	des, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("fetcher cache: %w", err)
	}
	for _, de := range des {
		if cacheFileName.MatchString(de.Name()) {
			if err := os.RemoveAll(filepath.Join(abs, de.Name())); err != nil {
				return nil, fmt.Errorf("fetcher cache: clearing stale entry: %w", err)
			}
		}
	}
	return &Cache{dir: abs, capacity: capacity, entries: map[string]*cacheEntry{}}, nil
}

// Dir is the cache directory (absolute).
func (c *Cache) Dir() string { return c.dir }

// Used is the number of bytes held by cached entries.
func (c *Cache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Len is the number of entries, downloads in progress included.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// SetCapacity changes the capacity, evicting entries if it shrank.
func (c *Cache) SetCapacity(capacity int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if capacity > 0 {
		c.capacity = capacity
	}
	c.evictLocked()
}

// cacheKey identifies an entry: Mesos keys the cache by user and URI,
// because the download runs as (and is readable by) the task's user.
func cacheKey(user, uri string) string { return user + "\x00" + uri }

// fetch stores the URI's content at dest in the sandbox, from the cache.
func (c *Cache) fetch(ctx context.Context, key string, src source, root *os.Root, dest string, opts Options) error {
	for {
		e, owner := c.acquire(key, src)
		if owner {
			c.fill(ctx, e, src, opts)
		} else {
			select {
			case <-e.ready:
			case <-ctx.Done():
				c.release(e)
				return ctx.Err()
			}
		}
		if e.err != nil {
			c.release(e)
			// Another fetch's deadline or cancellation ended the shared
			// download; that is no reason to fail this one.
			if !owner && isContextError(e.err) && ctx.Err() == nil {
				continue
			}
			return e.err
		}
		err := copyFromCache(root, dest, e.file, opts.MaxSize)
		c.release(e)
		return err
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// acquire returns the live entry for key, creating it (owner = true: the
// caller must fill it) when there is none, with a reference held.
func (c *Cache) acquire(key string, src source) (e *cacheEntry, owner bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	if e := c.entries[key]; e != nil {
		e.refs++
		e.lastUse = c.tick
		return e, false
	}
	c.seq++
	e = &cacheEntry{
		key:     key,
		file:    filepath.Join(c.dir, "c"+strconv.FormatUint(c.seq, 10)+"-"+safeName(path.Base(src.path))),
		ready:   make(chan struct{}),
		refs:    1,
		lastUse: c.tick,
	}
	c.entries[key] = e
	return e, true
}

// fill downloads the entry's content and publishes the outcome to every
// fetch waiting for it.
func (c *Cache) fill(ctx context.Context, e *cacheEntry, src source, opts Options) {
	size, err := c.download(ctx, e.file, src, opts)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (timeout %s)", ctx.Err(), opts.Timeout)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e.err, e.size, e.complete = err, size, true
	switch {
	case err != nil:
		c.dropLocked(e) // never cache a failure
	case size > c.capacity:
		c.dropLocked(e) // cannot fit even alone: serve the waiters, then delete
	default:
		c.used += size
		e.counted = true
		c.evictLocked()
	}
	close(e.ready)
}

// download writes the URI's content to file through a temporary name.
func (c *Cache) download(ctx context.Context, file string, src source, opts Options) (int64, error) {
	body, mode, err := open(ctx, src, opts)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(c.dir, ".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("fetcher cache: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(body, opts.MaxSize+1))
	if err == nil && n > opts.MaxSize {
		err = fmt.Errorf("download exceeds the size limit of %d bytes", opts.MaxSize)
	}
	if err == nil {
		// The entry keeps the source's permissions; each sandbox copy
		// takes them from it.
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, err
	}
	return n, nil
}

// release drops a reference; an entry no longer cached loses its file with
// its last reference, and entries freed from use may now be evicted.
func (c *Cache) release(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if e.refs == 0 && e.dropped {
		_ = os.Remove(e.file)
	}
	c.evictLocked()
}

// dropLocked takes e out of the cache (its bytes no longer count); its file
// goes when the last fetch using it releases it.
func (c *Cache) dropLocked(e *cacheEntry) {
	if e.dropped {
		return
	}
	e.dropped = true
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	if e.counted {
		c.used -= e.size
		e.counted = false
	}
	if e.refs == 0 {
		_ = os.Remove(e.file)
	}
}

// evictLocked removes least recently used idle entries until the cache
// fits its capacity (entries in use stay, so it may exceed it briefly).
func (c *Cache) evictLocked() {
	for c.used > c.capacity {
		var victim *cacheEntry
		for _, e := range c.entries {
			if e.complete && e.refs == 0 && (victim == nil || e.lastUse < victim.lastUse) {
				victim = e
			}
		}
		if victim == nil {
			return
		}
		c.dropLocked(victim)
	}
}

// copyFromCache copies a cached file into the sandbox, atomically.
func copyFromCache(root *os.Root, dest, file string, limit int64) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("fetcher cache: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("fetcher cache: %w", err)
	}
	_, err = writeAtomically(root, dest, f, fi.Mode().Perm(), limit, "download")
	return err
}

// safeName keeps an entry's file name readable without letting a URI
// choose arbitrary bytes or lengths.
func safeName(base string) string {
	b := []byte(base)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-' || ch == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[len(b)-64:]
	}
	return string(b)
}

// Caches shared by Fetch calls that configure one through Options.CacheDir,
// one per directory for the life of the process.
var (
	cachesMu sync.Mutex
	caches   = map[string]*Cache{}
)

// cacheFor returns the Cache of opts: opts.Cache, else the process's cache
// for opts.CacheDir (opened on first use), else nil when caching is off.
func cacheFor(opts Options) (*Cache, error) {
	if opts.Cache != nil {
		return opts.Cache, nil
	}
	if opts.CacheDir == "" || opts.CacheSize <= 0 {
		return nil, nil
	}
	abs, err := filepath.Abs(opts.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("fetcher cache: directory %q: %w", opts.CacheDir, err)
	}
	cachesMu.Lock()
	defer cachesMu.Unlock()
	if c := caches[abs]; c != nil {
		c.SetCapacity(opts.CacheSize)
		return c, nil
	}
	c, err := NewCache(abs, opts.CacheSize)
	if err != nil {
		return nil, err
	}
	caches[abs] = c
	return c, nil
}
