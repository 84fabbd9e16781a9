package mesos_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"mezzo/api/agentpb"
	_ "mezzo/api/allocatorpb"
	_ "mezzo/api/executorpb"
	_ "mezzo/api/maintenancepb"
	_ "mezzo/api/masterpb"
	"mezzo/api/mesos"
	_ "mezzo/api/quotapb"
	_ "mezzo/api/schedulerpb"
)

// These tests pin a sample of the messages that tools/facts2proto.py fills
// in from api/proto/facts-extra.md. The expected numbers were read from
// apache/mesos include/mesos/v1/{mesos,agent/agent,quota/quota}.proto and
// mesos-go v0.0.11, not from our generated code, so a generator or table
// regression (a shifted number, a lost default, a message left empty) fails
// here instead of silently breaking the wire format.

const (
	opt = protoreflect.Optional
	req = protoreflect.Required
	rep = protoreflect.Repeated
)

func TestFieldNumbers(t *testing.T) {
	tests := []struct {
		field   string // full name: message + "." + field
		number  protoreflect.FieldNumber
		card    protoreflect.Cardinality
		kind    protoreflect.Kind
		typ     string // message or enum full name for message/enum kinds
		deflt   string // proto2 explicit default, "" if none
		isMap   bool
		oneofOf string // containing oneof, "" if none
	}{
		{field: "mesos.v1.ContainerInfo.DockerInfo.image", number: 1, card: req, kind: protoreflect.StringKind},
		{field: "mesos.v1.ContainerInfo.DockerInfo.network", number: 2, card: opt, kind: protoreflect.EnumKind, typ: "mesos.v1.ContainerInfo.DockerInfo.Network", deflt: "HOST"},
		{field: "mesos.v1.ContainerInfo.DockerInfo.port_mappings", number: 3, card: rep, kind: protoreflect.MessageKind, typ: "mesos.v1.ContainerInfo.DockerInfo.PortMapping"},
		{field: "mesos.v1.ContainerInfo.DockerInfo.privileged", number: 4, card: opt, kind: protoreflect.BoolKind, deflt: "false"},
		{field: "mesos.v1.ContainerInfo.DockerInfo.parameters", number: 5, card: rep, kind: protoreflect.MessageKind, typ: "mesos.v1.Parameter"},
		{field: "mesos.v1.ContainerInfo.DockerInfo.PortMapping.container_port", number: 2, card: req, kind: protoreflect.Uint32Kind},
		{field: "mesos.v1.ContainerInfo.MesosInfo.image", number: 1, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.Image"},
		{field: "mesos.v1.HealthCheck.http", number: 1, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.HealthCheck.HTTPCheckInfo"},
		{field: "mesos.v1.HealthCheck.HTTPCheckInfo.protocol", number: 5, card: opt, kind: protoreflect.EnumKind, typ: "mesos.v1.NetworkInfo.Protocol", deflt: "IPv4"},
		{field: "mesos.v1.HealthCheck.HTTPCheckInfo.scheme", number: 3, card: opt, kind: protoreflect.StringKind},
		{field: "mesos.v1.HealthCheck.HTTPCheckInfo.statuses", number: 4, card: rep, kind: protoreflect.Uint32Kind},
		{field: "mesos.v1.HealthCheck.TCPCheckInfo.port", number: 1, card: req, kind: protoreflect.Uint32Kind},
		{field: "mesos.v1.CheckInfo.Http.path", number: 2, card: opt, kind: protoreflect.StringKind},
		{field: "mesos.v1.CheckStatusInfo.Command.exit_code", number: 1, card: opt, kind: protoreflect.Int32Kind},
		{field: "mesos.v1.CheckStatusInfo.Tcp.succeeded", number: 1, card: opt, kind: protoreflect.BoolKind},
		{field: "mesos.v1.NetworkInfo.IPAddress.ip_address", number: 2, card: opt, kind: protoreflect.StringKind},
		{field: "mesos.v1.NetworkInfo.PortMapping.protocol", number: 3, card: opt, kind: protoreflect.StringKind},
		{field: "mesos.v1.Volume.Source.host_path", number: 5, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.Volume.Source.HostPath"},
		{field: "mesos.v1.Volume.Source.csi_volume", number: 6, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.Volume.Source.CSIVolume"},
		{field: "mesos.v1.Volume.Source.CSIVolume.VolumeCapability.mount", number: 2, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.Volume.Source.CSIVolume.VolumeCapability.MountVolume", oneofOf: "access_type"},
		{field: "mesos.v1.Volume.Source.CSIVolume.StaticProvisioning.volume_context", number: 5, card: rep, kind: protoreflect.MessageKind, isMap: true},
		{field: "mesos.v1.Image.Docker.config", number: 3, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.Secret"},
		{field: "mesos.v1.Image.Appc.id", number: 2, card: opt, kind: protoreflect.StringKind},
		{field: "mesos.v1.Secret.Value.data", number: 1, card: req, kind: protoreflect.BytesKind},
		{field: "mesos.v1.LinuxInfo.ipc_mode", number: 6, card: opt, kind: protoreflect.EnumKind, typ: "mesos.v1.LinuxInfo.IpcMode"},
		{field: "mesos.v1.LinuxInfo.share_cgroups", number: 8, card: opt, kind: protoreflect.BoolKind, deflt: "true"},
		{field: "mesos.v1.RLimitInfo.RLimit.soft", number: 3, card: opt, kind: protoreflect.Uint64Kind},
		{field: "mesos.v1.CgroupInfo.NetCls.classid", number: 1, card: opt, kind: protoreflect.Uint32Kind},
		{field: "mesos.v1.CgroupInfo.Blkio.CFQ.Statistics.io_queued", number: 9, card: rep, kind: protoreflect.MessageKind, typ: "mesos.v1.CgroupInfo.Blkio.Value"},
		{field: "mesos.v1.CSIPluginInfo.name", number: 2, card: opt, kind: protoreflect.StringKind, deflt: "default"},
		{field: "mesos.v1.ResourceProviderInfo.storage", number: 6, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.ResourceProviderInfo.Storage"},
		{field: "mesos.v1.ResourceStatistics.timestamp", number: 1, card: req, kind: protoreflect.DoubleKind},
		{field: "mesos.v1.ResourceStatistics.mem_rss_bytes", number: 5, card: opt, kind: protoreflect.Uint64Kind},
		{field: "mesos.v1.ResourceStatistics.mem_total_bytes", number: 36, card: opt, kind: protoreflect.Uint64Kind},
		{field: "mesos.v1.ResourceStatistics.cpus_soft_limit", number: 45, card: opt, kind: protoreflect.DoubleKind},
		{field: "mesos.v1.ResourceStatistics.disk_statistics", number: 43, card: rep, kind: protoreflect.MessageKind, typ: "mesos.v1.DiskStatistics"},
		{field: "mesos.v1.ResourceStatistics.blkio_statistics", number: 44, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.CgroupInfo.Blkio.Statistics"},
		{field: "mesos.v1.ResourceStatistics.net_traffic_control_statistics", number: 35, card: rep, kind: protoreflect.MessageKind, typ: "mesos.v1.TrafficControlStatistics"},
		{field: "mesos.v1.ResourceStatistics.net_snmp_statistics", number: 42, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.SNMPStatistics"},
		{field: "mesos.v1.TrafficControlStatistics.ratebps", number: 8, card: opt, kind: protoreflect.Uint64Kind},
		{field: "mesos.v1.SNMPStatistics.tcp_stats", number: 3, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.TcpStatistics"},
		{field: "mesos.v1.TcpStatistics.RetransSegs", number: 12, card: opt, kind: protoreflect.Int64Kind},
		{field: "mesos.v1.PerfStatistics.node_prefetch_misses", number: 53, card: opt, kind: protoreflect.Uint64Kind},
		{field: "mesos.v1.ResourceUsage.total", number: 2, card: rep, kind: protoreflect.MessageKind, typ: "mesos.v1.Resource"},
		{field: "mesos.v1.ResourceUsage.Executor.container_id", number: 4, card: req, kind: protoreflect.MessageKind, typ: "mesos.v1.ContainerID"},
		{field: "mesos.v1.ResourceUsage.Executor.Task.labels", number: 4, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.Labels"},
		{field: "mesos.v1.agent.Call.GetContainers.show_standalone", number: 2, card: opt, kind: protoreflect.BoolKind},
		{field: "mesos.v1.agent.Call.LaunchContainer.limits", number: 5, card: rep, kind: protoreflect.MessageKind, isMap: true},
		{field: "mesos.v1.agent.Call.ReadFile.offset", number: 2, card: req, kind: protoreflect.Uint64Kind},
		{field: "mesos.v1.agent.Response.GetContainers.Container.container_id", number: 4, card: req, kind: protoreflect.MessageKind, typ: "mesos.v1.ContainerID"},
		{field: "mesos.v1.agent.Response.GetContainers.Container.resource_statistics", number: 6, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.ResourceStatistics"},
		{field: "mesos.v1.agent.Response.GetAgent.drain_config", number: 2, card: opt, kind: protoreflect.MessageKind, typ: "mesos.v1.DrainConfig"},
		{field: "mesos.v1.agent.Response.WaitContainer.reason", number: 3, card: opt, kind: protoreflect.EnumKind, typ: "mesos.v1.TaskStatus.Reason"},
		{field: "mesos.v1.quota.QuotaStatus.configs", number: 2, card: rep, kind: protoreflect.MessageKind, typ: "mesos.v1.quota.QuotaConfig"},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			i := strings.LastIndexByte(tc.field, '.')
			md := findMessage(t, tc.field[:i])
			fd := md.Fields().ByName(protoreflect.Name(tc.field[i+1:]))
			if fd == nil {
				t.Fatalf("no field %q in %s", tc.field[i+1:], md.FullName())
			}
			if fd.Number() != tc.number {
				t.Errorf("number = %d, want %d", fd.Number(), tc.number)
			}
			if fd.Cardinality() != tc.card {
				t.Errorf("cardinality = %v, want %v", fd.Cardinality(), tc.card)
			}
			if fd.Kind() != tc.kind {
				t.Errorf("kind = %v, want %v", fd.Kind(), tc.kind)
			}
			if fd.IsMap() != tc.isMap {
				t.Errorf("IsMap = %v, want %v", fd.IsMap(), tc.isMap)
			}
			if tc.typ != "" {
				var got protoreflect.FullName
				if fd.Enum() != nil {
					got = fd.Enum().FullName()
				} else if fd.Message() != nil {
					got = fd.Message().FullName()
				}
				if string(got) != tc.typ {
					t.Errorf("type = %s, want %s", got, tc.typ)
				}
			}
			if got := defaultString(fd); got != tc.deflt {
				t.Errorf("default = %q, want %q", got, tc.deflt)
			}
			var oneof string
			if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
				oneof = string(o.Name())
			}
			if oneof != tc.oneofOf {
				t.Errorf("oneof = %q, want %q", oneof, tc.oneofOf)
			}
		})
	}
}

func TestEnumValues(t *testing.T) {
	tests := []struct {
		value  string // full enum name + "." + value name
		number protoreflect.EnumNumber
	}{
		{"mesos.v1.ContainerInfo.DockerInfo.Network.USER", 4},
		{"mesos.v1.Volume.Source.Type.HOST_PATH", 4},
		{"mesos.v1.Volume.Source.Type.CSI_VOLUME", 5},
		{"mesos.v1.Volume.Source.SandboxPath.Type.PARENT", 2},
		{"mesos.v1.CapabilityInfo.Capability.CHOWN", 1000},
		{"mesos.v1.CapabilityInfo.Capability.BPF", 1039},
		{"mesos.v1.RLimitInfo.RLimit.Type.RLMT_STACK", 16},
		{"mesos.v1.CgroupInfo.Blkio.Operation.DISCARD", 6},
		{"mesos.v1.Secret.Type.VALUE", 2},
		{"mesos.v1.agent.Call.AttachContainerInput.Type.PROCESS_IO", 2},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			i := strings.LastIndexByte(tc.value, '.')
			d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(tc.value[:i]))
			if err != nil {
				t.Fatalf("enum %s: %v", tc.value[:i], err)
			}
			ed, ok := d.(protoreflect.EnumDescriptor)
			if !ok {
				t.Fatalf("%s is a %T, not an enum", tc.value[:i], d)
			}
			v := ed.Values().ByName(protoreflect.Name(tc.value[i+1:]))
			if v == nil {
				t.Fatalf("no value %s", tc.value)
			}
			if v.Number() != tc.number {
				t.Errorf("number = %d, want %d", v.Number(), tc.number)
			}
		})
	}
}

// TestNoPlaceholderMessages fails when a message is generated without fields
// although Mesos declares fields for it, i.e. when facts2proto.py fell back to
// an empty placeholder because no facts file tabulates it.
func TestNoPlaceholderMessages(t *testing.T) {
	// Messages that are field-less in Mesos itself.
	emptyInMesos := map[protoreflect.FullName]bool{
		"mesos.v1.Resource.RevocableInfo.ThrottleInfo":                  true, // mezzo's, as the reservation design proposes
		"mesos.v1.Resource.SharedInfo":                                  true,
		"mesos.v1.CgroupInfo.Blkio":                                     true,
		"mesos.v1.CgroupInfo.Blkio.CFQ":                                 true,
		"mesos.v1.CgroupInfo.Blkio.Throttling":                          true,
		"mesos.v1.Volume.Source.CSIVolume.VolumeCapability.BlockVolume": true,
		"mesos.v1.scheduler.AttributeConstraint.Predicate.Exists":       true,
		"mesos.v1.scheduler.AttributeConstraint.Predicate.NotExists":    true,
	}
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			md := ms.Get(i)
			if md.Fields().Len() == 0 && !md.IsMapEntry() && !emptyInMesos[md.FullName()] {
				t.Errorf("%s has no fields: not tabulated in any facts file?", md.FullName())
			}
			walk(md.Messages())
		}
	}
	files := 0
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(string(fd.Package()), "mesos.v1") {
			files++
			walk(fd.Messages())
		}
		return true
	})
	if files < 8 {
		t.Errorf("saw %d mesos.v1 files, want all 8 generated packages linked in", files)
	}
}

// TestGetContainersRoundTrip exercises the filled-in types through the
// generated Go API and the binary codec, as the agent's GET_CONTAINERS does.
func TestGetContainersRoundTrip(t *testing.T) {
	in := &agentpb.Response{
		Type: agentpb.Response_GET_CONTAINERS.Enum(),
		GetContainers: &agentpb.Response_GetContainers{
			Containers: []*agentpb.Response_GetContainers_Container{{
				ContainerId:  &mesos.ContainerID{Value: proto.String("c1")},
				ExecutorName: proto.String("exec"),
				ResourceStatistics: &mesos.ResourceStatistics{
					Timestamp:     proto.Float64(1.5),
					MemRssBytes:   proto.Uint64(1 << 20),
					CpusSoftLimit: proto.Float64(0.5),
					BlkioStatistics: &mesos.CgroupInfo_Blkio_Statistics{
						Throttling: []*mesos.CgroupInfo_Blkio_Throttling_Statistics{{
							IoServiced: []*mesos.CgroupInfo_Blkio_Value{{
								Op:    mesos.CgroupInfo_Blkio_READ.Enum(),
								Value: proto.Uint64(7),
							}},
						}},
					},
				},
			}},
		},
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := new(agentpb.Response)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, out) {
		t.Fatalf("round trip changed the message:\n in: %v\nout: %v", in, out)
	}
	// A ResourceStatistics without its required timestamp must not encode.
	bad := &mesos.ResourceStatistics{MemRssBytes: proto.Uint64(1)}
	if _, err := proto.Marshal(bad); err == nil {
		t.Error("marshal without required timestamp succeeded")
	}
}

func findMessage(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		t.Fatalf("message %s: %v", name, err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		t.Fatalf("%s is a %T, not a message", name, d)
	}
	return md
}

// defaultString renders a field's explicit proto2 default the way the facts
// tables write it ("" when none is declared).
func defaultString(fd protoreflect.FieldDescriptor) string {
	if !fd.HasDefault() {
		return ""
	}
	if fd.Kind() == protoreflect.EnumKind {
		return string(fd.DefaultEnumValue().Name())
	}
	switch v := fd.Default().Interface().(type) {
	case string:
		return v
	case bool:
		if v {
			return "true"
		}
		return "false"
	}
	return fd.Default().String()
}
