package docker

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

func scalarRes(name string, v float64) *mesos.Resource {
	return &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}}
}

func portsRes(begin, end uint64) *mesos.Resource {
	return &mesos.Resource{Name: proto.String("ports"), Type: mesos.Value_RANGES.Enum(),
		Ranges: &mesos.Value_Ranges{Range: []*mesos.Value_Range{{Begin: proto.Uint64(begin), End: proto.Uint64(end)}}}}
}

func dockerInfo(image string, net mesos.ContainerInfo_DockerInfo_Network) *mesos.ContainerInfo {
	return &mesos.ContainerInfo{Type: mesos.ContainerInfo_DOCKER.Enum(),
		Docker: &mesos.ContainerInfo_DockerInfo{Image: proto.String(image), Network: net.Enum()}}
}

func mapping(host, ctr uint32, proto_ string) *mesos.ContainerInfo_DockerInfo_PortMapping {
	pm := &mesos.ContainerInfo_DockerInfo_PortMapping{HostPort: proto.Uint32(host), ContainerPort: proto.Uint32(ctr)}
	if proto_ != "" {
		pm.Protocol = proto.String(proto_)
	}
	return pm
}

func volume(cp, hp string, mode mesos.Volume_Mode) *mesos.Volume {
	v := &mesos.Volume{ContainerPath: proto.String(cp), Mode: mode.Enum()}
	if hp != "" {
		v.HostPath = proto.String(hp)
	}
	return v
}

var testOpts = buildOptions{owner: "o", sandboxDir: DefaultSandboxDirectory}

func baseSpec() *spec {
	return &spec{containerID: "c1", sandbox: "/sb", container: dockerInfo("img:1", mesos.ContainerInfo_DockerInfo_HOST)}
}

