// Package fetcher downloads the URIs of a CommandInfo into an executor's
// sandbox before the executor starts, as Mesos's fetcher does: http, https,
// file:// and absolute paths; the destination is the URI's basename or
// output_file; executable URIs are made 0755 and never extracted; archives
// (.tar, .tar.gz, .tgz, .tar.bz2, .tbz2, .zip) and single .gz files are
// extracted into the sandbox unless extract is false.
//
// The containerizer (agent/containerizer) calls Fetch. Every write goes
// through an os.Root opened on the sandbox, so neither output_file nor an
// archive entry (by "..", an absolute name, or a symlink or hard link) can
// write outside it; such entries are refused with an error naming them.
//
// URIs with cache=true go through the fetcher cache (cache.go) when one is
// configured: downloaded once per user and URI into the cache directory,
// then copied into each sandbox, and extracted or made executable there.
//
// Not done: .tar.xz/.txz, which the standard library cannot decompress:
// those are refused with a clear error unless extract is false.
package fetcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"time"

	"mezzo/api/mesos"
)

// Defaults for zero Options fields.
const (
	DefaultMaxSize = 1 << 30          // 1 GiB per URI
	DefaultTimeout = 10 * time.Minute // per URI
)

// Options configures Fetch.
type Options struct {
	// HTTPClient fetches http and https URIs; nil means a client with
	// connect, TLS and response-header timeouts (the whole transfer is
	// bounded by Timeout).
	HTTPClient *http.Client
	// AllowedFileDirs confines file:// URIs and plain paths to these
	// directories (after resolving symlinks); an empty list refuses every
	// local path (*RefusedError).
	AllowedFileDirs []string
	// MaxSize limits the bytes fetched for one URI, and separately the
	// bytes extracted from it; 0 means DefaultMaxSize.
	MaxSize int64
	// Timeout bounds fetching and extracting one URI; 0 means DefaultTimeout.
	Timeout time.Duration

	// CacheDir and CacheSize (bytes) configure the fetcher cache
	// (--fetcher_cache_dir, --fetcher_cache_size): URIs with cache=true are
	// then downloaded once into CacheDir and copied into each sandbox. The
	// cache is opened on first use and shared by every Fetch naming the same
	// directory. An empty CacheDir or a CacheSize of 0 disables caching (the
	// cache flag is then ignored and such URIs are fetched directly).
	CacheDir  string
	CacheSize int64
	// Cache, when set, is the cache to use instead of the one CacheDir
	// names (the agent may open it at startup with NewCache to report a bad
	// directory early).
	Cache *Cache
	// User is the user the task runs as; cache entries are kept per user
	// and URI, as in Mesos. Set it per Fetch call.
	User string
}

var defaultClient = &http.Client{
	Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          16,
	},
}

// URIError is the error of one URI; URI is the URI's value with any
// password redacted.
type URIError struct {
	URI string
	Err error
}

func (e *URIError) Error() string { return fmt.Sprintf("fetching URI %q: %v", e.URI, e.Err) }
func (e *URIError) Unwrap() error { return e.Err }

// Fetch downloads each URI into sandbox (an existing directory), in order,
// and stops at the first failure, returning a *URIError naming the URI.
func Fetch(ctx context.Context, uris []*mesos.CommandInfo_URI, sandbox string, opts Options) error {
	if opts.HTTPClient == nil {
		opts.HTTPClient = defaultClient
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	root, err := os.OpenRoot(sandbox)
	if err != nil {
		return fmt.Errorf("fetcher: opening sandbox: %w", err)
	}
	defer root.Close()
	var cache *Cache
	for _, u := range uris {
		if u.GetCache() {
			if cache, err = cacheFor(opts); err != nil {
				return err
			}
			break
		}
	}
	for i, u := range uris {
		if err := fetchOne(ctx, u, root, cache, opts); err != nil {
			name := redact(u.GetValue())
			if name == "" {
				name = fmt.Sprintf("#%d", i)
			}
			return &URIError{URI: name, Err: err}
		}
	}
	return nil
}

func fetchOne(ctx context.Context, u *mesos.CommandInfo_URI, root *os.Root, cache *Cache, opts Options) error {
	if u == nil || u.GetValue() == "" {
		return errors.New("missing 'value'")
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	src, err := parseSource(u.GetValue())
	if err != nil {
		return err
	}
	dest, err := destination(u, src)
	if err != nil {
		return err
	}
	if dir := path.Dir(dest); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating directory for 'output_file' %q: %w", dest, err)
		}
	}
	if u.GetCache() && cache != nil {
		err = cache.fetch(ctx, cacheKey(opts.User, u.GetValue()), src, root, dest, opts)
	} else {
		err = download(ctx, src, root, dest, opts)
	}
	if err != nil {
		return err
	}
	if u.GetExecutable() {
		if err := root.Chmod(dest, 0o755); err != nil {
			return fmt.Errorf("making %q executable: %w", dest, err)
		}
		return nil // executables are never extracted
	}
	if !u.GetExtract() {
		return nil
	}
	return extract(ctx, root, dest, opts.MaxSize)
}

// destination is where the URI is stored, relative to the sandbox:
// output_file (which must be a local path) or the basename of the URI path.
func destination(u *mesos.CommandInfo_URI, src source) (string, error) {
	if out := u.GetOutputFile(); out != "" {
		if !filepath.IsLocal(out) {
			return "", fmt.Errorf("'output_file' %q must be a relative path inside the sandbox", out)
		}
		return filepath.ToSlash(filepath.Clean(out)), nil
	}
	base := path.Base(src.path)
	if base == "/" || base == "." || base == ".." || base == "" {
		return "", fmt.Errorf("cannot derive a file name from URI path %q; set 'output_file'", src.path)
	}
	return base, nil
}

// writeAtomically streams r into dest through a temporary file in the same
// folder, renamed into place only when complete, so a failed fetch leaves no
// partial file under the final name.
// The file gets mode (set explicitly, so the agent's umask does not narrow
// a source's permissions).
func writeAtomically(root *os.Root, dest string, r io.Reader, mode os.FileMode, limit int64, what string) (int64, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(dest), ".fetch-"+hex.EncodeToString(rnd[:])+"-"+path.Base(dest))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("creating %q: %w", dest, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("%s exceeds the size limit of %d bytes", what, limit)
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, dest)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return n, err
	}
	return n, nil
}

// redact hides a password in a URI before it appears in an error.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}
