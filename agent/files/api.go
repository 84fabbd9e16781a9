package files

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"sort"
	"syscall"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// Error is a refusal of List or Read with the HTTP status the operator API
// answers (404 not found, 400 inaccessible or a folder where a file is
// needed, 500 an I/O failure).
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// HTTPStatus is the status to answer e with.
func (e *Error) HTTPStatus() int { return e.Status }

// List returns the entries of the folder at the virtual path p (one entry,
// the file itself, when p is a file), sorted by path, for the v1 operator
// API's LIST_FILES. Entries whose symlink points outside the attached folder
// are left out, as /files/browse does.
func (h *Handler) List(p string) ([]*mesos.FileInfo, error) {
	f, fi, t, e := h.openVirtual(p)
	if e != nil {
		return nil, e
	}
	defer f.Close()
	if !fi.IsDir() {
		return []*mesos.FileInfo{fileInfoProto(p, fi)}, nil
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, &Error{http.StatusInternalServerError, fmt.Sprintf("Failed to list '%s'.\n", p)}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	root, err := os.OpenRoot(t.real)
	if err != nil {
		return nil, &Error{http.StatusInternalServerError, fmt.Sprintf("Failed to list '%s'.\n", p)}
	}
	defer root.Close()
	out := make([]*mesos.FileInfo, 0, len(entries))
	for _, ent := range entries {
		st, err := root.Stat(path.Join(t.rel, ent.Name()))
		if err != nil {
			continue
		}
		out = append(out, fileInfoProto(joinVirtual(p, ent.Name()), st))
	}
	return out, nil
}

// Read returns at most length bytes (a negative length: up to the end) of
// the file at the virtual path p from offset, capped at 16 pages as
// /files/read is, and the file's size, for the v1 operator API's READ_FILE.
// An offset at or past the end gives no data.
func (h *Handler) Read(p string, offset, length int64) ([]byte, int64, error) {
	if offset < 0 {
		return nil, 0, &Error{http.StatusBadRequest, fmt.Sprintf("Negative offset provided: %d.\n", offset)}
	}
	f, fi, _, e := h.openVirtual(p)
	if e != nil {
		return nil, 0, e
	}
	defer f.Close()
	if fi.IsDir() {
		return nil, 0, &Error{http.StatusBadRequest, "Cannot read a directory.\n"}
	}
	size := fi.Size()
	if length < 0 || length > size-offset {
		length = size - offset
	}
	length = min(length, maxReadLength)
	if offset >= size || length <= 0 {
		return []byte{}, size, nil
	}
	buf := make([]byte, length)
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, &Error{http.StatusInternalServerError, fmt.Sprintf("Failed to read '%s'.\n", p)}
	}
	return buf[:n], size, nil
}

// fileInfoProto is one entry as Mesos's FileInfo: mode is st_mode (type and
// permission bits), uid and gid are names when they have one.
func fileInfoProto(virtual string, fi os.FileInfo) *mesos.FileInfo {
	c := newFileInfo(virtual, fi)
	out := &mesos.FileInfo{
		Path:  proto.String(virtual),
		Nlink: proto.Int32(int32(c.Nlink)),
		Size:  proto.Uint64(uint64(max(fi.Size(), 0))),
		Mtime: &mesos.TimeInfo{Nanoseconds: proto.Int64(fi.ModTime().UnixNano())},
		Uid:   proto.String(c.UID),
		Gid:   proto.String(c.GID),
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out.Mode = proto.Uint32(st.Mode)
	} else {
		out.Mode = proto.Uint32(uint32(fi.Mode().Perm()))
	}
	return out
}
