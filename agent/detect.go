package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"mezzo/resources"
)

// Mesos's fallbacks when detection fails (slave/constants.hpp).
const (
	defaultCPUs   = 1
	defaultMemMB  = 1024
	defaultDiskMB = 10240
	defaultPorts  = "[31000-32000]"
	mib           = 1 << 20
	gib           = 1 << 30
)

// hostProbe measures the host; tests replace it.
type hostProbe struct {
	cpus      func() int
	memTotal  func() (uint64, error) // bytes
	diskTotal func(path string) (uint64, error)
}

var realProbe = hostProbe{cpus: runtime.NumCPU, memTotal: memTotal, diskTotal: diskTotal}

// totalResources parses the configured resources and adds, for each of
// cpus, mem, disk and ports that the text does not mention, the detected
// amount, as Mesos's agent does:
//   - cpus: the number of CPUs;
//   - mem: total RAM minus 1 GiB when RAM is at least 2 GiB, else half of it;
//   - disk: the size of the work directory's file system minus 5 GiB when it
//     is at least 10 GiB, else half of it;
//   - ports: [31000-32000].
//
// Sizes are in whole MB (truncated), as Mesos reports them.
func totalResources(text, workDir string, probe hostProbe) (resources.Resources, error) {
	var parsed resources.Resources
	var err error
	text = strings.TrimSpace(text)
	switch {
	case strings.HasPrefix(text, "["):
		parsed, err = resources.ParseJSON([]byte(text))
	default:
		parsed, err = resources.Parse(text, "*")
	}
	if err != nil {
		return resources.Resources{}, fmt.Errorf("agent config: 'resources': %w", err)
	}
	has := map[string]bool{}
	for _, r := range parsed.Proto() {
		has[r.GetName()] = true
	}
	for _, name := range mentioned(text) {
		has[name] = true // "cpus:0" is mentioned even if it normalizes away
	}
	var extra []string
	if !has["cpus"] {
		n := probe.cpus()
		if n <= 0 {
			n = defaultCPUs
		}
		extra = append(extra, fmt.Sprintf("cpus:%d", n))
	}
	if !has["mem"] {
		mb := uint64(defaultMemMB)
		if total, err := probe.memTotal(); err == nil && total > 0 {
			mb = memoryFor(total) / mib
		}
		extra = append(extra, fmt.Sprintf("mem:%d", mb))
	}
	if !has["disk"] {
		mb := uint64(defaultDiskMB)
		if total, err := probe.diskTotal(workDir); err == nil && total > 0 {
			mb = diskFor(total) / mib
		}
		extra = append(extra, fmt.Sprintf("disk:%d", mb))
	}
	if !has["ports"] {
		extra = append(extra, "ports:"+defaultPorts)
	}
	if len(extra) == 0 {
		return parsed, nil
	}
	detected, err := resources.Parse(strings.Join(extra, ";"), "*")
	if err != nil {
		return resources.Resources{}, fmt.Errorf("detected resources: %w", err)
	}
	return parsed.Add(detected), nil
}

// memoryFor is Mesos's share of total RAM for tasks.
func memoryFor(total uint64) uint64 {
	if total >= 2*gib {
		return total - gib
	}
	return total / 2
}

// diskFor is Mesos's share of the work directory's file system for tasks.
func diskFor(total uint64) uint64 {
	if total >= 10*gib {
		return total - 5*gib
	}
	return total / 2
}

// mentioned returns the resource names a text --resources value names
// (JSON values are fully parsed, so nothing to add).
func mentioned(text string) []string {
	if strings.HasPrefix(text, "[") {
		return nil
	}
	var out []string
	for _, tok := range strings.Split(text, ";") {
		name, _, ok := strings.Cut(strings.TrimSpace(tok), ":")
		if !ok {
			continue
		}
		if i := strings.IndexAny(name, "({"); i >= 0 {
			name = name[:i]
		}
		out = append(out, strings.TrimSpace(name))
	}
	return out
}

func memTotal() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseMemTotal(b)
}

// parseMemTotal reads "MemTotal: <n> kB" from /proc/meminfo.
func parseMemTotal(b []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: MemTotal %q: %v", f[1], err)
			}
			if len(f) >= 3 && f[2] == "kB" {
				n *= 1024
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("/proc/meminfo: no MemTotal line")
}

// diskTotal is the size of the file system holding path (its nearest
// existing ancestor, since the work dir may not exist yet).
func diskTotal(path string) (uint64, error) {
	for {
		var st syscall.Statfs_t
		err := syscall.Statfs(path, &st)
		if err == nil {
			return uint64(st.Blocks) * uint64(st.Frsize), nil
		}
		parent := parentDir(path)
		if parent == path {
			return 0, err
		}
		path = parent
	}
}

func parentDir(p string) string {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	}
	return p[:i]
}
