package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// The agent's side of reservations and persistent volumes (issue 12 §2-3),
// against a fake master: CHECKPOINT_RESOURCES, the checkpoint and the
// volume directories, tasks using volumes, agent restarts.

func checkpointResourcesEvent(epoch uint64, rs ...*mesos.Resource) *protocol.AgentEvent {
	return &protocol.AgentEvent{
		Type:                protocol.AgentEvent_CHECKPOINT_RESOURCES.Enum(),
		Epoch:               proto.Uint64(epoch),
		CheckpointResources: &protocol.AgentEvent_CheckpointResources{Resources: rs},
	}
}

// allocated marks resources as the master hands them to a task of role.
func allocated(role string, rs ...*mesos.Resource) []*mesos.Resource {
	var out []*mesos.Resource
	for _, r := range rs {
		c := proto.Clone(r).(*mesos.Resource)
		c.AllocationInfo = &mesos.Resource_AllocationInfo{Role: proto.String(role)}
		out = append(out, c)
	}
	return out
}

// volumeTask is a shell command task of role db using the resources rs.
func volumeTask(id, cmd string, rs ...*mesos.Resource) *mesos.TaskInfo {
	t := commandTask(id, cmd)
	t.Resources = allocated("db", append([]*mesos.Resource{reservedCPUs("db", 0.5)}, rs...)...)
	return t
}

// directAgent is an agent running command tasks without an executor
// process, so shell commands run as the tasks themselves.
func directAgent(c *Config) {
	c.DirectCommandTasks = true
	c.LauncherPath = "/nonexistent/mezzo"
}

func finishes(t *testing.T, m *fakeMaster, sub *fakeSub, task string) {
	t.Helper()
	waitUpdate(t, m, sub, task, mesos.TaskState_TASK_STARTING)
	waitUpdate(t, m, sub, task, mesos.TaskState_TASK_RUNNING)
	waitUpdate(t, m, sub, task, mesos.TaskState_TASK_FINISHED)
}

