package agent

import (
	"context"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/httpapi"
	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// usageTimeout bounds one container's measurement.
const usageTimeout = 5 * time.Second

// monitored is an executor whose container the monitor measures, copied
// off the loop.
type monitored struct {
	usage         httpapi.ContainerUsage
	cpus, memMB   float64
	hasCPU, hasMB bool
}

// Containers implements httpapi.Backend: the executors' live containers
// with their usage measured by the containerizer (off the loop), and
// cpus_limit / mem_limit_bytes set to what the executor and its tasks were
// allocated, as Mesos's agent reports them.
func (b backend) Containers() ([]httpapi.ContainerUsage, error) {
	var list []monitored
	if err := b.a.query(func() { list = b.a.monitoredContainers() }); err != nil {
		return nil, errStopping
	}
	ur, measures := b.a.cz.(containerizer.UsageReporter)
	out := make([]httpapi.ContainerUsage, 0, len(list))
	for _, m := range list {
		if !measures {
			out = append(out, m.usage)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), usageTimeout)
		st, err := ur.Usage(ctx, m.usage.ContainerID)
		cancel()
		if err == nil {
			if m.hasCPU {
				st.CpusLimit = proto.Float64(m.cpus)
			}
			if m.hasMB {
				st.MemLimitBytes = proto.Uint64(uint64(m.memMB * (1 << 20)))
			}
			m.usage.Statistics = st
		} else {
			b.a.log.Debug("measuring container", "container", m.usage.ContainerID, "err", err)
		}
		out = append(out, m.usage)
	}
	return out, nil
}

// monitoredContainers lists the executors whose container runs (loop).
func (a *Agent) monitoredContainers() []monitored {
	var out []monitored
	for e := range a.liveExecutors() {
		if e.launching || e.pid == 0 {
			continue
		}
		m := monitored{usage: httpapi.ContainerUsage{
			FrameworkID:  e.fw.id,
			ExecutorID:   e.id,
			ExecutorName: e.info.GetName(),
			Source:       e.info.GetSource(),
			ContainerID:  e.containerID,
			ExecutorPid:  e.pid,
		}}
		for _, r := range e.allocation() {
			if r.GetType() != mesos.Value_SCALAR {
				continue
			}
			switch r.GetName() {
			case "cpus":
				m.cpus += r.GetScalar().GetValue()
				m.hasCPU = true
			case "mem":
				m.memMB += r.GetScalar().GetValue()
				m.hasMB = true
			}
		}
		out = append(out, m)
	}
	return out
}
