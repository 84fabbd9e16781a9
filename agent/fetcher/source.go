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
	body, mode, err := open(ctx, src, opts)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = writeAtomically(root, dest, body, mode, opts.MaxSize, "download")
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (timeout %s)", ctx.Err(), opts.Timeout)
	}
	return err
}

// downloadMode is the permission of a file fetched over HTTP.
const downloadMode os.FileMode = 0o644

// open returns the URI's content stream and the permission bits its copy
// gets: a local file's own (without setuid, setgid or sticky), else
// downloadMode.
func open(ctx context.Context, src source, opts Options) (io.ReadCloser, os.FileMode, error) {
	if src.scheme == "file" {
		return openLocal(src.path, opts.AllowedFileDirs)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.raw, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid URI: %w", err)
	}
	resp, err := opts.HTTPClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		return nil, 0, fmt.Errorf("HTTP status %s", resp.Status)
	}
	if resp.ContentLength > opts.MaxSize {
		resp.Body.Close()
		return nil, 0, fmt.Errorf("download of %d bytes exceeds the size limit of %d bytes", resp.ContentLength, opts.MaxSize)
	}
	return resp.Body, downloadMode, nil
}

// RefusedError is a local path (file:// URI or absolute path) that the
// agent's --fetcher_allowed_dirs does not allow: the fetcher never opens
// it, and says why without telling whether it exists.
type RefusedError struct {
	Path   string // as the URI gave it
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the fetcher refused local path %q: %s", e.Path, e.Reason)
}

// openLocal opens a local regular file that lies, once symlinks are
// resolved, under one of allowed. With no allowed directories every local
// path is refused: a task must not copy the agent's own files (/etc/shadow,
// other sandboxes, the agent's checkpoints) into its sandbox, where /files
// would serve them. The file is opened through an os.Root on the allowed
// directory, so a symlink swapped in after the check cannot lead outside.
func openLocal(p string, allowed []string) (io.ReadCloser, os.FileMode, error) {
	if len(allowed) == 0 {
		return nil, 0, &RefusedError{Path: p, Reason: "local files may be fetched only from under --fetcher_allowed_dirs, which is not set on this agent"}
	}
	outside := &RefusedError{Path: p, Reason: fmt.Sprintf("it is not under --fetcher_allowed_dirs (%s) once symlinks are resolved",
		strings.Join(allowed, ","))}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if _, _, ok := under(p, allowed); !ok {
			return nil, 0, outside // do not tell whether it exists
		}
		return nil, 0, err
	}
	dir, rel, ok := under(real, allowed)
	if !ok {
		return nil, 0, outside
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("local path %q is not a regular file", p)
	}
	return f, fi.Mode().Perm(), nil
}

// under returns the (symlink-resolved) directory of dirs that p lies
// under, and p relative to it.
func under(p string, dirs []string) (dir, rel string, ok bool) {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		d = filepath.Clean(d)
		r, err := filepath.Rel(d, p)
		if err == nil && (r == "." || filepath.IsLocal(r)) {
			return d, r, true
		}
	}
	return "", "", false
}