// TestBuild covers the translation of a ContainerInfo into a create body:
// Mesos's rules for commands, environment, volumes, networks, resources
// and parameters.
func TestBuild(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(s *spec)
		check func(t *testing.T, b *createSpec)
		err   string // substring of the expected error
	}{
		{name: "defaults", check: func(t *testing.T, b *createSpec) {
			want := []string{"MESOS_SANDBOX=/mnt/mesos/sandbox", "MESOS_CONTAINER_NAME=mesos-c1"}
			if !reflect.DeepEqual(b.config.Env, want) {
				t.Errorf("env %q, want %q", b.config.Env, want)
			}
			if b.host.NetworkMode != "host" || b.config.Cmd != nil || b.config.Entrypoint != nil {
				t.Errorf("network %q cmd %q entrypoint %q", b.host.NetworkMode, b.config.Cmd, b.config.Entrypoint)
			}
			if !slices.Equal(b.host.Binds, []string{"/sb:/mnt/mesos/sandbox"}) {
				t.Errorf("binds %q", b.host.Binds)
			}
			if b.config.Labels[labelOwner] != "o" || b.config.Labels[labelContainer] != "c1" || b.config.Labels[labelSandbox] != "/sb" {
				t.Errorf("labels %v", b.config.Labels)
			}
		}},
		{name: "unset network is HOST", edit: func(s *spec) { s.container.Docker.Network = nil },
			check: func(t *testing.T, b *createSpec) {
				if b.host.NetworkMode != "host" {
					t.Errorf("network %q", b.host.NetworkMode)
				}
			}},
		{name: "shell command", edit: func(s *spec) {
			s.command = &mesos.CommandInfo{Value: proto.String("echo $HOME"), Arguments: []string{"ignored"}}
		}, check: func(t *testing.T, b *createSpec) {
			if !slices.Equal(b.config.Entrypoint, []string{"/bin/sh"}) || !slices.Equal(b.config.Cmd, []string{"-c", "echo $HOME"}) {
				t.Errorf("entrypoint %q cmd %q", b.config.Entrypoint, b.config.Cmd)
			}
		}},
		{name: "shell without value", edit: func(s *spec) { s.command = &mesos.CommandInfo{Shell: proto.Bool(true)} },
			err: "'command.value' is missing"},
		{name: "plain command keeps the entrypoint", edit: func(s *spec) {
			s.command = &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("serve"), Arguments: []string{":80", "hi"}}
		}, check: func(t *testing.T, b *createSpec) {
			if b.config.Entrypoint != nil || !slices.Equal(b.config.Cmd, []string{"serve", ":80", "hi"}) {
				t.Errorf("entrypoint %q cmd %q", b.config.Entrypoint, b.config.Cmd)
			}
		}},
		{name: "plain command without value: arguments only", edit: func(s *spec) {
			s.command = &mesos.CommandInfo{Shell: proto.Bool(false), Arguments: []string{"a", "b"}}
		}, check: func(t *testing.T, b *createSpec) {
			if !slices.Equal(b.config.Cmd, []string{"a", "b"}) {
				t.Errorf("cmd %q", b.config.Cmd)
			}
		}},
		{name: "environment precedence", edit: func(s *spec) {
			s.env = []string{"A=base", "MESOS_SANDBOX=/host/path"}
			s.command = &mesos.CommandInfo{Shell: proto.Bool(false), Environment: &mesos.Environment{Variables: []*mesos.Environment_Variable{
				{Name: proto.String("A"), Value: proto.String("cmd")},
				{Name: proto.String("B"), Value: proto.String("cmd")},
				{Name: proto.String("S"), Type: mesos.Environment_Variable_SECRET.Enum()},
			}}}
			s.resources = []*mesos.Resource{{Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(),
				Scalar: &mesos.Value_Scalar{Value: proto.Float64(1)}, AllocationInfo: &mesos.Resource_AllocationInfo{Role: proto.String("web")}}}
		}, check: func(t *testing.T, b *createSpec) {
			want := []string{"A=base", "MESOS_SANDBOX=/mnt/mesos/sandbox", "B=cmd", "MESOS_CONTAINER_NAME=mesos-c1", "MESOS_ALLOCATION_ROLE=web"}
			if !reflect.DeepEqual(b.config.Env, want) {
				t.Errorf("env %q, want %q", b.config.Env, want)
			}
		}},
		{name: "volumes", edit: func(s *spec) {
			s.container.Volumes = []*mesos.Volume{
				volume("/data", "/srv/data", mesos.Volume_RO),
				volume("rel", "/abs", mesos.Volume_RW),
				volume("/inside", "sub/dir", mesos.Volume_RW),
				{ContainerPath: proto.String("/named"), Mode: mesos.Volume_RW.Enum(), Source: &mesos.Volume_Source{
					Type:         mesos.Volume_Source_DOCKER_VOLUME.Enum(),
					DockerVolume: &mesos.Volume_Source_DockerVolume{Name: proto.String("vol1"), Driver: proto.String("local")}}},
				{ContainerPath: proto.String("/skipped"), Mode: mesos.Volume_RW.Enum(), Source: &mesos.Volume_Source{
					Type: mesos.Volume_Source_SANDBOX_PATH.Enum()}},
			}
		}, check: func(t *testing.T, b *createSpec) {
			want := []string{"/srv/data:/data:ro", "/abs:/mnt/mesos/sandbox/rel:rw", "/sb/sub/dir:/inside:rw",
				"vol1:/named:rw", "/sb:/mnt/mesos/sandbox"}
			if !slices.Equal(b.host.Binds, want) || b.host.VolumeDriver != "local" {
				t.Errorf("binds %q driver %q", b.host.Binds, b.host.VolumeDriver)
			}
		}},
		{name: "persistent volumes", edit: func(s *spec) {
			s.volumes = []containerizer.Volume{
				{HostPath: "/w/volumes/roles/db/v1", ContainerPath: "data"},
				{HostPath: "/w/volumes/roles/a b/v2", ContainerPath: "/var/lib/db", ReadOnly: true},
			}
		}, check: func(t *testing.T, b *createSpec) {
			want := []string{"/sb:/mnt/mesos/sandbox", "/w/volumes/roles/db/v1:/mnt/mesos/sandbox/data:rw",
				"/w/volumes/roles/a b/v2:/var/lib/db:ro"}
			if !slices.Equal(b.host.Binds, want) {
				t.Errorf("binds %q, want %q", b.host.Binds, want)
			}
		}},
		{name: "persistent volume leaving the sandbox", edit: func(s *spec) {
			s.volumes = []containerizer.Volume{{HostPath: "/w/v", ContainerPath: "../up"}}
		}, err: "does not name a path inside the sandbox"},
		{name: "persistent volume without a path", edit: func(s *spec) {
			s.volumes = []containerizer.Volume{{HostPath: "/w/v"}}
		}, err: "'container_path' is empty"},
		{name: "both volume paths relative", edit: func(s *spec) {
			s.container.Volumes = []*mesos.Volume{volume("a", "b", mesos.Volume_RW)}
		}, err: "'container.volumes[0]': both 'host_path' \"b\" and 'container_path' \"a\" are relative"},
		{name: "relative host path leaving the sandbox", edit: func(s *spec) {
			s.container.Volumes = []*mesos.Volume{volume("/x", "../etc", mesos.Volume_RW)}
		}, err: "leaves the sandbox"},
		{name: "volume without source", edit: func(s *spec) {
			s.container.Volumes = []*mesos.Volume{volume("/x", "", mesos.Volume_RW)}
		}, err: "'container.volumes[0]': 'host_path' or 'source' is required"},
		{name: "bridge with port mappings", edit: func(s *spec) {
			s.container = dockerInfo("img", mesos.ContainerInfo_DockerInfo_BRIDGE)
			s.container.Docker.PortMappings = []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(31000, 8080, ""), mapping(31001, 53, "UDP")}
			s.container.Hostname = proto.String("web")
			s.resources = []*mesos.Resource{portsRes(31000, 31001)}
		}, check: func(t *testing.T, b *createSpec) {
			hc := b.host
			if hc.NetworkMode != "bridge" || b.config.Hostname != "web" {
				t.Errorf("network %q hostname %q", hc.NetworkMode, b.config.Hostname)
			}
			want := network.PortMap{network.MustParsePort("8080/tcp"): {{HostPort: "31000"}}, network.MustParsePort("53/udp"): {{HostPort: "31001"}}}
			if !reflect.DeepEqual(hc.PortBindings, want) || len(b.config.ExposedPorts) != 2 {
				t.Errorf("bindings %v exposed %v", hc.PortBindings, b.config.ExposedPorts)
			}
		}},
		{name: "host port outside the ports resources", edit: func(s *spec) {
			s.container = dockerInfo("img", mesos.ContainerInfo_DockerInfo_BRIDGE)
			s.container.Docker.PortMappings = []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(31000, 80, ""), mapping(32000, 80, "")}
			s.resources = []*mesos.Resource{portsRes(31000, 31999)}
		}, err: "'container.docker.port_mappings[1].host_port' 32000 is not in the 'ports' resources"},
		{name: "port mappings without ports", edit: func(s *spec) {
			s.container = dockerInfo("img", mesos.ContainerInfo_DockerInfo_BRIDGE)
			s.container.Docker.PortMappings = []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(31000, 80, "")}
		}, err: "require 'ports' resources"},
		{name: "port mappings with HOST networking", edit: func(s *spec) {
			s.container.Docker.PortMappings = []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(31000, 80, "")}
		}, err: "only supported with BRIDGE and USER networking"},
		{name: "bad protocol", edit: func(s *spec) {
			s.container = dockerInfo("img", mesos.ContainerInfo_DockerInfo_BRIDGE)
			s.container.Docker.PortMappings = []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(31000, 80, "icmp")}
			s.resources = []*mesos.Resource{portsRes(31000, 31000)}
		}, err: "'container.docker.port_mappings[0].protocol' \"icmp\""},
		{name: "hostname with HOST networking", edit: func(s *spec) { s.container.Hostname = proto.String("h") },
			err: "'container.hostname' cannot be set with HOST networking"},
		{name: "user network", edit: func(s *spec) {
			s.container = dockerInfo("img", mesos.ContainerInfo_DockerInfo_USER)
			s.container.NetworkInfos = []*mesos.NetworkInfo{{Name: proto.String("overlay1")}}
		}, check: func(t *testing.T, b *createSpec) {
			if b.host.NetworkMode != "overlay1" {
				t.Errorf("network %q", b.host.NetworkMode)
			}
		}},
		{name: "user network without a name", edit: func(s *spec) {
			s.container = dockerInfo("img", mesos.ContainerInfo_DockerInfo_USER)
		}, err: "'container.network_infos' must name exactly one network"},
		{name: "none network", edit: func(s *spec) { s.container = dockerInfo("img", mesos.ContainerInfo_DockerInfo_NONE) },
			check: func(t *testing.T, b *createSpec) {
				if b.host.NetworkMode != "none" {
					t.Errorf("network %q", b.host.NetworkMode)
				}
			}},
		{name: "cpu shares and memory", edit: func(s *spec) {
			s.resources = []*mesos.Resource{scalarRes("cpus", 0.5), scalarRes("cpus", 1), scalarRes("mem", 128), scalarRes("disk", 10)}
		}, check: func(t *testing.T, b *createSpec) {
			hc := b.host
			if hc.CPUShares != 1536 || hc.Memory != 128<<20 || hc.CPUQuota != 0 || hc.MemoryReservation != 0 {
				t.Errorf("shares %d memory %d quota %d reservation %d", hc.CPUShares, hc.Memory, hc.CPUQuota, hc.MemoryReservation)
			}
		}},
		{name: "revocable cpus: as regular ones unless at low priority", edit: func(s *spec) {
			rev := scalarRes("cpus", 2)
			rev.Revocable = &mesos.Resource_RevocableInfo{}
			s.resources = []*mesos.Resource{rev, scalarRes("mem", 64)}
		}, check: func(t *testing.T, b *createSpec) {
			if b.host.CPUShares != 2048 {
				t.Errorf("shares %d, want 2048 (testOpts has no low priority)", b.host.CPUShares)
			}
		}},
		{name: "minimums", edit: func(s *spec) { s.resources = []*mesos.Resource{scalarRes("cpus", 0.001), scalarRes("mem", 4)} },
			check: func(t *testing.T, b *createSpec) {
				if b.host.CPUShares != 2 || b.host.Memory != 32<<20 {
					t.Errorf("shares %d memory %d", b.host.CPUShares, b.host.Memory)
				}
			}},
		{name: "limits", edit: func(s *spec) {
			s.resources = []*mesos.Resource{scalarRes("cpus", 1), scalarRes("mem", 64)}
			s.limits = map[string]*mesos.Value_Scalar{"cpus": {Value: proto.Float64(2)}, "mem": {Value: proto.Float64(math.Inf(1))}}
		}, check: func(t *testing.T, b *createSpec) {
			hc := b.host
			if hc.CPUShares != 1024 || hc.CPUQuota != 200000 || hc.CPUPeriod != 100000 || hc.Memory != 0 || hc.MemoryReservation != 64<<20 {
				t.Errorf("%+v", hc)
			}
		}},
		{name: "bad limit", edit: func(s *spec) { s.limits = map[string]*mesos.Value_Scalar{"mem": {Value: proto.Float64(-1)}} },
			err: "'limits.mem' -1 must be positive"},
		{name: "privileged and parameters", edit: func(s *spec) {
			s.container.Docker.Privileged = proto.Bool(true)
			s.container.Docker.Parameters = []*mesos.Parameter{
				{Key: proto.String("env"), Value: proto.String("X=1")},
				{Key: proto.String("label"), Value: proto.String("team=a")},
				{Key: proto.String("user"), Value: proto.String("nobody")},
				{Key: proto.String("memory-swap"), Value: proto.String("1g")},
				{Key: proto.String("ulimit"), Value: proto.String("nofile=1024:2048")},
				{Key: proto.String("init"), Value: proto.String("")},
			}
		}, check: func(t *testing.T, b *createSpec) {
			hc := b.host
			if !hc.Privileged || !slices.Contains(b.config.Env, "X=1") || b.config.Labels["team"] != "a" || b.config.User != "nobody" ||
				hc.MemorySwap != 1<<30 || !reflect.DeepEqual(hc.Ulimits, []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}}) || hc.Init == nil || !*hc.Init {
				t.Errorf("%+v", b)
			}
		}},
		{name: "unsupported parameter", edit: func(s *spec) {
			s.container.Docker.Parameters = []*mesos.Parameter{{Key: proto.String("rm"), Value: proto.String("")}}
		}, err: "'container.docker.parameters[0]': docker run option \"rm\" is not supported"},
		{name: "reserved label", edit: func(s *spec) {
			s.container.Docker.Parameters = []*mesos.Parameter{{Key: proto.String("label"), Value: proto.String(labelOwner + "=x")}}
		}, err: "reserved"},
		{name: "not DOCKER", edit: func(s *spec) { s.container.Type = mesos.ContainerInfo_MESOS.Enum() },
			err: "'container.type' is MESOS"},
		{name: "no type", edit: func(s *spec) { s.container.Type = nil }, err: "'container.type' is missing"},
		{name: "no docker info", edit: func(s *spec) { s.container.Docker = nil }, err: "'container.docker' is missing"},
		{name: "empty image", edit: func(s *spec) { s.container.Docker.Image = proto.String("") }, err: "'container.docker.image' is empty"},
		{name: "bad image", edit: func(s *spec) { s.container.Docker.Image = proto.String("img?x=1") }, err: "not a valid image reference"},
		{name: "bad container id", edit: func(s *spec) { s.containerID = "../x" }, err: "not usable as a Docker container name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSpec()
			if tc.edit != nil {
				tc.edit(s)
			}
			b, err := build(s, testOpts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, b)
		})
	}
}