func checkpointedSet(t *testing.T, dir string) resources.Resources {
	t.Helper()
	files, err := readCheckpointedResources(metaDir(filepath.Join(dir, "meta")))
	if err != nil {
		t.Fatal(err)
	}
	if files.hasTarget {
		t.Errorf("resources.target left behind")
	}
	r, err := resources.FromProto(files.info)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stateRole(t *testing.T, st map[string]any, key, role, name string) float64 {
	t.Helper()
	m, _ := st[key].(map[string]any)
	if role != "" {
		m, _ = m[role].(map[string]any)
	}
	v, _ := m[name].(float64)
	return v
}

// The master's set is checkpointed and its volumes get directories; /state
// shows the reservations; a task writes into the volume and a later task
// reads it back; the same set again changes nothing; a set the agent's
// resources cannot hold is refused and changes nothing.
func TestCheckpointResourcesAndVolumes(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, directAgent)
	sub := register(t, m, 1)
	if cr := sub.call.GetSubscribe().GetCheckpointedResources(); len(cr) != 0 {
		t.Fatalf("a new agent subscribed with checkpointed resources %v", cr)
	}
	vol := persistentVolume("db", "v1", "data", 100)
	set := []*mesos.Resource{reservedCPUs("db", 1), reservedDisk("db", 100), vol}
	for range 2 { // idempotent
		sub.send(checkpointResourcesEvent(1, set...))
		ta.sync(t, m, sub, 1)
	}
	volDir := filepath.Join(ta.dir, "volumes", "roles", "db", "v1")
	if st, err := os.Stat(volDir); err != nil || !st.IsDir() {
		t.Fatalf("volume directory: %v", err)
	}
	want, _ := resources.FromProto(set)
	if got := checkpointedSet(t, ta.dir); !got.Equal(want) {
		t.Errorf("checkpoint holds %s, want %s", got, want)
	}
	st := ta.state(t)
	if stateRole(t, st, "reserved_resources", "db", "cpus") != 1 || stateRole(t, st, "reserved_resources", "db", "disk") != 200 ||
		stateRole(t, st, "unreserved_resources", "", "cpus") != 1 || stateRole(t, st, "resources", "", "disk") != 1000 {
		t.Errorf("/state resources: %v / %v / %v", st["resources"], st["reserved_resources"], st["unreserved_resources"])
	}
	full, _ := json.Marshal(st["reserved_resources_full"])
	if !strings.Contains(string(full), `"persistence":{"id":"v1"`) {
		t.Errorf("reserved_resources_full lacks the volume: %s", full)
	}

	fw := frameworkInfo("F1")
	sub.send(runTask(fw, volumeTask("writer", `echo hello > data/f && test -L data`, vol), 1))
	finishes(t, m, sub, "writer")
	if got := readFile(t, filepath.Join(volDir, "f")); got != "hello\n" {
		t.Fatalf("the volume holds %q", got)
	}
	sub.send(runTask(fw, volumeTask("reader", `test "$(cat data/f)" = hello`, vol), 1))
	finishes(t, m, sub, "reader")

	// 5 cpus do not fit in 2: refused, nothing changes.
	sub.send(checkpointResourcesEvent(1, reservedCPUs("db", 5)))
	ta.sync(t, m, sub, 1)
	if ta.metric(t, "slave/checkpoint_resources_refused") != 1 {
		t.Error("the impossible set was not counted as refused")
	}
	if got := checkpointedSet(t, ta.dir); !got.Equal(want) {
		t.Errorf("after a refused set the checkpoint holds %s", got)
	}
	if _, err := os.Stat(volDir); err != nil {
		t.Errorf("a refused set removed the volume: %v", err)
	}
	if stateRole(t, ta.state(t), "reserved_resources", "db", "cpus") != 1 {
		t.Error("a refused set changed the total")
	}

	// Without a mount namespace there is no place for an absolute path.
	abs := persistentVolume("db", "v1", "/srv/data", 100)
	sub.send(runTask(fw, volumeTask("abs", "true", abs), 1))
	sub.send(ack("F1", m.waitCall(t, "abs starting", updateFor("abs", mesos.TaskState_TASK_STARTING)), 1))
	c := m.waitCall(t, "abs failing", updateFor("abs", mesos.TaskState_TASK_FAILED))
	if s := c.GetStatusUpdate().GetStatus(); s.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED ||
		!strings.Contains(s.GetMessage(), "absolute 'container_path' needs a mount namespace") {
		t.Errorf("absolute container path: %v", s)
	}

	// A volume the master never created has no directory: the task fails
	// and names it.
	sub.send(runTask(fw, volumeTask("ghost", "true", persistentVolume("db", "ghost", "data", 1)), 1))
	c = m.waitCall(t, "ghost failing", updateFor("ghost", mesos.TaskState_TASK_FAILED))
	if s := c.GetStatusUpdate().GetStatus(); !strings.Contains(s.GetMessage(), `persistent volume "ghost"`) {
		t.Errorf("missing volume: %v", s)
	}
}

// A volume dropped from the set while a task uses it keeps its directory
// (and the data) until the task ends; then it is removed.
func TestVolumeRemovalWaitsForContainers(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, directAgent)
	sub := register(t, m, 1)
	vol := persistentVolume("db", "v1", "data", 100)
	sub.send(checkpointResourcesEvent(1, vol))
	ta.sync(t, m, sub, 1)
	fw := frameworkInfo("F1")
	sub.send(runTask(fw, volumeTask("holder", "echo kept > data/f; sleep 1000", vol), 1))
	waitUpdate(t, m, sub, "holder", mesos.TaskState_TASK_STARTING)
	waitUpdate(t, m, sub, "holder", mesos.TaskState_TASK_RUNNING)

	volDir := filepath.Join(ta.dir, "volumes", "roles", "db", "v1")
	sub.send(checkpointResourcesEvent(1)) // the volume and its reservation are gone
	ta.sync(t, m, sub, 1)
	if ta.metric(t, "slave/volumes_kept_in_use") != 1 {
		t.Error("the kept volume was not counted")
	}
	if _, err := os.Stat(volDir); err != nil {
		t.Fatalf("a volume in use was removed: %v", err)
	}
	if got := checkpointedSet(t, ta.dir); !got.IsEmpty() {
		t.Errorf("the checkpoint still holds %s", got)
	}
	// The kept directory is not a volume any more: no new task gets it.
	sub.send(runTask(fw, volumeTask("late", "true", vol), 1))
	c := m.waitCall(t, "late failing", updateFor("late", mesos.TaskState_TASK_FAILED))
	if s := c.GetStatusUpdate().GetStatus(); !strings.Contains(s.GetMessage(), "not among this agent's checkpointed resources") {
		t.Errorf("a task got a destroyed volume: %v", s)
	}
	sub.send(ack("F1", c, 1))
	sub.send(killTask("F1", "holder", 1))
	waitUpdate(t, m, sub, "holder", mesos.TaskState_TASK_KILLED)
	eventually(t, "the volume directory removed after its last task", func() bool {
		_, err := os.Stat(volDir)
		return errors.Is(err, os.ErrNotExist)
	})
}

