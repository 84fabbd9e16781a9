package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"mezzo/api/mesos"
)

// recovered is what an agent restart finds under <work_dir>/meta.
type recovered struct {
	info       *mesos.AgentInfo // nil: register as a new agent
	epoch      uint64
	frameworks []*mesos.FrameworkInfo
}

// recoverMeta reads the checkpointed identity. A different boot id (the
// host rebooted) or no checkpoint means starting as a new agent, as Mesos
// does. Executors are not re-attached yet: that is the seam for full
// checkpoint/recovery (reconnecting to executors of checkpointing
// frameworks through MESOS_RECOVERY_TIMEOUT, replaying their updates); the
// status update manager already recovers its streams on its own.
func recoverMeta(m metaDir, bootID string) (*recovered, error) {
	r := &recovered{}
	if b, err := os.ReadFile(m.epochPath()); err == nil {
		if e, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			r.epoch = e
		}
	}
	target, err := os.Readlink(m.latestPath())
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recovering agent: %w", err)
	}
	if prev, err := os.ReadFile(m.bootIDPath()); err == nil && bootID != "" && strings.TrimSpace(string(prev)) != bootID {
		// The host rebooted: the old agent's executors are gone.
		return r, nil
	}
	info := &mesos.AgentInfo{}
	if err := readProto(filepath.Join(m.slavesDir(), target, "slave.info"), info); err != nil {
		return nil, fmt.Errorf("recovering agent: %w", err)
	}
	if info.GetId().GetValue() == "" {
		return nil, fmt.Errorf("recovering agent: %s has no agent id", filepath.Join(m.slavesDir(), target, "slave.info"))
	}
	r.info = info
	fwDirs, _ := os.ReadDir(filepath.Join(m.slavesDir(), target, "frameworks"))
	for _, d := range fwDirs {
		fi := &mesos.FrameworkInfo{}
		if err := readProto(filepath.Join(m.slavesDir(), target, "frameworks", d.Name(), "framework.info"), fi); err != nil {
			continue // a framework without a readable info has nothing to recover
		}
		r.frameworks = append(r.frameworks, fi)
	}
	return r, nil
}

// readBootID returns this boot's id ("" where the kernel does not say).
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
