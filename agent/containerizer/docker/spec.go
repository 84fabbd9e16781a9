package docker

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
	"mezzo/internal/secrets"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// Mesos's constants for Docker containers.
const (
	// DefaultSandboxDirectory is where the sandbox is mounted in the
	// container (Mesos's --sandbox_directory); MESOS_SANDBOX names it.
	DefaultSandboxDirectory = "/mnt/mesos/sandbox"
	// NamePrefix starts every container name (Mesos's DOCKER_NAME_PREFIX),
	// followed by the container ID.
	NamePrefix = "mesos-"

	cpuSharesPerCPU = 1024
	// cpuSharesPerRevocableCPU is Mesos's CPU_SHARES_PER_CPU_REVOCABLE.
	cpuSharesPerRevocableCPU = 16
	minCPUShares             = 2
	cfsPeriodUsecs           = 100000
	minCFSQuota              = 1000 // 1ms
	minMemoryBytes           = 32 << 20
)

// spec is what one container is built from: the ContainerInfo, the
// command, the environment and the resources, with the sandbox it mounts.
type spec struct {
	containerID string
	sandbox     string // host directory
	container   *mesos.ContainerInfo
	command     *mesos.CommandInfo // nil: the image's entrypoint and cmd
	// env is the base environment ("K=V"); per Mesos it wins over the
	// command's environment on duplicate names.
	env       []string
	resources []*mesos.Resource
	limits    map[string]*mesos.Value_Scalar
	// volumes are persistent volumes to bind-mount.
	volumes []containerizer.Volume
}

// buildOptions are the containerizer's settings that shape a container.
type buildOptions struct {
	owner       string
	sandboxDir  string // inside the container
	enableCFS   bool   // --cgroups_enable_cfs: cpu quota from the cpus request
	lowPriority bool   // --revocable_cpu_low_priority: revocable cpus get few shares
	volumeCheck func(hostPath string) error
}

// containerName is the Docker name of a Mesos container.
func containerName(containerID string) string { return NamePrefix + containerID }

