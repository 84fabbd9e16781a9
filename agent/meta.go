package agent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"mezzo/api/mesos"
	"mezzo/internal/atomicfile"

	"google.golang.org/protobuf/proto"
)

// The checkpoint layout under <work_dir>/meta, after Mesos's:
//
//	meta/boot_id                                   boot id when the agent registered
//	meta/epoch                                     highest master epoch accepted
//	meta/slaves/latest -> <agent id>               symlink to the current agent
//	meta/slaves/<id>/slave.info                    AgentInfo
//	meta/slaves/<id>/frameworks/<fw>/framework.info FrameworkInfo
//	  .../executors/<ex>/executor.info             ExecutorInfo
//	  .../executors/<ex>/executor.kind             "command", "default" or "custom"
//	  .../executors/<ex>/runs/latest -> <container> the executor's current container
//	  .../executors/<ex>/runs/<container>/tasks/<task>/task.info  TaskInfo
//	meta/resources/resources.info                  checkpointed reservations and volumes (checkpointed.go)
//	meta/resources/resources.target                a set of them being applied
//	meta/updates/...                               owned by agent/statusupdate
//	meta/containers/<container>/pid                owned by the mesos containerizer
//
// With a runtime directory (Config.RuntimeDir, a tmpfs), the
// containerizer's pid records and the executor and task records of
// frameworks that do not checkpoint live there instead, under the same
// layout (<runtime_dir>/containers/..., <runtime_dir>/slaves/<id>/
// frameworks/<fw>/executors/...); recovery reads both trees.
//
//	meta/docker/docker/<container>/logs.cursor     owned by the docker containerizer
//
// Unlike Mesos, the agent records frameworks, executors and tasks of every
// framework, not only checkpointing ones: after a restart it must find the
// executors of non-checkpointing frameworks to kill them and report each
// of their tasks exactly once. Status updates are checkpointed only for
// checkpointing frameworks (statusupdate).
//
// Every protobuf file is framed (see writeProto) so that a torn or corrupt
// file is detected and named rather than half-read.
type metaDir string

// runtimeMeta is where the agent keeps records a reboot makes worthless:
// Config.RuntimeDir, laid out as meta/, or meta/ itself.
func runtimeMeta(cfg Config) metaDir {
	if cfg.RuntimeDir == "" {
		return metaDir(cfg.WorkDir + "/meta")
	}
	return metaDir(cfg.RuntimeDir)
}

// eachMeta applies a removal to meta/ and, if distinct, the runtime
// directory: a framework's records may be in either (its checkpoint flag
// can change when it re-registers).
func (a *Agent) eachMeta(f func(metaDir) error) error {
	err := f(a.meta)
	if a.runtime != a.meta {
		err = errors.Join(err, f(a.runtime))
	}
	return err
}

// recordsFor is where the executor and task records of framework fw go:
// the runtime directory when a host crash would make them worthless
// (cacheOnly), else meta/.
func (a *Agent) recordsFor(fw *framework) metaDir {
	if cacheOnly(fw, a.bootID) {
		return a.runtime
	}
	return a.meta
}

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
func (m metaDir) containersDir() string { return filepath.Join(string(m), "containers") }

// dockerDir is the docker containerizer's runtime directory (log cursors;
// its absolute path also labels this agent's Docker containers).
func (m metaDir) dockerDir() string { return filepath.Join(string(m), "docker") }
func (m metaDir) executorDir(agentID, fwID, execID string) string {
	return filepath.Join(m.frameworkDir(agentID, fwID), "executors", safeName(execID))
}
func (m metaDir) taskDir(agentID, fwID, execID, containerID, taskID string) string {
	return filepath.Join(m.executorDir(agentID, fwID, execID), "runs", safeName(containerID), "tasks", safeName(taskID))
}

// safeName makes an ID usable as one path element: IDs come from the
// master and frameworks, so "/" and ".." must not escape the directory.
func safeName(id string) string {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
		return "_" + strings.NewReplacer("/", "%2F", "\x00", "%00", ".", "%2E").Replace(id)
	}
	return id
}

// symlinkAtomic points link at target, replacing any previous link; with
// sync the directory is fsynced so that the new link survives a host crash.
func symlinkAtomic(target, link string, sync bool) error {
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
	if !sync {
		return nil
	}
	return atomicfile.SyncDir(dir)
}

// writeFile replaces path with data atomically (temp file and rename), so
// that a crash of the agent process leaves the old or the new content.
// With sync it is also durable across a host crash (atomicfile.WriteFile's
// fsyncs). Without, a host crash may lose or truncate the file; the
// records written so (see cacheOnly) are then never read, because a host
// crash changes the boot id and recoverMeta discards the whole checkpoint.
func writeFile(path string, data []byte, sync bool) error {
	if sync {
		return atomicfile.WriteFile(path, data)
	}
	return atomicfile.WriteFileUnsynced(path, data)
}

// checkpointMagic starts every protobuf checkpoint file. The frame is
//
//	"MZC1" | length (uint32, big endian) | CRC-32C of the payload | payload
//
// so a file cut short or damaged is reported as such: a bare protobuf cut
// at a field boundary would silently decode as a shorter message.
var checkpointMagic = []byte("MZC1")

const checkpointHeader = 12

// castagnoli is built on first use, not at package init, which every
// process of the binary (each executor too) would pay for.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// CorruptCheckpointError reports a checkpoint file that cannot be read back.
type CorruptCheckpointError struct {
	File   string
	Reason string
}

func (e *CorruptCheckpointError) Error() string {
	return fmt.Sprintf("corrupt checkpoint %s: %s", e.File, e.Reason)
}