// Reservations and volumes survive an agent restart: the new process
// reports them in SUBSCRIBE (agent_info.resources staying the flags'),
// keeps the volume's data for the next task, and refuses to start with
// --resources that cannot hold them, naming the resource.
func TestCheckpointedResourcesSurviveRestart(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, directAgent)
	sub := register(t, m, 1)
	vol := persistentVolume("db", "v1", "data", 300)
	set := []*mesos.Resource{reservedCPUs("db", 1), vol}
	sub.send(checkpointResourcesEvent(1, set...))
	ta.sync(t, m, sub, 1)
	fw := frameworkInfo("F1")
	sub.send(runTask(fw, volumeTask("writer", "echo persisted > data/f", vol), 1))
	finishes(t, m, sub, "writer")

	ta2, err := restartTestAgent(t, m, ta, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub2 := m.nextSub(t)
	s := sub2.call.GetSubscribe()
	got, err := resources.FromProto(s.GetCheckpointedResources())
	want, _ := resources.FromProto(set)
	if err != nil || !got.Equal(want) {
		t.Errorf("SUBSCRIBE after restart: checkpointed %s (%v), want %s", got, err, want)
	}
	if info, _ := resources.FromProto(s.GetAgentInfo().GetResources()); !info.Reserved().IsEmpty() {
		t.Errorf("agent_info.resources carries reservations: %s", info)
	}
	sub2.send(&protocol.AgentEvent{Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(1),
		Subscribed: &protocol.AgentEvent_Subscribed{AgentId: agentIDProto("S1")}})
	ta2.sync(t, m, sub2, 1)
	if stateRole(t, ta2.state(t), "reserved_resources", "db", "disk") != 300 {
		t.Errorf("/state after restart: %v", ta2.state(t)["reserved_resources"])
	}
	sub2.send(runTask(fw, volumeTask("reader", `test "$(cat data/f)" = persisted`, vol), 1))
	finishes(t, m, sub2, "reader")

	// Only 200 MB of disk: the 300 MB volume no longer fits.
	_, err = restartTestAgent(t, m, ta2, func(c *Config) {
		c.Resources = "cpus:2;mem:1024;disk:200;ports:[31000-32000]"
		c.ReconfigurationPolicy = PolicyAdditive
	})
	if err == nil || !strings.Contains(err.Error(), "[v1,data:RW]:300") || !strings.Contains(err.Error(), "restart with --resources") ||
		!strings.Contains(err.Error(), filepath.Join(ta.dir, "meta", "resources", "resources.info")) {
		t.Fatalf("restart with too little disk: %v", err)
	}
	// The refused start changed nothing: the previous flags still work.
	if _, err := restartTestAgent(t, m, ta2, nil); err != nil {
		t.Fatalf("restart with the previous flags: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ta.dir, "volumes", "roles", "db", "v1", "f")); err != nil {
		t.Errorf("volume data after the refused start: %v", err)
	}
}

// A crash between writing the new set (resources.target) and syncing the
// directories is completed by the next start: new volumes are created,
// dropped ones removed, the target committed. Without a target nothing is
// ever removed (only missing directories are created).
func TestCheckpointTargetCompletedOnStart(t *testing.T) {
	m := newFakeMaster(t)
	dir := t.TempDir()
	meta := metaDir(filepath.Join(dir, "meta"))
	v1, v2, v3 := persistentVolume("db", "v1", "data", 10), persistentVolume("db", "v2", "data", 10), persistentVolume("db", "v3", "data", 10)
	vdir := func(id string) string { return filepath.Join(dir, "volumes", "roles", "db", id) }
	for _, id := range []string{"v1", "v2"} {
		os.MkdirAll(vdir(id), 0o755)
		os.WriteFile(filepath.Join(vdir(id), "f"), []byte(id), 0o644)
	}
	set12, _ := resources.New(v1, v2)
	set13, _ := resources.New(v1, v3)
	if err := writeProto(meta.resourcesInfoPath(), &protocol.AgentEvent_CheckpointResources{Resources: set12.Proto()}); err != nil {
		t.Fatal(err)
	}
	if err := meta.writeCheckpointedTarget(set13); err != nil { // the crash came after this
		t.Fatal(err)
	}
	startTestAgent(t, m, func(c *Config) { c.WorkDir = dir })
	sub := m.nextSub(t)
	if got, _ := resources.FromProto(sub.call.GetSubscribe().GetCheckpointedResources()); !got.Equal(set13) {
		t.Errorf("SUBSCRIBE: %s, want %s", got, set13)
	}
	if got := checkpointedSet(t, dir); !got.Equal(set13) {
		t.Errorf("committed %s, want %s", got, set13)
	}
	if readFile(t, filepath.Join(vdir("v1"), "f")) != "v1" {
		t.Error("v1 lost its data")
	}
	if _, err := os.Stat(vdir("v2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("v2 not removed: %v", err)
	}
	if _, err := os.Stat(vdir("v3")); err != nil {
		t.Errorf("v3 not created: %v", err)
	}
}

// Without resources.target a start removes nothing: an operator who
// removed resources.info (to resolve a conflict) keeps the volumes' data;
// a committed volume whose directory is missing gets it back.
func TestStartWithoutTargetRemovesNothing(t *testing.T) {
	m := newFakeMaster(t)
	dir := t.TempDir()
	meta := metaDir(filepath.Join(dir, "meta"))
	stray := filepath.Join(dir, "volumes", "roles", "db", "old")
	os.MkdirAll(stray, 0o755)
	set, _ := resources.New(persistentVolume("db", "v1", "data", 10))
	if err := writeProto(meta.resourcesInfoPath(), &protocol.AgentEvent_CheckpointResources{Resources: set.Proto()}); err != nil {
		t.Fatal(err)
	}
	startTestAgent(t, m, func(c *Config) { c.WorkDir = dir })
	m.nextSub(t)
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("an unlisted volume directory was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "volumes", "roles", "db", "v1")); err != nil {
		t.Errorf("the committed volume's directory was not created: %v", err)
	}
}

// A corrupt checkpoint stops the agent from starting, naming the file.
func TestCorruptCheckpointedResources(t *testing.T) {
	dir := t.TempDir()
	p := metaDir(filepath.Join(dir, "meta")).resourcesInfoPath()
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("MZC1garbage"), 0o644)
	_, err := New(Config{Masters: []string{"127.0.0.1:1"}, WorkDir: dir, Resources: "cpus:1;mem:10;disk:10;ports:[1-2]",
		LauncherPath: "/bin/true"})
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("New with a corrupt %s: %v", p, err)
	}
}

