package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

func TestConfigValidate(t *testing.T) {
	base := func() Config {
		return Config{Masters: []string{"127.0.0.1:5050"}, WorkDir: "/tmp/w", LauncherPath: "/bin/true"}
	}
	c := base()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if c.IP != "127.0.0.1" || c.Port != 5051 || c.ExecutorRegistrationTimeout != time.Minute ||
		c.ExecutorShutdownGracePeriod != 5*time.Second || c.RegistrationBackoff != time.Second ||
		c.Clock == nil || c.Logger == nil || c.HTTPClient == nil || c.Hostname == "" || c.Containerizers != "mesos" {
		t.Errorf("defaults not filled: %+v", c)
	}
	c = base()
	c.Masters = []string{"http://m1:5050/", "//m2:5050"}
	if err := c.validate(); err != nil || c.Masters[0] != "m1:5050" || c.Masters[1] != "m2:5050" {
		t.Errorf("masters normalized to %v (%v)", c.Masters, err)
	}
	for _, tc := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Masters = nil }, "'masters' is empty"},
		{func(c *Config) { c.Masters = []string{"nope"} }, "'masters[0]'"},
		{func(c *Config) { c.Masters = []string{"zk://z1:2181,z2:2181/mesos"} }, "mezzo needs no ZooKeeper"},
		{func(c *Config) { c.WorkDir = "" }, "'work_dir' is required"},
		{func(c *Config) { c.IP = "x" }, "'ip'"},
		{func(c *Config) { c.Port = 70000 }, "'port'"},
		{func(c *Config) { c.ExecutorShutdownGracePeriod = -1 }, "'executor_shutdown_grace_period' is negative"},
	} {
		c := base()
		tc.mutate(&c)
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("validate = %v, want %q", err, tc.want)
		}
	}
}

func TestTotalResources(t *testing.T) {
	probe := hostProbe{
		cpus:      func() int { return 8 },
		memTotal:  func() (uint64, error) { return 16 * gib, nil },
		diskTotal: func(string) (uint64, error) { return 100 * gib, nil },
	}
	tests := []struct {
		text string
		want map[string]float64
	}{
		{"", map[string]float64{"cpus": 8, "mem": 15 * 1024, "disk": 95 * 1024}},
		{"cpus:2", map[string]float64{"cpus": 2, "mem": 15 * 1024, "disk": 95 * 1024}},
		{"cpus:0;mem:512", map[string]float64{"cpus": 0, "mem": 512, "disk": 95 * 1024}},
		{"cpus(web):2;cpus:1;disk:10", map[string]float64{"cpus": 3, "mem": 15 * 1024, "disk": 10}},
		{`[{"name":"mem","type":"SCALAR","scalar":{"value":100}}]`, map[string]float64{"cpus": 8, "mem": 100, "disk": 95 * 1024}},
	}
	for _, tt := range tests {
		r, err := totalResources(tt.text, "/", probe)
		if err != nil {
			t.Errorf("%q: %v", tt.text, err)
			continue
		}
		for k, v := range tt.want {
			if got := r.Scalar(k); got != v {
				t.Errorf("%q: %s = %v, want %v", tt.text, k, got, v)
			}
		}
		if !strings.Contains(r.String(), "ports") {
			t.Errorf("%q: no default ports in %s", tt.text, r)
		}
	}
	failing := hostProbe{
		cpus:      func() int { return 0 },
		memTotal:  func() (uint64, error) { return 0, errors.New("no") },
		diskTotal: func(string) (uint64, error) { return 0, errors.New("no") },
	}
	r, err := totalResources("", "/", failing)
	if err != nil || r.Scalar("cpus") != defaultCPUs || r.Scalar("mem") != defaultMemMB || r.Scalar("disk") != defaultDiskMB {
		t.Errorf("fallbacks: %v %v", r, err)
	}
	if _, err := totalResources("cpus:x", "/", probe); err == nil || !strings.Contains(err.Error(), "'resources'") {
		t.Errorf("bad resources: %v", err)
	}
}

// TestShareRules checks Mesos's memory and disk shares against a naive
// restatement of the rule.
func TestShareRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := rapid.Uint64Range(0, 1<<44).Draw(t, "total")
		wantMem := total / 2
		if total >= 2*gib {
			wantMem = total - gib
		}
		if got := memoryFor(total); got != wantMem || got > total {
			t.Fatalf("memoryFor(%d) = %d, want %d", total, got, wantMem)
		}
		wantDisk := total / 2
		if total >= 10*gib {
			wantDisk = total - 5*gib
		}
		if got := diskFor(total); got != wantDisk || got > total {
			t.Fatalf("diskFor(%d) = %d, want %d", total, got, wantDisk)
		}
	})
}

