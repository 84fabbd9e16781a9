package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// The checkpoint layout under <work_dir>/meta, after Mesos's:
//
//	meta/boot_id                                   boot id when the agent registered
//	meta/epoch                                     highest master epoch accepted
//	meta/slaves/latest -> <agent id>               symlink to the current agent
//	meta/slaves/<id>/slave.info                    AgentInfo (protobuf)
//	meta/slaves/<id>/frameworks/<fw>/framework.info FrameworkInfo (protobuf)
//	meta/updates/...                               owned by agent/statusupdate
type metaDir string

func (m metaDir) root() string                   { return string(m) }
func (m metaDir) bootIDPath() string             { return filepath.Join(string(m), "boot_id") }
func (m metaDir) epochPath() string              { return filepath.Join(string(m), "epoch") }
func (m metaDir) slavesDir() string              { return filepath.Join(string(m), "slaves") }
func (m metaDir) latestPath() string             { return filepath.Join(m.slavesDir(), "latest") }
func (m metaDir) agentDir(id string) string      { return filepath.Join(m.slavesDir(), safeName(id)) }
func (m metaDir) agentInfoPath(id string) string { return filepath.Join(m.agentDir(id), "slave.info") }
func (m metaDir) updatesDir() string             { return filepath.Join(string(m), "updates") }
func (m metaDir) frameworkDir(agentID, fwID string) string {
	return filepath.Join(m.agentDir(agentID), "frameworks", safeName(fwID))
}
func (m metaDir) frameworkInfoPath(agentID, fwID string) string {
	return filepath.Join(m.frameworkDir(agentID, fwID), "framework.info")
}

// safeName makes an ID usable as one path element: IDs come from the
// master and frameworks, so "/" and ".." must not escape the directory.
func safeName(id string) string {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
		return "_" + strings.NewReplacer("/", "%2F", "\x00", "%00", ".", "%2E").Replace(id)
	}
	return id
}

// writeAtomic replaces path with data: write a temp file in the same
// directory, fsync it, rename it over path, fsync the directory. A crash
// leaves either the old or the new content.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpointing %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// symlinkAtomic points link at target, replacing any previous link.
func symlinkAtomic(target, link string) error {
	dir := filepath.Dir(link)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(link)+".tmp")
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func writeProto(path string, m proto.Message) error {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

func readProto(path string, m proto.Message) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkpointAgent records the agent's identity after registration.
func (m metaDir) checkpointAgent(info *mesos.AgentInfo, bootID string, epoch uint64) error {
	id := info.GetId().GetValue()
	if err := writeProto(m.agentInfoPath(id), info); err != nil {
		return err
	}
	if err := symlinkAtomic(safeName(id), m.latestPath()); err != nil {
		return err
	}
	if bootID != "" {
		if err := writeAtomic(m.bootIDPath(), []byte(bootID)); err != nil {
			return err
		}
	}
	return m.checkpointEpoch(epoch)
}

func (m metaDir) checkpointEpoch(epoch uint64) error {
	return writeAtomic(m.epochPath(), []byte(strconv.FormatUint(epoch, 10)))
}

func (m metaDir) checkpointFramework(agentID string, info *mesos.FrameworkInfo) error {
	return writeProto(m.frameworkInfoPath(agentID, info.GetId().GetValue()), info)
}

func (m metaDir) removeFramework(agentID, fwID string) error {
	return os.RemoveAll(m.frameworkDir(agentID, fwID))
}

func removeAll(path string) error { return os.RemoveAll(path) }
