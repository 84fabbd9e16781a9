package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
)

// maxReadLength caps one /files/read at 16 pages, as Mesos does.
var maxReadLength = int64(os.Getpagesize() * 16)

const missingPath = "Expecting 'path=value' in query.\n"

// open opens the target: inside an os.Root for an attached folder, so that
// ".." and symlinks cannot leave it. The caller closes the file.
func (t target) open() (*os.File, error) {
	if !t.dir {
		return os.Open(t.real)
	}
	root, err := os.OpenRoot(t.real)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Open(t.rel)
}

// lookup resolves the query's path and opens it, writing the error response
// itself (400 missing path or escape, 404 unknown) and returning nil then.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) (*os.File, fs.FileInfo, target, string) {
	p := r.URL.Query().Get("path")
	if p == "" {
		textError(w, http.StatusBadRequest, missingPath)
		return nil, nil, target{}, ""
	}
	f, fi, t, err := h.openVirtual(p)
	if err != nil {
		textError(w, err.Status, err.Message)
		return nil, nil, target{}, ""
	}
	return f, fi, t, p
}

// openVirtual resolves and opens the virtual path p. The error carries the
// status Mesos answers: 404 when nothing is attached there or the file does
// not exist, 400 when it is inaccessible (an escape through ".." or a
// symlink, a permission error).
func (h *Handler) openVirtual(p string) (*os.File, fs.FileInfo, target, *Error) {
	t, ok := h.resolve(p)
	if !ok {
		return nil, nil, target{}, notFound(p)
	}
	f, err := t.open()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, target{}, notFound(p)
		}
		return nil, nil, target{}, &Error{http.StatusBadRequest, fmt.Sprintf("'%s' is inaccessible.\n", p)}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, target{}, &Error{http.StatusInternalServerError, fmt.Sprintf("Failed to stat '%s'.\n", p)}
	}
	return f, fi, t, nil
}

func notFound(p string) *Error {
	return &Error{http.StatusNotFound, fmt.Sprintf("No file or folder '%s' is attached or exists.\n", p)}
}

// browse lists a folder: a JSON array of file infos sorted by path. A file
// path lists nothing (Mesos answers [] there too).
func (h *Handler) browse(w http.ResponseWriter, r *http.Request) {
	f, fi, t, p := h.lookup(w, r)
	if f == nil {
		return
	}
	defer f.Close()
	listing := []fileInfo{}
	if fi.IsDir() {
		entries, err := f.ReadDir(-1)
		if err != nil {
			textError(w, http.StatusInternalServerError, fmt.Sprintf("Failed to list '%s'.\n", p))
			return
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		var root *os.Root
		if t.dir {
			if root, err = os.OpenRoot(t.real); err != nil {
				textError(w, http.StatusInternalServerError, fmt.Sprintf("Failed to list '%s'.\n", p))
				return
			}
			defer root.Close()
		}
		for _, e := range entries {
			// Stat through the root: like Mesos's stat(2) it follows
			// symlinks, but one that points outside the folder fails and
			// is skipped instead of leaking metadata from outside.
			st, err := root.Stat(path.Join(t.rel, e.Name()))
			if err != nil {
				continue
			}
			listing = append(listing, newFileInfo(joinVirtual(p, e.Name()), st))
		}
	}
	writeJSON(w, r, listing)
}

func joinVirtual(dir, name string) string {
	if dir == "" || dir[len(dir)-1] == '/' {
		return dir + name
	}
	return dir + "/" + name
}

// read returns {"data": ..., "offset": N} for at most maxReadLength bytes at
// offset; offset -1 (the default) reports the file size with no data.
func (h *Handler) read(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("path") == "" {
		textError(w, http.StatusBadRequest, missingPath)
		return
	}
	offset, length := int64(-1), int64(-1)
	if s, ok := q["offset"]; ok {
		v, err := strconv.ParseInt(s[0], 10, 64)
		if err != nil {
			textError(w, http.StatusBadRequest, fmt.Sprintf("Failed to parse offset: %q is not an integer.\n", s[0]))
			return
		}
		if v < -1 {
			textError(w, http.StatusBadRequest, fmt.Sprintf("Negative offset provided: %d.\n", v))
			return
		}
		offset = v
	}
	if s, ok := q["length"]; ok {
		v, err := strconv.ParseInt(s[0], 10, 64)
		if err != nil {
			textError(w, http.StatusBadRequest, fmt.Sprintf("Failed to parse length: %q is not an integer.\n", s[0]))
			return
		}
		if v < -1 {
			textError(w, http.StatusBadRequest, fmt.Sprintf("Negative length provided: %d.\n", v))
			return
		}
		length = v
	}
	f, fi, _, _ := h.lookup(w, r)
	if f == nil {
		return
	}
	defer f.Close()
	if fi.IsDir() {
		textError(w, http.StatusBadRequest, "Cannot read a directory.\n")
		return
	}
	size := fi.Size()
	if offset == -1 {
		offset = size
	}
	if length == -1 {
		length = size - offset
	}
	length = min(length, maxReadLength)
	if offset >= size || length <= 0 {
		writeJSON(w, r, readResult{Data: "", Offset: min(offset, size)})
		return
	}
	buf := make([]byte, length)
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		textError(w, http.StatusInternalServerError, fmt.Sprintf("Failed to read '%s'.\n", q.Get("path")))
		return
	}
	writeJSON(w, r, readResult{Data: string(buf[:n]), Offset: offset})
}

type readResult struct {
	Data   string `json:"data"`
	Offset int64  `json:"offset"`
}

// download streams the file's bytes as an attachment.
func (h *Handler) download(w http.ResponseWriter, r *http.Request) {
	f, fi, _, p := h.lookup(w, r)
	if f == nil {
		return
	}
	defer f.Close()
	if fi.IsDir() {
		textError(w, http.StatusBadRequest, "Cannot download a directory.\n")
		return
	}
	name := path.Base(p)
	ctype := "application/octet-stream"
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		ctype = t
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", "attachment; filename="+name)
	// ServeContent handles Range and HEAD; the Content-Type set above wins
	// over its sniffing.
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

// writeJSON writes v as JSON, wrapped as "callback(json);" when the query
// has jsonp=callback (the Mesos web UI reads everything this way).
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		textError(w, http.StatusInternalServerError, "Failed to encode JSON.\n")
		return
	}
	if cb := r.URL.Query().Get("jsonp"); cb != "" {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprintf(w, "%s(%s);", cb, body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func textError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, msg)
}
