// Package files serves the agent's classic /files endpoints (/files/browse,
// /files/read, /files/download, /files/debug, each also with a .json suffix)
// over a set of attached folders and files, as Mesos does.
//
// Requests name virtual paths: the agent (package agent) attaches every
// executor sandbox under several virtual names (its real path, the
// .../runs/latest path, and /frameworks/<f>/executors/<e>/runs/latest) and
// its log file at /slave/log; agent/httpapi mounts the Handler. A virtual
// path resolves through the longest attached prefix; what follows the prefix
// is opened inside the attached folder through os.Root, so neither ".." nor
// a symlink can reach outside it.
package files

import (
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"mezzo/internal/authorizer"
)

// Handler serves /files/*. It is safe for concurrent use: the agent attaches
// and detaches from its loop while HTTP requests read.
type Handler struct {
	mu    sync.RWMutex
	paths map[string]string // virtual (no trailing slash) -> real path
	// owners are the access_sandboxes objects of owned attachments (the
	// user a sandbox's executor runs as), by virtual path.
	owners map[string]authorizer.Object
}

// New returns a Handler with nothing attached.
func New() *Handler {
	return &Handler{paths: map[string]string{}, owners: map[string]authorizer.Object{}}
}

// Attach makes real (a directory or a file) visible at the virtual path,
// replacing any previous attachment of that name. A symlinked real path
// (such as a runs/latest link) is resolved now, as Mesos does, so the
// attachment keeps pointing where the link pointed at attach time.
func (h *Handler) Attach(virtual, real string) { h.attach(virtual, real, nil) }

// AttachSandbox attaches a sandbox as Attach does, recording whose it is:
// owner is access_sandboxes' object for it (authorizer.AccessSandboxObject),
// which OwnerOf reports for every path inside it.
func (h *Handler) AttachSandbox(virtual, real string, owner authorizer.Object) {
	h.attach(virtual, real, &owner)
}

func (h *Handler) attach(virtual, real string, owner *authorizer.Object) {
	if r, err := filepath.EvalSymlinks(real); err == nil {
		real = r
	}
	real = filepath.Clean(real)
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v := cleanVirtual(virtual)
	h.paths[v] = real
	delete(h.owners, v)
	if owner != nil {
		h.owners[v] = *owner
	}
}

// Detach removes the attachment at virtual, if any.
func (h *Handler) Detach(virtual string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.paths, cleanVirtual(virtual))
	delete(h.owners, cleanVirtual(virtual))
}

// OwnerOf says whose the attachment serving the virtual path p is, as
// the request will resolve it (the longest attached prefix): its owner and
// sandbox=true for a sandbox, sandbox=false for another attachment, and
// found=false when nothing serves p (the request is then a 404).
func (h *Handler) OwnerOf(p string) (owner authorizer.Object, sandbox, found bool) {
	prefix, ok := h.attachedPrefix(p)
	if !ok {
		return authorizer.Object{}, false, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	owner, sandbox = h.owners[prefix]
	return owner, sandbox, true
}

// Attached returns a copy of the virtual -> real mapping (what /files/debug shows).
func (h *Handler) Attached() map[string]string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]string, len(h.paths))
	for k, v := range h.paths {
		out[k] = v
	}
	return out
}

// cleanVirtual strips trailing slashes, as Mesos does for attach names and lookups.
func cleanVirtual(v string) string {
	for len(v) > 1 && strings.HasSuffix(v, "/") {
		v = v[:len(v)-1]
	}
	return v
}

// ServeHTTP routes on the last element of the URL path, so the handler works
// mounted at /files/ or behind a prefix such as /slave(1)/files/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimSuffix(path.Base(r.URL.Path), ".json") {
	case "browse":
		h.browse(w, r)
	case "read":
		h.read(w, r)
	case "download":
		h.download(w, r)
	case "debug":
		writeJSON(w, r, h.Attached())
	default:
		textError(w, http.StatusNotFound, "No endpoint '"+r.URL.Path+"' on this agent; /files/ serves browse, read, download and debug\n")
	}
}

// target is a resolved virtual path.
type target struct {
	real string // the attached folder or file
	dir  bool   // real is a folder; rel is opened inside it
	rel  string // path inside real ("." for real itself), slash-separated
}

// attachedPrefix finds the longest attached prefix of virtual (on '/'
// boundaries), as resolve does.
func (h *Handler) attachedPrefix(virtual string) (string, bool) {
	prefix, _, ok := h.split(virtual)
	return prefix, ok
}

// split divides virtual into its longest attached prefix and the rest
// (slash-separated, "" for the attachment itself).
func (h *Handler) split(virtual string) (prefix, suffix string, found bool) {
	v := cleanVirtual(virtual)
	h.mu.RLock()
	defer h.mu.RUnlock()
	prefix = v
	for {
		if _, ok := h.paths[prefix]; ok {
			return prefix, suffix, true
		}
		i := strings.LastIndex(prefix, "/")
		if i < 0 || prefix == "/" {
			return "", "", false
		}
		if suffix == "" {
			suffix = prefix[i+1:]
		} else {
			suffix = prefix[i+1:] + "/" + suffix
		}
		if i == 0 {
			prefix = "/"
		} else {
			prefix = prefix[:i]
		}
	}
}

// resolve finds the longest attached prefix of virtual (on '/' boundaries).
// found=false means no attachment covers it (404).
func (h *Handler) resolve(virtual string) (t target, found bool) {
	prefix, suffix, ok := h.split(virtual)
	if !ok {
		return target{}, false
	}
	h.mu.RLock()
	t.real, ok = h.paths[prefix]
	h.mu.RUnlock()
	if !ok {
		return target{}, false // detached meanwhile
	}
	t.rel = suffix
	if t.rel == "" {
		t.rel = "."
	}
	fi, err := os.Stat(t.real)
	if err != nil {
		return target{}, false
	}
	t.dir = fi.IsDir()
	if !t.dir && t.rel != "." {
		// The attachment is a file but the request treats it as a folder.
		return target{}, false
	}
	return t, true
}
