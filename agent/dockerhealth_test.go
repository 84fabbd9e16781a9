package agent

import (
	"strings"
	"testing"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// The health check of a Docker task is probed from the host: BRIDGE
// networking translates the container port through the port mappings.
func TestDockerHealthCheck(t *testing.T) {
	mapping := func(host, ctr uint32, proto_ string) *mesos.ContainerInfo_DockerInfo_PortMapping {
		pm := &mesos.ContainerInfo_DockerInfo_PortMapping{HostPort: proto.Uint32(host), ContainerPort: proto.Uint32(ctr)}
		if proto_ != "" {
			pm.Protocol = proto.String(proto_)
		}
		return pm
	}
	httpCheck := &mesos.HealthCheck{Type: mesos.HealthCheck_HTTP.Enum(), Http: &mesos.HealthCheck_HTTPCheckInfo{Port: proto.Uint32(8080)}}
	tcpCheck := &mesos.HealthCheck{Type: mesos.HealthCheck_TCP.Enum(), Tcp: &mesos.HealthCheck_TCPCheckInfo{Port: proto.Uint32(8080)}}
	cmdCheck := &mesos.HealthCheck{Type: mesos.HealthCheck_COMMAND.Enum(), Command: &mesos.CommandInfo{Value: proto.String("true")}}
	for _, tc := range []struct {
		name     string
		net      mesos.ContainerInfo_DockerInfo_Network
		mappings []*mesos.ContainerInfo_DockerInfo_PortMapping
		check    *mesos.HealthCheck
		port     uint32
		err      string
	}{
		{"host http", mesos.ContainerInfo_DockerInfo_HOST, nil, httpCheck, 8080, ""},
		{"bridge http", mesos.ContainerInfo_DockerInfo_BRIDGE, []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(31001, 9090, ""), mapping(31002, 8080, "tcp")}, httpCheck, 31002, ""},
		{"bridge tcp", mesos.ContainerInfo_DockerInfo_BRIDGE, []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(31003, 8080, "")}, tcpCheck, 31003, ""},
		{"bridge udp only", mesos.ContainerInfo_DockerInfo_BRIDGE, []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(31004, 8080, "udp")}, tcpCheck, 0, "not published"},
		{"bridge unmapped", mesos.ContainerInfo_DockerInfo_BRIDGE, nil, httpCheck, 0, "not published"},
		{"none", mesos.ContainerInfo_DockerInfo_NONE, nil, httpCheck, 0, "NONE networking"},
		{"command", mesos.ContainerInfo_DockerInfo_HOST, nil, cmdCheck, 0, "COMMAND health checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := &mesos.TaskInfo{
				HealthCheck: tc.check,
				Container: &mesos.ContainerInfo{Type: mesos.ContainerInfo_DOCKER.Enum(), Docker: &mesos.ContainerInfo_DockerInfo{
					Image: proto.String("x"), Network: tc.net.Enum(), PortMappings: tc.mappings}},
			}
			got, err := dockerHealthCheck(task)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			port := got.GetHttp().GetPort() + got.GetTcp().GetPort()
			if port != tc.port {
				t.Errorf("probed port %d, want %d", port, tc.port)
			}
			if tc.check.GetHttp().GetPort()+tc.check.GetTcp().GetPort() != 8080 {
				t.Error("the task's own check was modified")
			}
		})
	}
}
