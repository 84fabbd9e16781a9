package containerizer

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// Waiting for a process that is not our child (an executor re-attached
// after an agent restart): wait4 cannot reap it, so the containerizer
// watches a pidfd (Linux 5.3+), which becomes readable when the process
// exits, from Go's poller; on kernels without pidfd it polls /proc.

// sysPidfdOpen is pidfd_open(2) on every Linux architecture.
const sysPidfdOpen = 434

// procPollInterval is how often the /proc fallback looks.
const procPollInterval = 100 * time.Millisecond

// processWatch is closed when the watched process has exited.
type processWatch struct{ done chan struct{} }

func (w *processWatch) wait() { <-w.done }

// watchProcess starts watching pid, which must have started at startTicks
// (0: unknown). It reports whether the process was alive when the watch
// began; if not, the watch is already done.
func watchProcess(pid int, startTicks uint64) (*processWatch, bool) {
	w := &processWatch{done: make(chan struct{})}
	if !sameLiveProcess(pid, startTicks) {
		close(w.done)
		return w, false
	}
	fd, _, errno := syscall.RawSyscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == 0 {
		// The pidfd names whatever has this pid now: check it is still
		// our process, so a recycled pid is not watched instead.
		if !sameLiveProcess(pid, startTicks) {
			syscall.Close(int(fd))
			close(w.done)
			return w, false
		}
		if syscall.SetNonblock(int(fd), true) == nil {
			f := os.NewFile(fd, "pidfd:"+strconv.Itoa(pid))
			go func() {
				defer f.Close()
				if waitReadable(f) == nil {
					close(w.done)
					return
				}
				pollProcess(pid, startTicks)
				close(w.done)
			}()
			return w, true
		}
		syscall.Close(int(fd))
	}
	go func() {
		pollProcess(pid, startTicks)
		close(w.done)
	}()
	return w, true
}

// waitReadable blocks until f (a pidfd) polls readable.
func waitReadable(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool { return pollIn(fd) })
}

// pollIn reports whether fd is readable now (ppoll with a zero timeout).
func pollIn(fd uintptr) bool {
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: 0x1} // POLLIN
	var ts syscall.Timespec
	n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return errno == 0 && n > 0
}

func pollProcess(pid int, startTicks uint64) {
	for sameLiveProcess(pid, startTicks) {
		time.Sleep(procPollInterval)
	}
}

// sameLiveProcess reports whether pid is a running (not zombie) process
// that started at startTicks (any start time when 0).
func sameLiveProcess(pid int, startTicks uint64) bool {
	st, err := readProcStat(pid)
	if err != nil {
		return false
	}
	if st.state == 'Z' || st.state == 'X' || st.state == 'x' {
		return false
	}
	return startTicks == 0 || st.startTicks == startTicks
}

type procStat struct {
	state        byte
	session      int
	utime, stime uint64 // clock ticks
	startTicks   uint64
	rssPages     uint64
}

// readProcStat reads a process's state and start time from
// /proc/<pid>/stat.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat parses a /proc/<pid>/stat line. The command name (field
// 2) may contain spaces and parentheses, so fields are counted from its
// last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc stat: no ')' after the command name")
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return procStat{}, fmt.Errorf("/proc stat: %d fields after the command name, want at least 20", len(fields))
	}
	if len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc stat: state %q is not one letter", fields[0])
	}
	num := func(i int, name string) (uint64, error) {
		v, err := strconv.ParseUint(string(fields[i]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %s: %v", name, err)
		}
		return v, nil
	}
	st := procStat{state: fields[0][0]}
	var err error
	if st.startTicks, err = num(19, "starttime"); err != nil {
		return procStat{}, err
	}
	// session, utime, stime and rss are informative: a malformed one is 0.
	if sid, err := strconv.Atoi(string(fields[3])); err == nil {
		st.session = sid
	}
	st.utime, _ = num(11, "utime")
	st.stime, _ = num(12, "stime")
	if len(fields) > 21 {
		st.rssPages, _ = num(21, "rss")
	}
	return st, nil
}

// processStartTicks is pid's start time in clock ticks since boot.
func processStartTicks(pid int) (uint64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	return st.startTicks, nil
}