// Cpu shares and the memory limit follow Mesos's formulas for any request.
func TestResourcesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cpus := rapid.Float64Range(0, 256).Draw(t, "cpus")
		mem := rapid.Float64Range(0, 1<<20).Draw(t, "mem")
		cfs := rapid.Bool().Draw(t, "cfs")
		var hc container.Resources
		if err := setResources(&hc, []*mesos.Resource{scalarRes("cpus", cpus), scalarRes("mem", mem)}, nil, cfs, false); err != nil {
			t.Fatal(err)
		}
		wantShares := int64(math.Floor(1024 * cpus))
		if wantShares < 2 {
			wantShares = 2
		}
		wantMem := int64(math.Floor(mem)) * 1024 * 1024
		if wantMem < 32*1024*1024 {
			wantMem = 32 * 1024 * 1024
		}
		if hc.CPUShares != wantShares || hc.Memory != wantMem {
			t.Fatalf("cpus %v mem %v: shares %d memory %d, want %d %d", cpus, mem, hc.CPUShares, hc.Memory, wantShares, wantMem)
		}
		if cfs {
			wantQuota := int64(math.Floor(cpus * 100000))
			if wantQuota < 1000 {
				wantQuota = 1000
			}
			if hc.CPUQuota != wantQuota || hc.CPUPeriod != 100000 {
				t.Fatalf("cpus %v: quota %d period %d, want %d", cpus, hc.CPUQuota, hc.CPUPeriod, wantQuota)
			}
		} else if hc.CPUQuota != 0 {
			t.Fatalf("quota %d without cfs", hc.CPUQuota)
		}
	})
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"1024", 1024, false}, {"1k", 1024, false}, {"512m", 512 << 20, false}, {"2g", 2 << 30, false},
		{"1GB", 1 << 30, false}, {"1.5k", 1536, false}, {"x", 0, true}, {"-1m", 0, true}, {"", 0, true},
	} {
		got, err := parseBytes(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v", tc.in, got, err)
		}
	}
}