func TestParseMemTotal(t *testing.T) {
	n, err := parseMemTotal([]byte("MemFree: 5 kB\nMemTotal:       16303528 kB\n"))
	if err != nil || n != 16303528*1024 {
		t.Errorf("%d %v", n, err)
	}
	if _, err := parseMemTotal([]byte("nothing")); err == nil {
		t.Error("no MemTotal accepted")
	}
	if total, err := memTotal(); err != nil || total == 0 {
		t.Errorf("memTotal on this host: %d %v", total, err)
	}
	if total, err := diskTotal(filepath.Join(t.TempDir(), "not", "yet")); err != nil || total == 0 {
		t.Errorf("diskTotal of a missing dir: %d %v", total, err)
	}
}

func TestParseAttributes(t *testing.T) {
	attrs, err := parseAttributes("rack:r1;zone:us-east;level:3;weight:-1.5;ports:[1-10, 20-30]\nos:linux")
	if err != nil {
		t.Fatal(err)
	}
	want := []*mesos.Attribute{
		{Name: proto.String("rack"), Type: mesos.Value_TEXT.Enum(), Text: &mesos.Value_Text{Value: proto.String("r1")}},
		{Name: proto.String("zone"), Type: mesos.Value_TEXT.Enum(), Text: &mesos.Value_Text{Value: proto.String("us-east")}},
		{Name: proto.String("level"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(3)}},
		{Name: proto.String("weight"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(-1.5)}},
		{Name: proto.String("ports"), Type: mesos.Value_RANGES.Enum(), Ranges: &mesos.Value_Ranges{Range: []*mesos.Value_Range{
			{Begin: proto.Uint64(1), End: proto.Uint64(10)}, {Begin: proto.Uint64(20), End: proto.Uint64(30)}}}},
		{Name: proto.String("os"), Type: mesos.Value_TEXT.Enum(), Text: &mesos.Value_Text{Value: proto.String("linux")}},
	}
	if len(attrs) != len(want) {
		t.Fatalf("got %d attributes", len(attrs))
	}
	for i := range want {
		if !proto.Equal(attrs[i], want[i]) {
			t.Errorf("attribute %d = %v, want %v", i, attrs[i], want[i])
		}
	}
	for _, bad := range []string{"rack", "a:b:c", ":x", "x:", "s:{a,b}", "r:[5-1]", "r:[1-2"} {
		if _, err := parseAttributes(bad); err == nil || !strings.Contains(err.Error(), "'attributes'") {
			t.Errorf("parseAttributes(%q) = %v", bad, err)
		}
	}
	if a, err := parseAttributes(""); err != nil || len(a) != 0 {
		t.Errorf("empty: %v %v", a, err)
	}
}

func FuzzParseAttributes(f *testing.F) {
	for _, s := range []string{"rack:r1;zone:z2", "a:1.5", "p:[1-2,3-4]", "x:{a}", ";;", "a:b:c", "n:inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		attrs, err := parseAttributes(s)
		if err != nil {
			return
		}
		for _, a := range attrs {
			if a.GetName() == "" || a.Type == nil {
				t.Fatalf("incomplete attribute %v from %q", a, s)
			}
		}
	})
}

func TestMetaCheckpointAndRecover(t *testing.T) {
	m := metaDir(t.TempDir())
	r, err := recoverMeta(m, m, "boot1", nil)
	if err != nil || r.info != nil {
		t.Fatalf("empty meta: %v %v", r, err)
	}
	info := &mesos.AgentInfo{Hostname: proto.String("h"), Id: agentIDProto("A-S1")}
	if err := m.checkpointAgent(info, "boot1", 7); err != nil {
		t.Fatal(err)
	}
	if err := m.checkpointFramework("A-S1", frameworkInfo("F1")); err != nil {
		t.Fatal(err)
	}
	r, err = recoverMeta(m, m, "boot1", nil)
	if err != nil || r.info.GetId().GetValue() != "A-S1" || r.epoch != 7 || len(r.frameworks) != 1 {
		t.Fatalf("recovered %+v %v", r, err)
	}
	// A reboot means a new agent (the epoch is still known).
	r, err = recoverMeta(m, m, "boot2", nil)
	if err != nil || r.info != nil || r.epoch != 7 {
		t.Errorf("after reboot: %+v %v", r, err)
	}
	// No temp files are left behind.
	filepath.Walk(m.root(), func(p string, fi os.FileInfo, err error) error {
		if strings.Contains(filepath.Base(p), ".tmp") {
			t.Errorf("leftover temp file %s", p)
		}
		return nil
	})
	if err := m.removeFramework("A-S1", "F1"); err != nil {
		t.Fatal(err)
	}
	if r, _ := recoverMeta(m, m, "boot1", nil); len(r.frameworks) != 0 {
		t.Errorf("framework survived removal")
	}
	if safeName("../x") == "../x" || safeName("a/b") == "a/b" || safeName("ok-1") != "ok-1" {
		t.Error("safeName lets path elements through")
	}
}

