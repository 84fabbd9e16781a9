package docker

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
)

// applyParameter maps one DockerInfo parameter (a `docker run` option
// without its leading dashes, as Mesos passes them: --key=value) onto the
// create body. Only options with a direct Engine API equivalent are
// supported; others are an error naming the key rather than being dropped
// silently.
func applyParameter(b *createSpec, key, value string) error {
	cfg, hc := &b.config, &b.host
	var err error
	switch key {
	case "env", "e":
		if !strings.Contains(value, "=") {
			return fmt.Errorf("%q: want NAME=VALUE", key)
		}
		cfg.Env = append(cfg.Env, value)
	case "label", "l":
		k, v, _ := strings.Cut(value, "=")
		if k == "" {
			return fmt.Errorf("%q: empty label name", key)
		}
		if strings.HasPrefix(k, "org.mezzo.") {
			return fmt.Errorf("%q: label %q is reserved for the containerizer", key, k)
		}
		cfg.Labels[k] = v
	case "user", "u":
		cfg.User = value
	case "workdir", "w":
		cfg.WorkingDir = value
	case "hostname", "h":
		if hc.NetworkMode == "host" {
			return fmt.Errorf("%q cannot be set with HOST networking", key)
		}
		cfg.Hostname = value
	case "entrypoint":
		cfg.Entrypoint = []string{value}
	case "stop-signal":
		cfg.StopSignal = value
	case "volume", "v":
		if !strings.Contains(value, ":") {
			return fmt.Errorf("%q: want SOURCE:TARGET[:MODE]", key)
		}
		hc.Binds = append(hc.Binds, value)
	case "add-host":
		hc.ExtraHosts = append(hc.ExtraHosts, value)
	case "cap-add":
		hc.CapAdd = append(hc.CapAdd, value)
	case "cap-drop":
		hc.CapDrop = append(hc.CapDrop, value)
	case "dns":
		var ip netip.Addr
		if ip, err = netip.ParseAddr(value); err == nil {
			hc.DNS = append(hc.DNS, ip)
		}
	case "dns-search":
		hc.DNSSearch = append(hc.DNSSearch, value)
	case "dns-opt", "dns-option":
		hc.DNSOptions = append(hc.DNSOptions, value)
	case "security-opt":
		hc.SecurityOpt = append(hc.SecurityOpt, value)
	case "group-add":
		hc.GroupAdd = append(hc.GroupAdd, value)
	case "pid":
		hc.PidMode = container.PidMode(value)
	case "ipc":
		hc.IpcMode = container.IpcMode(value)
	case "cpuset-cpus":
		hc.CpusetCpus = value
	case "cpu-shares", "c":
		hc.CPUShares, err = strconv.ParseInt(value, 10, 64)
	case "cpu-quota":
		hc.CPUQuota, err = strconv.ParseInt(value, 10, 64)
	case "cpu-period":
		hc.CPUPeriod, err = strconv.ParseInt(value, 10, 64)
	case "memory", "m":
		hc.Memory, err = parseBytes(value)
	case "memory-reservation":
		hc.MemoryReservation, err = parseBytes(value)
	case "memory-swap":
		if value == "-1" {
			hc.MemorySwap = -1
		} else {
			hc.MemorySwap, err = parseBytes(value)
		}
	case "shm-size":
		hc.ShmSize, err = parseBytes(value)
	case "pids-limit":
		var n int64
		if n, err = strconv.ParseInt(value, 10, 64); err == nil {
			hc.PidsLimit = &n
		}
	case "oom-score-adj":
		hc.OomScoreAdj, err = strconv.Atoi(value)
	case "oom-kill-disable", "init", "read-only", "privileged":
		var v bool
		if v, err = parseBool(value); err == nil {
			switch key {
			case "oom-kill-disable":
				hc.OomKillDisable = &v
			case "init":
				hc.Init = &v
			case "read-only":
				hc.ReadonlyRootfs = v
			case "privileged":
				hc.Privileged = v
			}
		}
	case "ulimit":
		var u *container.Ulimit
		if u, err = parseUlimit(value); err == nil {
			hc.Ulimits = append(hc.Ulimits, u)
		}
	case "device":
		var d container.DeviceMapping
		if d, err = parseDevice(value); err == nil {
			hc.Devices = append(hc.Devices, d)
		}
	case "sysctl":
		k, v, ok := strings.Cut(value, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q: want NAME=VALUE", key)
		}
		if hc.Sysctls == nil {
			hc.Sysctls = map[string]string{}
		}
		hc.Sysctls[k] = v
	case "tmpfs":
		p, opts, _ := strings.Cut(value, ":")
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("%q: %q is not an absolute path", key, p)
		}
		if hc.Tmpfs == nil {
			hc.Tmpfs = map[string]string{}
		}
		hc.Tmpfs[p] = opts
	case "log-driver":
		hc.LogConfig.Type = value
	case "log-opt":
		k, v, ok := strings.Cut(value, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q: want KEY=VALUE", key)
		}
		if hc.LogConfig.Config == nil {
			hc.LogConfig.Config = map[string]string{}
		}
		hc.LogConfig.Config[k] = v
	default:
		return fmt.Errorf("docker run option %q is not supported by the docker containerizer", key)
	}
	if err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	return nil
}

func parseBool(s string) (bool, error) {
	if s == "" {
		return true, nil // "--init" alone
	}
	return strconv.ParseBool(s)
}

// parseBytes reads docker's size syntax: a number with an optional unit
// b, k, m, g, t (binary multiples; "kb", "mb"... accepted too).
func parseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "b")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return int64(f * float64(mult)), nil
}

// parseUlimit reads NAME=SOFT[:HARD].
func parseUlimit(s string) (*container.Ulimit, error) {
	name, lim, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return nil, fmt.Errorf("want NAME=SOFT[:HARD], got %q", s)
	}
	softS, hardS, hasHard := strings.Cut(lim, ":")
	soft, err := strconv.ParseInt(softS, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("invalid soft limit in %q", s)
	}
	hard := soft
	if hasHard {
		if hard, err = strconv.ParseInt(hardS, 10, 64); err != nil {
			return nil, fmt.Errorf("invalid hard limit in %q", s)
		}
	}
	return &container.Ulimit{Name: name, Soft: soft, Hard: hard}, nil
}

// parseDevice reads HOST[:CONTAINER[:PERMISSIONS]].
func parseDevice(s string) (container.DeviceMapping, error) {
	parts := strings.Split(s, ":")
	if len(parts) > 3 || !strings.HasPrefix(parts[0], "/") {
		return container.DeviceMapping{}, fmt.Errorf("want /HOST[:CONTAINER[:rwm]], got %q", s)
	}
	d := container.DeviceMapping{PathOnHost: parts[0], PathInContainer: parts[0], CgroupPermissions: "rwm"}
	if len(parts) > 1 && parts[1] != "" {
		d.PathInContainer = parts[1]
	}
	if len(parts) > 2 {
		d.CgroupPermissions = parts[2]
	}
	return d, nil
}