// With --isolation=filesystem/linux each container has its own mount
// namespace and its volumes are bind-mounted there: at a relative path in
// the sandbox (a directory, not a link), at an absolute path over a host
// directory that only the container sees changed, and read-only for an RO
// volume. Needs root (mount namespaces).
func TestVolumesBindMounted(t *testing.T) {
	if err := checkMountNamespacesForTest(); err != nil {
		t.Skip(err)
	}
	for _, iso := range []string{"filesystem/linux", "namespaces/pid,filesystem/linux"} {
		t.Run(iso, func(t *testing.T) { testVolumesBindMounted(t, iso) })
	}
}

func testVolumesBindMounted(t *testing.T, isolation string) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, func(c *Config) {
		directAgent(c)
		c.Isolation = isolation
	})
	sub := register(t, m, 1)
	hostDir := t.TempDir()
	rel := persistentVolume("db", "rel", "data", 10)
	abs := persistentVolume("db", "abs", hostDir, 10)
	ro := persistentVolume("db", "ro", "ro", 10)
	ro.Disk.Volume.Mode = mesos.Volume_RO.Enum()
	sub.send(checkpointResourcesEvent(1, rel, abs, ro))
	ta.sync(t, m, sub, 1)
	vdir := func(id string) string { return filepath.Join(ta.dir, "volumes", "roles", "db", id) }
	os.WriteFile(filepath.Join(vdir("ro"), "seed"), []byte("seed\n"), 0o644)

	fw := frameworkInfo("F1")
	cmd := `set -e; test ! -L data; echo rel > data/f; echo abs > ` + hostDir + `/f; test "$(cat ro/seed)" = seed; ! touch ro/x 2>/dev/null`
	sub.send(runTask(fw, volumeTask("mounts", cmd, rel, abs, ro), 1))
	waitUpdate(t, m, sub, "mounts", mesos.TaskState_TASK_STARTING)
	waitUpdate(t, m, sub, "mounts", mesos.TaskState_TASK_RUNNING)
	if st := waitUpdate(t, m, sub, "mounts", mesos.TaskState_TASK_FINISHED); st == nil {
		t.Fatal("no TASK_FINISHED")
	}
	if readFile(t, filepath.Join(vdir("rel"), "f")) != "rel\n" || readFile(t, filepath.Join(vdir("abs"), "f")) != "abs\n" {
		t.Error("the volumes do not hold what the task wrote")
	}
	if _, err := os.Stat(filepath.Join(hostDir, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the bind mount leaked to the host: %s/f: %v", hostDir, err)
	}
	if _, err := os.Stat(filepath.Join(vdir("ro"), "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the task wrote to a read-only volume: %v", err)
	}

	// An absolute path that does not exist on the host cannot be mounted
	// over: the launch fails and says so.
	missing := persistentVolume("db", "rel", "/nonexistent/mezzo/volume", 10)
	sub.send(runTask(fw, volumeTask("nowhere", "true", missing), 1))
	sub.send(ack("F1", m.waitCall(t, "nowhere starting", updateFor("nowhere", mesos.TaskState_TASK_STARTING)), 1))
	c := m.waitCall(t, "nowhere failing", updateFor("nowhere", mesos.TaskState_TASK_FAILED))
	if s := c.GetStatusUpdate().GetStatus(); !strings.Contains(s.GetMessage(), "must name an existing directory") {
		t.Errorf("absolute path missing on the host: %v", s)
	}
}

