package files

import (
	"io/fs"
	"os/user"
	"strconv"
	"sync"
	"syscall"
)

// fileInfo is one /files/browse entry, with Mesos's field names and types:
// mtime in whole seconds, mode as ls shows it, uid and gid as names (or the
// number as a string when the id has no name).
type fileInfo struct {
	Path  string `json:"path"`
	Nlink uint64 `json:"nlink"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Mode  string `json:"mode"`
	UID   string `json:"uid"`
	GID   string `json:"gid"`
}

func newFileInfo(virtual string, fi fs.FileInfo) fileInfo {
	out := fileInfo{
		Path:  virtual,
		Nlink: 1,
		Size:  fi.Size(),
		Mtime: fi.ModTime().Unix(),
		Mode:  modeString(fi.Mode()),
		UID:   "0",
		GID:   "0",
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out.Nlink = uint64(st.Nlink)
		out.UID = userName(st.Uid)
		out.GID = groupName(st.Gid)
	}
	return out
}

// modeString renders the file type and permission bits as ls does
// ("-rw-r--r--", "drwxr-xr-x"); setuid, setgid and sticky bits are not shown.
func modeString(m fs.FileMode) string {
	b := []byte("----------")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeNamedPipe != 0:
		b[0] = 'p'
	case m&fs.ModeSocket != 0:
		b[0] = 's'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	case m&fs.ModeDevice != 0:
		b[0] = 'b'
	}
	const rwx = "rwxrwxrwx"
	perm := m.Perm()
	for i := 0; i < 9; i++ {
		if perm&(1<<(8-i)) != 0 {
			b[i+1] = rwx[i]
		}
	}
	return string(b)
}

// Name lookups read /etc/passwd and /etc/group; cache them, listings repeat
// the same few ids.
var (
	namesMu sync.Mutex
	users   = map[uint32]string{}
	groups  = map[uint32]string{}
)

func userName(id uint32) string {
	namesMu.Lock()
	defer namesMu.Unlock()
	if n, ok := users[id]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(id), 10)
	if u, err := user.LookupId(n); err == nil {
		n = u.Username
	}
	users[id] = n
	return n
}

func groupName(id uint32) string {
	namesMu.Lock()
	defer namesMu.Unlock()
	if n, ok := groups[id]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(id), 10)
	if g, err := user.LookupGroupId(n); err == nil {
		n = g.Name
	}
	groups[id] = n
	return n
}
