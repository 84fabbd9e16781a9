package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// Limitation says that a container hit a resource limit and was (or must
// be) ended for it; the agent turns it into TASK_FAILED with Reason and
// Message, as Mesos does with its isolators' ContainerLimitation.
type Limitation struct {
	// Resources is what was exceeded: for memory, "mem" with the maximum
	// usage in MB.
	Resources []*mesos.Resource
	// Message explains the limitation, e.g. "Memory limit exceeded:
	// Requested: 64MB Maximum Used: 64MB\n\nMEMORY STATISTICS: \n...".
	Message string
	// Reason is the TaskStatus reason, REASON_CONTAINER_LIMITATION_MEMORY.
	Reason mesos.TaskStatus_Reason
}

// oomWatch listens for one container's OOM events: an eventfd registered
// on memory.oom_control (v1), or inotify on memory.events (v2). Its
// goroutine never takes Manager.mu, so finish may be called under it.
type oomWatch struct {
	id   string
	ch   chan Limitation
	f    *os.File
	done chan struct{}

	mu     sync.Mutex
	sent   bool
	closed bool
}

// watchOOM starts listening for OOM events in the container's memory
// cgroup, which must exist.
func (m *Manager) watchOOM(id string) (*oomWatch, error) {
	var (
		f   *os.File
		err error
	)
	if m.version == V2 {
		f, err = inotifyModify(filepath.Join(m.dir("", id), "memory.events"))
	} else {
		f, err = oomEventfd(m.dir("memory", id))
	}
	if err != nil {
		return nil, err
	}
	w := &oomWatch{id: id, ch: make(chan Limitation, 1), f: f, done: make(chan struct{})}
	go w.run(m)
	return w, nil
}

// oomEventfd registers a non-blocking eventfd for OOM notifications of the
// v1 memory cgroup at dir (cgroup.event_control). The file is pollable, so
// a Read parks only a goroutine and Close wakes it.
func oomEventfd(dir string) (*os.File, error) {
	efd, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if errno != 0 {
		return nil, fmt.Errorf("eventfd: %w", errno)
	}
	ctl, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		syscall.Close(int(efd))
		return nil, err
	}
	defer ctl.Close()
	// ctl.Fd() is fine (a regular file); efd must stay non-blocking, so
	// the raw number is used before wrapping it.
	line := fmt.Sprintf("%d %d", efd, ctl.Fd())
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(line), 0o644); err != nil {
		syscall.Close(int(efd))
		return nil, err
	}
	return os.NewFile(efd, "oom-eventfd"), nil
}

// inotifyModify returns a non-blocking inotify descriptor watching path for
// modifications.
func inotifyModify(path string) (*os.File, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_MODIFY); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("inotify_add_watch %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), "memory-events-inotify"), nil
}

func (w *oomWatch) run(m *Manager) {
	defer close(w.done)
	buf := make([]byte, 4096)
	for {
		if _, err := w.f.Read(buf); err != nil {
			return // closed by finish, or the cgroup went away
		}
		if m.version == V2 && !m.oomKilled(w.id) {
			continue // memory.events changed for another counter (high, max)
		}
		w.send(m.limitation(w.id))
	}
}

func (w *oomWatch) send(l Limitation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent || w.closed {
		return
	}
	w.sent = true
	w.ch <- l // buffered: never blocks, sent at most once
}

// finish stops listening; an OOM kill that happened but was not reported
// (the process ended before the notification was read) is sent now, while
// the cgroup still exists; then the channel is closed.
func (w *oomWatch) finish(m *Manager) {
	w.f.Close()
	<-w.done
	w.mu.Lock()
	sent := w.sent
	w.mu.Unlock()
	if !sent && m.oomKilled(w.id) {
		w.send(m.limitation(w.id))
	}
	w.mu.Lock()
	w.closed = true
	close(w.ch)
	w.mu.Unlock()
}

// oomKilled tells whether the kernel OOM killer killed a process of the
// container: oom_kill in memory.oom_control (v1, kernel 4.13+) or
// memory.events (v2).
func (m *Manager) oomKilled(id string) bool {
	var path string
	if m.version == V2 {
		path = filepath.Join(m.dir("", id), "memory.events")
	} else {
		path = filepath.Join(m.dir("memory", id), "memory.oom_control")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	kv, err := parseKV(bytes.NewReader(data))
	if err != nil {
		return false
	}
	return kv["oom_kill"] > 0
}

// limitation describes the container's OOM as Mesos's memory isolator
// does: the limit, the maximum usage and memory.stat. Parts that cannot be
// read are left out.
func (m *Manager) limitation(id string) Limitation {
	var limitFile, peakFile, dir string
	if m.version == V2 {
		dir = m.dir("", id)
		limitFile, peakFile = "memory.max", "memory.peak"
	} else {
		dir = m.dir("memory", id)
		limitFile, peakFile = "memory.limit_in_bytes", "memory.max_usage_in_bytes"
	}
	var b strings.Builder
	b.WriteString("Memory limit exceeded: ")
	if v, err := readUintFile(filepath.Join(dir, limitFile)); err == nil {
		fmt.Fprintf(&b, "Requested: %s ", FormatBytes(v))
	}
	peak, err := readUintFile(filepath.Join(dir, peakFile))
	if err != nil && m.version == V2 {
		peak, err = readUintFile(filepath.Join(dir, "memory.current")) // kernels before 5.19
	}
	if err == nil {
		fmt.Fprintf(&b, "Maximum Used: %s\n", FormatBytes(peak))
	}
	if stat, err := os.ReadFile(filepath.Join(dir, "memory.stat")); err == nil {
		fmt.Fprintf(&b, "\nMEMORY STATISTICS: \n%s\n", stat)
	}
	return Limitation{
		Resources: []*mesos.Resource{{
			Name:   proto.String("mem"),
			Type:   mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(float64(peak) / (1 << 20))},
		}},
		Message: b.String(),
		Reason:  mesos.TaskStatus_REASON_CONTAINER_LIMITATION_MEMORY,
	}
}

// FormatBytes renders a byte count as stout's Bytes does: in the largest
// unit (B, KB, MB, GB, TB) that loses nothing, e.g. "64MB", "1536KB",
// "1000B".
func FormatBytes(n uint64) string {
	if n == 0 || n%1024 != 0 {
		return strconv.FormatUint(n, 10) + "B"
	}
	units := []string{"KB", "MB", "GB"}
	n /= 1024
	for _, u := range units {
		if n%1024 != 0 {
			return strconv.FormatUint(n, 10) + u
		}
		n /= 1024
	}
	return strconv.FormatUint(n, 10) + "TB"
}

// parseKV parses "key value" lines (memory.stat, memory.events,
// memory.oom_control, cpu.stat, cpuacct.stat).
func parseKV(r io.Reader) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		fields := strings.Fields(t)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: %q is not 'key value'", line, t)
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: value of %q: %w", line, fields[0], err)
		}
		out[fields[0]] = v
	}
	return out, sc.Err()
}

// errUnlimited is returned for a v2 limit file that says "max".
var errUnlimited = errors.New("unlimited")

// readUintFile reads a file holding one unsigned number (or "max").
func readUintFile(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseUint(string(data))
}

func parseUint(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, errUnlimited
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}