// checkMountNamespacesForTest says why this host cannot run the
// filesystem/linux isolator.
func checkMountNamespacesForTest() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: no mount namespaces")
	}
	if _, err := os.Stat("/proc/self/ns/mnt"); err != nil {
		return err
	}
	return nil
}

// Docker command tasks get their volumes as binds: a relative container
// path under the sandbox mount, an absolute one where it says. One task
// writes, the next reads it back at another path.
func TestDockerTaskVolumes(t *testing.T) {
	workDir := t.TempDir()
	image, docker := dockerAgentSetup(t, workDir)
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, docker)
	sub := register(t, m, 1)
	rel := persistentVolume("db", "v1", "data", 10)
	sub.send(checkpointResourcesEvent(1, rel))
	ta.sync(t, m, sub, 1)
	fw := frameworkInfo("F1")

	writer := dockerTask("writer", image, mesos.ContainerInfo_DockerInfo_HOST, "write", "/mnt/mesos/sandbox/data/f", "from docker")
	writer.Resources = append(writer.Resources, rel)
	writer.Resources = allocated("db", writer.Resources...)
	sub.send(runTask(fw, writer, 1))
	finishes(t, m, sub, "writer")
	if got := readFile(t, filepath.Join(workDir, "volumes", "roles", "db", "v1", "f")); got != "from docker" {
		t.Fatalf("the volume holds %q", got)
	}

	// The reader sees the file at an absolute path (cat fails on a
	// missing file, as the control task shows). Short containers' output
	// may not reach the sandbox, so the exit status is the evidence.
	abs := persistentVolume("db", "v1", "/vol", 10)
	for _, tc := range []struct {
		id, file string
		state    mesos.TaskState
	}{{"reader", "/vol/f", mesos.TaskState_TASK_FINISHED}, {"control", "/vol/missing", mesos.TaskState_TASK_FAILED}} {
		reader := dockerTask(tc.id, image, mesos.ContainerInfo_DockerInfo_HOST, "cat", tc.file)
		reader.Resources = allocated("db", append(reader.Resources, abs)...)
		sub.send(runTask(fw, reader, 1))
		waitUpdate(t, m, sub, tc.id, mesos.TaskState_TASK_STARTING)
		waitUpdate(t, m, sub, tc.id, mesos.TaskState_TASK_RUNNING)
		waitUpdate(t, m, sub, tc.id, tc.state)
	}
}

