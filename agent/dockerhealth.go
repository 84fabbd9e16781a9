package agent

import (
	"fmt"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// Health checks of Docker command tasks are run by the agent as for any
// direct task (directtask.go). Mesos's docker executor runs the checks inside the container's network
// namespace (and COMMAND checks with `docker exec`). The agent probes from
// the host instead: HTTP and TCP checks of a HOST-networked container go to
// 127.0.0.1:port as is; with BRIDGE or USER networking the check's port is
// the container port, so the probe goes to the host port its port mapping
// publishes, and a check whose port is not published is not run. COMMAND
// checks (which would need to run in the container) and checks of NONE
// networking are not run either; the agent logs why.

// dockerHealthCheck returns the check to run from the host for a Docker
// task, or an error saying why it cannot be run.
func dockerHealthCheck(t *mesos.TaskInfo) (*mesos.HealthCheck, error) {
	hc := proto.Clone(t.GetHealthCheck()).(*mesos.HealthCheck)
	var port *uint32
	switch hc.GetType() {
	case mesos.HealthCheck_HTTP:
		port = hc.GetHttp().Port
	case mesos.HealthCheck_TCP:
		port = hc.GetTcp().Port
	default:
		return nil, fmt.Errorf("%s health checks of Docker tasks are not supported by mezzo (they would run in the container)", hc.GetType())
	}
	if port == nil {
		return nil, fmt.Errorf("the health check has no port")
	}
	di := t.GetContainer().GetDocker()
	switch di.GetNetwork() {
	case mesos.ContainerInfo_DockerInfo_HOST:
		return hc, nil
	case mesos.ContainerInfo_DockerInfo_NONE:
		return nil, fmt.Errorf("a container with NONE networking cannot be probed from the agent")
	}
	for _, pm := range di.GetPortMappings() {
		proto := pm.GetProtocol()
		if pm.GetContainerPort() == *port && (proto == "" || proto == "tcp") {
			host := pm.GetHostPort()
			if hc.Http != nil {
				hc.Http.Port = &host
			} else {
				hc.Tcp.Port = &host
			}
			return hc, nil
		}
	}
	return nil, fmt.Errorf("the health check's port %d is not published by a tcp port mapping", *port)
}
