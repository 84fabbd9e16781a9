package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var syscallESRCH = syscall.ESRCH

// parseProcs parses a cgroup.procs (or tasks) file: one pid per line.
func parseProcs(r io.Reader) ([]int, error) {
	var out []int
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		pid, err := strconv.Atoi(t)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("cgroup.procs line %d: %q is not a pid", line, t)
		}
		out = append(out, pid)
	}
	return out, sc.Err()
}

func readProcs(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseProcs(bytes.NewReader(data))
}

// descendants lists the living descendants of pid, children before their
// own children, from /proc/<pid>/task/<tid>/children.
func descendants(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children(p) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

func children(pid int) []int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// removeCgroup removes an empty cgroup directory; a missing one is fine.
// The kernel may answer EBUSY for a moment after the last process died,
// so it retries for up to a second.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cgroups: removing %s: %w", dir, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
