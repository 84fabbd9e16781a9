package fetcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// source is a parsed URI.
type source struct {
	scheme string // "http", "https" or "file"
	raw    string // the URI as given (for HTTP requests)
	path   string // URL path (http) or absolute local path (file)
}

func parseSource(raw string) (source, error) {
	switch {
	case strings.HasPrefix(raw, "/"):
		return source{scheme: "file", raw: raw, path: filepath.Clean(raw)}, nil
	case hasSchemePrefix(raw, "file://"):
		u, err := url.Parse(raw)
		if err != nil {
			return source{}, fmt.Errorf("invalid URI: %w", err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return source{}, fmt.Errorf("file URI with host %q: only local files can be fetched", u.Host)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return source{}, errors.New("file URI must have an absolute path")
		}
		return source{scheme: "file", raw: raw, path: filepath.Clean(u.Path)}, nil
	case hasSchemePrefix(raw, "http://"), hasSchemePrefix(raw, "https://"):
		u, err := url.Parse(raw)
		if err != nil {
			return source{}, fmt.Errorf("invalid URI: %w", err)
		}
		if u.Host == "" {
			return source{}, errors.New("missing host")
		}
		return source{scheme: strings.ToLower(u.Scheme), raw: raw, path: u.Path}, nil
	}
	scheme, _, ok := strings.Cut(raw, "://")
	if ok {
		return source{}, fmt.Errorf("unsupported URI scheme %q (supported: http, https, file, absolute paths)", scheme)
	}
	return source{}, errors.New("URI must be http://, https://, file:// or an absolute path")
}

func hasSchemePrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// download stores the URI's bytes at dest. It is the seam for the fetcher
// cache: a cache would serve (or fill itself from) open and copy from there.
func download(ctx context.Context, src source, root *os.Root, dest string, opts Options) error {
	body, err := open(ctx, src, opts)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = writeAtomically(root, dest, body, opts.MaxSize, "download")
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (timeout %s)", ctx.Err(), opts.Timeout)
	}
	return err
}

// open returns the URI's content stream.
func open(ctx context.Context, src source, opts Options) (io.ReadCloser, error) {
	if src.scheme == "file" {
		return openLocal(src.path, opts.AllowedFileDirs)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.raw, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid URI: %w", err)
	}
	resp, err := opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	if resp.ContentLength > opts.MaxSize {
		resp.Body.Close()
		return nil, fmt.Errorf("download of %d bytes exceeds the size limit of %d bytes", resp.ContentLength, opts.MaxSize)
	}
	return resp.Body, nil
}

// openLocal opens a local regular file, enforcing AllowedFileDirs on the
// symlink-resolved path so a link cannot smuggle in a file from elsewhere.
func openLocal(p string, allowed []string) (io.ReadCloser, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, err
	}
	if len(allowed) > 0 && !underAny(real, allowed) {
		return nil, fmt.Errorf("local path %q is outside the allowed directories %v", p, allowed)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("local path %q is not a regular file", p)
	}
	return f, nil
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		rel, err := filepath.Rel(filepath.Clean(d), p)
		if err == nil && filepath.IsLocal(rel) {
			return true
		}
		if err == nil && rel == "." {
			return true
		}
	}
	return false
}