// Parameters never panic, whatever the key and value.
func FuzzApplyParameter(f *testing.F) {
	for _, s := range [][2]string{{"ulimit", "nofile=1:2"}, {"device", "/dev/x:/y:r"}, {"memory", "1g"}, {"sysctl", "a=b"},
		{"tmpfs", "/run:size=1m"}, {"log-opt", "max-size=1m"}, {"label", "="}, {"bogus", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		b := &createSpec{config: container.Config{Labels: map[string]string{}}}
		_ = applyParameter(b, key, value)
	})
}

// --revocable_cpu_low_priority: a container holding revocable cpus gets 16
// shares per cpu (Mesos's CPU_SHARES_PER_CPU_REVOCABLE), at least 2.
func TestRevocableCPUsLowPriority(t *testing.T) {
	rev := func(v float64) *mesos.Resource {
		r := scalarRes("cpus", v)
		r.Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
		return r
	}
	for _, tc := range []struct {
		rs   []*mesos.Resource
		low  bool
		want int64
	}{
		{[]*mesos.Resource{rev(2)}, true, 32},
		{[]*mesos.Resource{rev(2)}, false, 2048},
		{[]*mesos.Resource{scalarRes("cpus", 0.1), rev(1)}, true, 17},
		{[]*mesos.Resource{scalarRes("cpus", 2)}, true, 2048},
		{[]*mesos.Resource{rev(0.01)}, true, minCPUShares},
	} {
		var hc container.Resources
		if err := setResources(&hc, tc.rs, nil, false, tc.low); err != nil {
			t.Fatal(err)
		}
		if hc.CPUShares != tc.want {
			t.Errorf("%v low=%v: %d shares, want %d", tc.rs, tc.low, hc.CPUShares, tc.want)
		}
	}
}