// Docker names are [a-zA-Z0-9][a-zA-Z0-9_.-]*; container IDs must fit.
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Image references: registry[:port]/path[:tag][@digest], lower-case path.
var imageRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._:/@+-]*$`)

// validateImage rejects references the engine would misparse in a URL.
func validateImage(image string) error {
	if image == "" {
		return fmt.Errorf("'container.docker.image' is empty")
	}
	if !imageRE.MatchString(image) || strings.Contains(image, "..") || strings.HasSuffix(image, "/") {
		return fmt.Errorf("'container.docker.image' %q is not a valid image reference", image)
	}
	return nil
}

// build turns a spec into the container's configuration for POST
// /containers/create. Errors name the offending field.
func build(s *spec, o buildOptions) (*createSpec, error) {
	if !nameRE.MatchString(s.containerID) {
		return nil, fmt.Errorf("container id %q is not usable as a Docker container name", s.containerID)
	}
	ci := s.container
	if ci == nil || ci.Type == nil {
		return nil, fmt.Errorf("'container.type' is missing")
	}
	if ci.GetType() != mesos.ContainerInfo_DOCKER {
		return nil, fmt.Errorf("'container.type' is %s, the docker containerizer runs only DOCKER containers", ci.GetType())
	}
	di := ci.GetDocker()
	if di == nil {
		return nil, fmt.Errorf("'container.docker' is missing")
	}
	if err := validateImage(di.GetImage()); err != nil {
		return nil, err
	}
	name := containerName(s.containerID)
	b := &createSpec{config: container.Config{
		Image: di.GetImage(),
		Labels: map[string]string{
			labelOwner:     o.owner,
			labelContainer: s.containerID,
			labelSandbox:   s.sandbox,
		},
	}}
	hc := &b.host
	hc.Privileged = di.GetPrivileged()

	if err := setResources(&hc.Resources, s.resources, s.limits, o.enableCFS, o.lowPriority); err != nil {
		return nil, err
	}
	b.config.Env = environment(s, name, o.sandboxDir)
	if err := setVolumes(hc, s, o); err != nil {
		return nil, err
	}
	if err := setNetwork(b, ci, s.resources); err != nil {
		return nil, err
	}
	for i, p := range di.GetParameters() {
		if err := applyParameter(b, p.GetKey(), p.GetValue()); err != nil {
			return nil, fmt.Errorf("'container.docker.parameters[%d]': %w", i, err)
		}
	}
	if err := setCommand(&b.config, s.command); err != nil {
		return nil, err
	}
	return b, nil
}

// revocableCPUs reports whether some of the cpus are revocable.
func revocableCPUs(rs []*mesos.Resource) bool {
	for _, r := range rs {
		if r.GetName() == "cpus" && r.Revocable != nil {
			return true
		}
	}
	return false
}

// scalar sums a scalar resource over roles; ports collects ranges.
func scalar(rs []*mesos.Resource, name string) (float64, bool) {
	var sum float64
	found := false
	for _, r := range rs {
		if r.GetName() == name && r.GetType() == mesos.Value_SCALAR {
			sum += r.GetScalar().GetValue()
			found = true
		}
	}
	return sum, found
}

func portRanges(rs []*mesos.Resource) []*mesos.Value_Range {
	var out []*mesos.Value_Range
	for _, r := range rs {
		if r.GetName() == "ports" && r.GetType() == mesos.Value_RANGES {
			out = append(out, r.GetRanges().GetRange()...)
		}
	}
	return out
}

// cpuCapped reports whether a container's cpu resources hold it below
// one cpu's shares or under a CFS quota.
func cpuCapped(r container.Resources) bool {
	return (r.CPUShares > 0 && r.CPUShares < cpuSharesPerCPU) || r.CPUQuota > 0
}

// setResources applies Mesos's rules: cpu shares = 1024 × cpus (at least
// 2), or 16 × cpus when some cpus are revocable and lowPriority is set
// (--revocable_cpu_low_priority); a cpu quota from the cpus limit, or from the request with
// --cgroups_enable_cfs; memory limit = the mem limit or request (at least
// 32 MB), with the request as the reservation when a limit is given.
func setResources(hc *container.Resources, rs []*mesos.Resource, limits map[string]*mesos.Value_Scalar, cfs, lowPriority bool) error {
	cpus, hasCPUs := scalar(rs, "cpus")
	mem, hasMem := scalar(rs, "mem")
	if hasCPUs {
		perCPU := float64(cpuSharesPerCPU)
		if lowPriority && revocableCPUs(rs) {
			perCPU = cpuSharesPerRevocableCPU
		}
		hc.CPUShares = max(int64(perCPU*cpus), minCPUShares)
	}
	quota := func(c float64) {
		hc.CPUPeriod = cfsPeriodUsecs
		hc.CPUQuota = max(int64(c*cfsPeriodUsecs), minCFSQuota)
	}
	if l, ok := limits["cpus"]; ok {
		if v := l.GetValue(); !math.IsInf(v, 1) {
			if v <= 0 || math.IsNaN(v) {
				return fmt.Errorf("'limits.cpus' %v must be positive", v)
			}
			quota(v)
		}
	} else if cfs && hasCPUs {
		quota(cpus)
	}
	memBytes := func(mb float64) int64 { return max(int64(mb)<<20, minMemoryBytes) }
	if l, ok := limits["mem"]; ok {
		if v := l.GetValue(); !math.IsInf(v, 1) {
			if v <= 0 || math.IsNaN(v) {
				return fmt.Errorf("'limits.mem' %v must be positive", v)
			}
			hc.Memory = memBytes(v)
		}
		if hasMem {
			hc.MemoryReservation = memBytes(mem)
		}
	} else if hasMem {
		hc.Memory = memBytes(mem)
	}
	return nil
}

// environment is the base environment, then the command's variables not
// already set, then MESOS_SANDBOX and MESOS_CONTAINER_NAME (as Mesos).
func environment(s *spec, name, sandboxDir string) []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	base := map[string]bool{}
	for _, kv := range s.env {
		k, v, _ := strings.Cut(kv, "=")
		base[k] = true
		set(k, v)
	}
	for _, v := range s.command.GetEnvironment().GetVariables() {
		if base[v.GetName()] {
			continue
		}
		// VALUE secrets resolve to their data (the agent refused the
		// launch of any secret it cannot resolve).
		if val, ok := secrets.EnvValue(v); ok {
			set(v.GetName(), val)
		}
	}
	set("MESOS_SANDBOX", sandboxDir)
	set("MESOS_CONTAINER_NAME", name)
	if role := allocationRole(s.resources); role != "" {
		set("MESOS_ALLOCATION_ROLE", role)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

func allocationRole(rs []*mesos.Resource) string {
	for _, r := range rs {
		if role := r.GetAllocationInfo().GetRole(); role != "" {
			return role
		}
	}
	return ""
}

// setVolumes maps ContainerInfo.volumes to binds (Mesos's rules: a
// relative container_path is under the sandbox mount; a relative host_path
// is under the host sandbox; both relative is an error), then mounts the
// sandbox itself.
func setVolumes(hc *container.HostConfig, s *spec, o buildOptions) error {
	driver := s.container.GetDocker().GetVolumeDriver()
	for i, v := range s.container.GetVolumes() {
		field := fmt.Sprintf("'container.volumes[%d]'", i)
		cp := v.GetContainerPath()
		if cp == "" {
			return fmt.Errorf("%s: 'container_path' is empty", field)
		}
		if !path.IsAbs(cp) {
			cp = path.Join(o.sandboxDir, cp)
		}
		var mode string
		switch v.GetMode() {
		case mesos.Volume_RW:
			mode = "rw"
		case mesos.Volume_RO:
			mode = "ro"
		default:
			return fmt.Errorf("%s: unsupported 'mode' %v", field, v.GetMode())
		}
		var src string
		switch {
		case v.HostPath != nil:
			hp := v.GetHostPath()
			if hp == "" {
				return fmt.Errorf("%s: 'host_path' is empty", field)
			}
			if !path.IsAbs(hp) && !path.IsAbs(v.GetContainerPath()) {
				return fmt.Errorf("%s: both 'host_path' %q and 'container_path' %q are relative", field, hp, v.GetContainerPath())
			}
			if !path.IsAbs(hp) && driver == "" {
				hp = path.Join(s.sandbox, hp)
				if rel := path.Clean(v.GetHostPath()); rel == ".." || strings.HasPrefix(rel, "../") {
					return fmt.Errorf("%s: relative 'host_path' %q leaves the sandbox", field, v.GetHostPath())
				}
			}
			if o.volumeCheck != nil && path.IsAbs(hp) {
				if err := o.volumeCheck(hp); err != nil {
					return fmt.Errorf("%s: 'host_path' %q: %w", field, hp, err)
				}
			}
			src = hp
		case v.GetSource() != nil:
			if v.GetSource().GetType() != mesos.Volume_Source_DOCKER_VOLUME {
				// Mesos ignores other sources for Docker containers.
				continue
			}
			dv := v.GetSource().GetDockerVolume()
			if dv.GetName() == "" {
				return fmt.Errorf("%s: 'source.docker_volume.name' is empty", field)
			}
			if d := dv.GetDriver(); d != "" {
				if driver != "" && driver != d {
					return fmt.Errorf("%s: only one volume driver is supported (%q and %q)", field, driver, d)
				}
				driver = d
			}
			src = dv.GetName()
		default:
			return fmt.Errorf("%s: 'host_path' or 'source' is required", field)
		}
		hc.Binds = append(hc.Binds, src+":"+cp+":"+mode)
	}
	hc.Binds = append(hc.Binds, s.sandbox+":"+o.sandboxDir)
	for i, v := range s.volumes {
		cp := v.ContainerPath
		if cp == "" {
			return fmt.Errorf("persistent volume %d (%s): 'container_path' is empty", i, v.HostPath)
		}
		if !path.IsAbs(cp) {
			if rel := path.Clean(cp); rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
				return fmt.Errorf("persistent volume %s: 'container_path' %q does not name a path inside the sandbox", v.HostPath, cp)
			}
			cp = path.Join(o.sandboxDir, cp)
		}
		mode := "rw"
		if v.ReadOnly {
			mode = "ro"
		}
		// After the sandbox's own bind, so a volume inside the sandbox
		// directory is mounted over it.
		hc.Binds = append(hc.Binds, v.HostPath+":"+cp+":"+mode)
	}
	hc.VolumeDriver = driver
	return nil
}

// setNetwork applies the network mode, hostname and port mappings. Host
// ports must lie in the container's 'ports' resources.
func setNetwork(b *createSpec, ci *mesos.ContainerInfo, rs []*mesos.Resource) error {
	di := ci.GetDocker()
	hc := &b.host
	switch di.GetNetwork() { // unset means HOST, the proto default
	case mesos.ContainerInfo_DockerInfo_HOST:
		hc.NetworkMode = "host"
	case mesos.ContainerInfo_DockerInfo_BRIDGE:
		hc.NetworkMode = "bridge"
	case mesos.ContainerInfo_DockerInfo_NONE:
		hc.NetworkMode = "none"
	case mesos.ContainerInfo_DockerInfo_USER:
		nis := ci.GetNetworkInfos()
		if len(nis) != 1 {
			return fmt.Errorf("'container.network_infos' must name exactly one network for USER networking (has %d)", len(nis))
		}
		if nis[0].GetName() == "" {
			return fmt.Errorf("'container.network_infos[0].name' is empty")
		}
		hc.NetworkMode = container.NetworkMode(nis[0].GetName())
	default:
		return fmt.Errorf("'container.docker.network' %v is not supported", di.GetNetwork())
	}
	if ci.Hostname != nil {
		if hc.NetworkMode == "host" {
			return fmt.Errorf("'container.hostname' cannot be set with HOST networking")
		}
		b.config.Hostname = ci.GetHostname()
	}
	pms := di.GetPortMappings()
	if len(pms) == 0 {
		return nil
	}
	if hc.NetworkMode == "host" || hc.NetworkMode == "none" {
		return fmt.Errorf("'container.docker.port_mappings' are only supported with BRIDGE and USER networking")
	}
	ranges := portRanges(rs)
	if len(ranges) == 0 {
		return fmt.Errorf("'container.docker.port_mappings' require 'ports' resources")
	}
	b.config.ExposedPorts = network.PortSet{}
	hc.PortBindings = network.PortMap{}
	for i, pm := range pms {
		hp, cp := pm.GetHostPort(), pm.GetContainerPort()
		if cp == 0 || cp > 65535 || hp == 0 || hp > 65535 {
			return fmt.Errorf("'container.docker.port_mappings[%d]': ports must be in 1-65535 (host %d, container %d)", i, hp, cp)
		}
		in := false
		for _, r := range ranges {
			if uint64(hp) >= r.GetBegin() && uint64(hp) <= r.GetEnd() {
				in = true
				break
			}
		}
		if !in {
			return fmt.Errorf("'container.docker.port_mappings[%d].host_port' %d is not in the 'ports' resources", i, hp)
		}
		proto := strings.ToLower(pm.GetProtocol())
		switch proto {
		case "":
			proto = "tcp"
		case "tcp", "udp", "sctp":
		default:
			return fmt.Errorf("'container.docker.port_mappings[%d].protocol' %q is not tcp, udp or sctp", i, pm.GetProtocol())
		}
		key, _ := network.PortFrom(uint16(cp), network.IPProtocol(proto))
		b.config.ExposedPorts[key] = struct{}{}
		hc.PortBindings[key] = append(hc.PortBindings[key], network.PortBinding{HostPort: strconv.Itoa(int(hp))})
	}
	return nil
}

// setCommand applies Mesos's rules: shell → entrypoint /bin/sh with
// arguments "-c" and the value; otherwise the image's entrypoint with the
// value (if any) followed by the arguments as its arguments.
func setCommand(b *container.Config, cmd *mesos.CommandInfo) error {
	if cmd == nil {
		return nil
	}
	// command.user is not applied: as in Mesos, the container runs as the
	// image's user unless a "user" parameter says otherwise.
	if cmd.GetShell() {
		if cmd.Value == nil {
			return fmt.Errorf("'command.shell' is true but 'command.value' is missing")
		}
		b.Entrypoint = []string{"/bin/sh"}
		b.Cmd = []string{"-c", cmd.GetValue()}
		return nil
	}
	var args []string
	if cmd.Value != nil {
		args = append(args, cmd.GetValue())
	}
	b.Cmd = append(args, cmd.GetArguments()...)
	return nil
}