// A task joining an executor whose container runs gets its volume linked
// into the executor's sandbox; an absolute container path cannot be added
// to a running container and fails the task with a reason.
func TestVolumeForRunningExecutor(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	vol := persistentVolume("db", "v1", "data", 10)
	sub.send(checkpointResourcesEvent(1, vol))
	fw := frameworkInfo("F1")
	sub.send(runTask(fw, customTask("t1", "e1", "exec sleep 600"), 1))
	ta.sync(t, m, sub, 1)
	eventually(t, "container launched", func() bool { return len(ta.cz.Containers()) == 1 })

	t2 := customTask("t2", "e1", "exec sleep 600")
	t2.Resources = allocated("db", vol)
	sub.send(runTask(fw, t2, 1))
	ta.sync(t, m, sub, 1)
	link := filepath.Join(ta.dir, "slaves", "S1", "frameworks", "F1", "executors", "e1", "runs", "latest", "data")
	if target, err := os.Readlink(link); err != nil || target != filepath.Join(ta.dir, "volumes", "roles", "db", "v1") {
		t.Fatalf("volume link in the running executor's sandbox: %q, %v", target, err)
	}

	t3 := customTask("t3", "e1", "exec sleep 600")
	t3.Resources = allocated("db", persistentVolume("db", "v1", "/srv/x", 10))
	sub.send(runTask(fw, t3, 1))
	c := m.waitCall(t, "t3 failing", updateFor("t3", mesos.TaskState_TASK_FAILED))
	if s := c.GetStatusUpdate().GetStatus(); s.GetReason() != mesos.TaskStatus_REASON_CONTAINER_UPDATE_FAILED ||
		!strings.Contains(s.GetMessage(), "absolute 'container_path'") {
		t.Errorf("absolute path for a running container: %v", s)
	}
}

