package docker

import (
	"fmt"
	"os"
	"strings"

	"github.com/moby/moby/client"
)

// DefaultSocket is where the Docker Engine listens unless --docker_socket
// or DOCKER_HOST say otherwise (Mesos's --docker_socket default).
const DefaultSocket = "/var/run/docker.sock"

// engineHost resolves the engine's address into the client library's host
// form: an explicit socket (--docker_socket), else DOCKER_HOST, else
// DefaultSocket. A bare path is a unix socket.
func engineHost(socket string) (string, error) {
	flag := "docker_socket"
	if socket == "" {
		socket, flag = os.Getenv(client.EnvOverrideHost), client.EnvOverrideHost
	}
	switch {
	case socket == "":
		return "unix://" + DefaultSocket, nil
	case strings.HasPrefix(socket, "/"):
		return "unix://" + socket, nil
	case strings.HasPrefix(socket, "unix:///"), strings.HasPrefix(socket, "tcp://") && len(socket) > len("tcp://"):
		return socket, nil
	}
	return "", fmt.Errorf("%s %q: want a socket path, unix:///path or tcp://host:port", flag, socket)
}

// newEngineClient builds the Engine API client for a --docker_socket
// value. The API version is negotiated with the engine on the first
// request (the library's default): the client speaks the engine's version
// when the engine is older than the client, and its own newest otherwise,
// so engines that refuse old API versions (Docker 29 and later refuse
// anything below 1.44) and old engines (down to API 1.40, Docker 19.03)
// both work.
//
// A tcp:// engine is spoken to over TLS when DOCKER_CERT_PATH names a
// directory with ca.pem, cert.pem and key.pem (the client presents
// cert.pem); the engine's certificate is verified against ca.pem when
// DOCKER_TLS_VERIFY is non-empty, as the docker CLI does.
func newEngineClient(socket string) (*client.Client, error) {
	host, err := engineHost(socket)
	if err != nil {
		return nil, err
	}
	opts := []client.Opt{client.WithUserAgent("mezzo-agent")}
	if strings.HasPrefix(host, "tcp://") {
		certPath := os.Getenv(client.EnvOverrideCertPath)
		if os.Getenv(client.EnvTLSVerify) != "" && certPath == "" {
			// Without certificates the connection would silently be plain
			// text, the opposite of what DOCKER_TLS_VERIFY asks for.
			return nil, fmt.Errorf("%s is set but %s is not: name the directory holding ca.pem, cert.pem and key.pem",
				client.EnvTLSVerify, client.EnvOverrideCertPath)
		}
		// Before WithHost: this option replaces the HTTP client, whose
		// transport WithHost then configures for the address.
		opts = append(opts, client.WithTLSClientConfigFromEnv())
	}
	opts = append(opts, client.WithHost(host))
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker engine %s: %w", host, err)
	}
	return c, nil
}