func TestCommandExecutorInfo(t *testing.T) {
	a := &Agent{core: core{cfg: Config{LauncherPath: "/usr/bin/mezzo"}}}
	fw := &framework{id: "F1", info: frameworkInfo("F1")}
	task := commandTask("t1", "echo hello world; sleep 10")
	task.Resources[0].AllocationInfo = &mesos.Resource_AllocationInfo{Role: proto.String("web")}
	task.Command.Environment = &mesos.Environment{Variables: []*mesos.Environment_Variable{{Name: proto.String("K"), Value: proto.String("v")}}}
	info := a.commandExecutorInfo(fw, task)
	if got := info.GetName(); got != "Command Executor (Task: t1) (Command: sh -c 'echo hello w...')" {
		t.Errorf("name %q", got)
	}
	if info.GetExecutorId().GetValue() != "t1" || info.GetSource() != "t1" || info.GetFrameworkId().GetValue() != "F1" {
		t.Errorf("info %v", info)
	}
	if info.GetCommand().GetShell() || info.GetCommand().GetValue() != "/usr/bin/mezzo" ||
		strings.Join(info.GetCommand().GetArguments(), " ") != "/usr/bin/mezzo executor" ||
		info.GetCommand().GetEnvironment().GetVariables()[0].GetName() != "K" {
		t.Errorf("command %v", info.GetCommand())
	}
	if len(info.GetResources()) != 2 || info.GetResources()[0].GetAllocationInfo().GetRole() != "web" {
		t.Errorf("resources %v", info.GetResources())
	}
	short := commandTask("t2", "ls")
	if got := a.commandExecutorInfo(fw, short).GetName(); got != "Command Executor (Task: t2) (Command: sh -c 'ls')" {
		t.Errorf("name %q", got)
	}
	argv := commandTask("t3", "/bin/echo")
	argv.Command.Shell = proto.Bool(false)
	argv.Command.Arguments = []string{"echo", "hi"}
	if got := a.commandExecutorInfo(fw, argv).GetName(); got != "Command Executor (Task: t3) (Command: [/bin/echo, echo, hi])" {
		t.Errorf("name %q", got)
	}
}

func TestExecutorEnvOverrides(t *testing.T) {
	a := &Agent{endpoint: "10.0.0.1:5051", core: core{cfg: Config{ExecutorShutdownGracePeriod: 5 * time.Second}, sess: session{agentID: "S1"}}}
	fw := &framework{id: "F1", info: frameworkInfo("F1")}
	e := &executor{id: "e1", directory: "/sandbox", info: &mesos.ExecutorInfo{
		ShutdownGracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(90 * time.Second))},
		Command: &mesos.CommandInfo{Environment: &mesos.Environment{Variables: []*mesos.Environment_Variable{
			{Name: proto.String("PATH"), Value: proto.String("/opt/bin")},
			{Name: proto.String("MESOS_SANDBOX"), Value: proto.String("/elsewhere")},
		}}},
	}}
	env := strings.Join(a.executorEnv(fw, e), "\n") + "\n"
	for _, want := range []string{"PATH=/opt/bin\n", "MESOS_SANDBOX=/sandbox\n", "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD=90secs\n", "MESOS_CHECKPOINT=0\n", "MESOS_SLAVE_PID=slave(1)@10.0.0.1:5051\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "MESOS_RECOVERY_TIMEOUT") {
		t.Errorf("recovery timeout set without checkpointing")
	}
	if strings.Count(env, "PATH=") != 1 {
		t.Errorf("PATH set twice:\n%s", env)
	}
}