// A shared volume is used by several tasks at once; dropped from the set,
// its directory stays until the last of them ends.
func TestSharedVolume(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, directAgent)
	sub := register(t, m, 1)
	vol := persistentVolume("db", "shared", "data", 100)
	vol.Shared = &mesos.Resource_SharedInfo{}
	sub.send(checkpointResourcesEvent(1, vol))
	ta.sync(t, m, sub, 1)
	fw := frameworkInfo("F1")
	for _, id := range []string{"a", "b"} {
		sub.send(runTask(fw, volumeTask(id, "echo "+id+" > data/"+id+"; exec sleep 1000", vol), 1))
		waitUpdate(t, m, sub, id, mesos.TaskState_TASK_STARTING)
		waitUpdate(t, m, sub, id, mesos.TaskState_TASK_RUNNING)
	}
	volDir := filepath.Join(ta.dir, "volumes", "roles", "db", "shared")
	eventually(t, "both tasks wrote", func() bool {
		a, _ := os.ReadFile(filepath.Join(volDir, "a"))
		b, _ := os.ReadFile(filepath.Join(volDir, "b"))
		return string(a) == "a\n" && string(b) == "b\n"
	})
	sub.send(checkpointResourcesEvent(1))
	ta.sync(t, m, sub, 1)
	sub.send(killTask("F1", "a", 1))
	waitUpdate(t, m, sub, "a", mesos.TaskState_TASK_KILLED)
	ta.sync(t, m, sub, 1)
	if _, err := os.Stat(volDir); err != nil {
		t.Fatalf("removed while task b uses it: %v", err)
	}
	sub.send(killTask("F1", "b", 1))
	waitUpdate(t, m, sub, "b", mesos.TaskState_TASK_KILLED)
	eventually(t, "the shared volume removed after its last task", func() bool {
		_, err := os.Stat(volDir)
		return errors.Is(err, os.ErrNotExist)
	})
}

// A task of a task group runs in its own sandbox under the default
// executor's (tasks/<task id>): its relative volume path is there, as
// Mesos mounts a nested container's volumes; the executor's own volume is
// at the executor sandbox's root.
func TestTaskGroupVolumes(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	v1, v2 := persistentVolume("db", "v1", "data", 10), persistentVolume("db", "v2", "exec", 10)
	sub.send(checkpointResourcesEvent(1, v1, v2))
	task := commandTask("g1", "true")
	task.Resources = allocated("db", v1)
	sub.send(&protocol.AgentEvent{
		Type:  protocol.AgentEvent_RUN_TASK_GROUP.Enum(),
		Epoch: proto.Uint64(1),
		RunTaskGroup: &protocol.AgentEvent_RunTaskGroup{
			FrameworkInfo: frameworkInfo("F1"),
			ExecutorInfo: &mesos.ExecutorInfo{
				Type:       mesos.ExecutorInfo_DEFAULT.Enum(),
				ExecutorId: &mesos.ExecutorID{Value: proto.String("ge")},
				Resources:  allocated("db", v2),
			},
			TaskGroup: &mesos.TaskGroupInfo{Tasks: []*mesos.TaskInfo{task}},
		},
	})
	ta.sync(t, m, sub, 1)
	sandbox := filepath.Join(ta.dir, "slaves", "S1", "frameworks", "F1", "executors", "ge", "runs", "latest")
	vdir := func(id string) string { return filepath.Join(ta.dir, "volumes", "roles", "db", id) }
	eventually(t, "the volumes linked", func() bool {
		a, _ := os.Readlink(filepath.Join(sandbox, "tasks", "g1", "data"))
		b, _ := os.Readlink(filepath.Join(sandbox, "exec"))
		return a == vdir("v1") && b == vdir("v2") && len(ta.cz.Containers()) == 1
	})
	if _, err := os.Lstat(filepath.Join(sandbox, "data")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the task's volume is also at the executor sandbox's root: %v", err)
	}
}

// GROW_VOLUME and SHRINK_VOLUME change a volume's size, not its identity:
// the master's new set keeps the directory and its data.
func TestResizedVolumeKeepsData(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(checkpointResourcesEvent(1, persistentVolume("db", "v1", "data", 100)))
	ta.sync(t, m, sub, 1)
	volDir := filepath.Join(ta.dir, "volumes", "roles", "db", "v1")
	if err := os.WriteFile(filepath.Join(volDir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mb := range []float64{300, 50} {
		sub.send(checkpointResourcesEvent(1, persistentVolume("db", "v1", "data", mb)))
		ta.sync(t, m, sub, 1)
		if readFile(t, filepath.Join(volDir, "f")) != "x" {
			t.Fatalf("resizing to %v lost the data", mb)
		}
		if got := stateRole(t, ta.state(t), "reserved_resources", "db", "disk"); got != mb {
			t.Errorf("reserved disk %v, want %v", got, mb)
		}
	}
}
