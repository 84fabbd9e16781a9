package oversub

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// LoadAverage is the system's 1, 5 and 15 minute load averages.
type LoadAverage struct{ One, Five, Fifteen float64 }

// ReadLoadAverage reads /proc/loadavg.
func ReadLoadAverage() (LoadAverage, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return LoadAverage{}, err
	}
	return ParseLoadAverage(string(b))
}

// ParseLoadAverage parses the first three fields of /proc/loadavg.
func ParseLoadAverage(s string) (LoadAverage, error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return LoadAverage{}, fmt.Errorf("load average %q: want three numbers", s)
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil || x < 0 {
			return LoadAverage{}, fmt.Errorf("load average %q: field %d is not a load", s, i+1)
		}
		v[i] = x
	}
	return LoadAverage{v[0], v[1], v[2]}, nil
}

// loadController is Mesos's load QoS controller: when the 5-minute load
// average exceeds its threshold, or the 15-minute one exceeds its, every
// revocable container is killed. The 1-minute load is ignored, as in Mesos:
// it swings too much to evict on. A load that cannot be read kills nothing.
type loadController struct {
	usage       UsageSource
	read        func() (LoadAverage, error)
	five, fifty *float64
}

func newLoad(cfg Config, usage UsageSource) (QoSController, error) {
	if usage == nil {
		return nil, fmt.Errorf("load controller: no usage source")
	}
	return &loadController{usage: usage, read: cfg.LoadAverage,
		five: cfg.LoadThreshold5Min, fifty: cfg.LoadThreshold15Min}, nil
}

func (l *loadController) Corrections(ctx context.Context, _ time.Time) ([]Correction, error) {
	s, err := l.usage.Usage(ctx)
	if err != nil {
		return nil, err
	}
	load, err := l.read()
	if err != nil {
		return nil, fmt.Errorf("load controller: reading the load average: %w", err)
	}
	var why string
	switch {
	case l.five != nil && load.Five > *l.five:
		why = fmt.Sprintf("load QoS controller: 5-minute load average %.2f exceeds %g", load.Five, *l.five)
	case l.fifty != nil && load.Fifteen > *l.fifty:
		why = fmt.Sprintf("load QoS controller: 15-minute load average %.2f exceeds %g", load.Fifteen, *l.fifty)
	default:
		return nil, nil
	}
	var out []Correction
	for _, c := range s.Containers {
		if c.Revocable() {
			out = append(out, kill(c, "load", why))
		}
	}
	return out, nil
}