func frameCheckpoint(payload []byte) []byte {
	out := make([]byte, checkpointHeader, checkpointHeader+len(payload))
	copy(out, checkpointMagic)
	binary.BigEndian.PutUint32(out[4:8], uint32(len(payload)))
	binary.BigEndian.PutUint32(out[8:12], crc32.Checksum(payload, castagnoli()))
	return append(out, payload...)
}

// unframeCheckpoint returns the payload of a framed file's content; the
// error says what is wrong without naming the file.
func unframeCheckpoint(b []byte) ([]byte, error) {
	if len(b) < checkpointHeader {
		return nil, fmt.Errorf("torn header (%d of %d bytes)", len(b), checkpointHeader)
	}
	if !bytes.Equal(b[:4], checkpointMagic) {
		return nil, fmt.Errorf("not a mezzo checkpoint (magic %q)", b[:4])
	}
	n := binary.BigEndian.Uint32(b[4:8])
	if uint64(len(b)-checkpointHeader) != uint64(n) {
		return nil, fmt.Errorf("torn or padded payload (%d bytes, header says %d)", len(b)-checkpointHeader, n)
	}
	payload := b[checkpointHeader:]
	if crc32.Checksum(payload, castagnoli()) != binary.BigEndian.Uint32(b[8:12]) {
		return nil, errors.New("checksum mismatch")
	}
	return payload, nil
}

func writeProto(path string, m proto.Message) error {
	return writeProtoSync(path, m, true)
}

// writeProtoSync is writeProto, durable across a host crash only with sync.
func writeProtoSync(path string, m proto.Message, sync bool) error {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return err
	}
	return writeFile(path, frameCheckpoint(b), sync)
}

// readProto reads a framed protobuf file. A missing file is returned as
// is (errors.Is(err, os.ErrNotExist)); anything unreadable is a
// *CorruptCheckpointError naming the file.
func readProto(path string, m proto.Message) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	payload, err := unframeCheckpoint(b)
	if err != nil {
		return &CorruptCheckpointError{File: path, Reason: err.Error()}
	}
	if err := proto.Unmarshal(payload, m); err != nil {
		return &CorruptCheckpointError{File: path, Reason: err.Error()}
	}
	return nil
}

// checkpointAgent records the agent's identity after registration.
func (m metaDir) checkpointAgent(info *mesos.AgentInfo, bootID string, epoch uint64) error {
	id := info.GetId().GetValue()
	if err := writeProto(m.agentInfoPath(id), info); err != nil {
		return err
	}
	if err := symlinkAtomic(safeName(id), m.latestPath(), true); err != nil {
		return err
	}
	if bootID != "" {
		if err := atomicfile.WriteFile(m.bootIDPath(), []byte(bootID)); err != nil {
			return err
		}
	}
	return m.checkpointEpoch(epoch)
}

func (m metaDir) checkpointEpoch(epoch uint64) error {
	return atomicfile.WriteFile(m.epochPath(), []byte(strconv.FormatUint(epoch, 10)))
}

func (m metaDir) checkpointFramework(agentID string, info *mesos.FrameworkInfo) error {
	return writeProto(m.frameworkInfoPath(agentID, info.GetId().GetValue()), info)
}

func (m metaDir) removeFramework(agentID, fwID string) error {
	return os.RemoveAll(m.frameworkDir(agentID, fwID))
}

func removeAll(path string) error { return os.RemoveAll(path) }

// executorKindName names an executorKind in executor.kind.
var executorKindName = map[executorKind]string{kindCustom: "custom", kindCommand: "command", kindDefault: "default"}

// cacheOnly reports whether an executor's and its tasks' records may skip
// the fsyncs (they are still replaced atomically): for a framework that
// does not checkpoint, when the agent knows the host's boot id. Those
// records only let a restarted agent process find the executors to kill
// and report their tasks; after a host crash, the one case an fsync
// guards against, the boot id differs and recoverMeta reads none of them.
// The fsyncs were about half of the agent's work per launched task
// (docs/benchmarks-launch.md). Checkpointing frameworks keep them.
func cacheOnly(fw *framework, bootID string) bool {
	return !fw.checkpoint() && bootID != ""
}

// checkpointExecutor records an executor and its new container before the
// container is launched; durable across a host crash only with sync.
func (m metaDir) checkpointExecutor(agentID, fwID string, info *mesos.ExecutorInfo, kind executorKind, containerID string, sync bool) error {
	dir := m.executorDir(agentID, fwID, info.GetExecutorId().GetValue())
	if err := writeProtoSync(filepath.Join(dir, "executor.info"), info, sync); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "executor.kind"), []byte(executorKindName[kind]+"\n"), sync); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs", safeName(containerID)), 0o755); err != nil {
		return err
	}
	return symlinkAtomic(safeName(containerID), filepath.Join(dir, "runs", "latest"), sync)
}

// checkpointTask records a task of an executor; durable across a host
// crash only with sync.
func (m metaDir) checkpointTask(agentID, fwID, execID, containerID string, info *mesos.TaskInfo, sync bool) error {
	dir := m.taskDir(agentID, fwID, execID, containerID, info.GetTaskId().GetValue())
	return writeProtoSync(filepath.Join(dir, "task.info"), info, sync)
}

func (m metaDir) removeTask(agentID, fwID, execID, containerID, taskID string) error {
	return os.RemoveAll(m.taskDir(agentID, fwID, execID, containerID, taskID))
}

func (m metaDir) removeExecutor(agentID, fwID, execID string) error {
	return os.RemoveAll(m.executorDir(agentID, fwID, execID))
}
