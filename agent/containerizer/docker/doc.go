// Package docker is the agent's `docker` containerizer
// (--containerizers=docker): it runs tasks and executors whose
// ContainerInfo has type DOCKER as Docker containers, talking to the Docker
// Engine API through the maintained client library (github.com/moby/moby/
// client; no docker CLI) over the engine's unix socket or a tcp:// address
// with TLS, negotiating the API version with the engine, and pulling
// images with registry credentials (--docker_config).
//
// It owns the translation of a ContainerInfo (image, command, environment,
// volumes, HOST/BRIDGE/NONE/USER networking with port mappings, cpu shares
// and memory limit, privileged, parameters) into a container, following the
// container's stdout and stderr into the sandbox's files, killing with a
// grace period, reporting terminations in the shared
// containerizer.Termination form, and re-attaching to running containers
// after an agent restart (containers are found by their labels).
//
// The agent calls it through the containerizer.Containerizer interface for
// executors (Launch with a ContainerConfig whose ExecutorInfo carries the
// DOCKER ContainerInfo) and through LaunchTask for command tasks, which run
// directly in the container: the agent reports their status itself, as
// Mesos's docker executor would. See docs/docker.md.
package docker
