package endpoints

import (
	"strings"
	"sync"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/master"
)

// FrameworkMetricPrefix is where a framework's metrics live, as Mesos 1.x
// names them: master/frameworks/<name, percent-encoded>/<id>/.
func FrameworkMetricPrefix(info *mesos.FrameworkInfo) string {
	return "master/frameworks/" + encodeName(info.GetName()) + "/" + info.GetId().GetValue() + "/"
}

// encodeName percent-encodes a framework name as libprocess's
// http::encode does, so that '/' and ' ' cannot break the key apart:
// reserved and unsafe characters, control and non-ASCII bytes become %XX.
func encodeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || strings.IndexByte("$&+,/:;=?@ \"<>#%{}|\\^~[]`", c) >= 0 {
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// frameworkCounterKeys are the counters Mesos creates for every framework
// at registration (so they read 0 before the first occurrence): calls and
// calls/<type>, events and events/<type>, offers/*, operations and
// operations/<type>, tasks/terminal/<state>.
var frameworkCounterKeys = sync.OnceValue(func() []string {
	keys := []string{"calls", "events", "operations", "offers/sent", "offers/accepted", "offers/declined", "offers/rescinded"}
	for v, name := range schedulerpb.Call_Type_name {
		if v != int32(schedulerpb.Call_UNKNOWN) {
			keys = append(keys, "calls/"+strings.ToLower(name))
		}
	}
	for v, name := range schedulerpb.Event_Type_name {
		if v != int32(schedulerpb.Event_UNKNOWN) {
			keys = append(keys, "events/"+strings.ToLower(name))
		}
	}
	for v, name := range mesos.Offer_Operation_Type_name {
		if v != int32(mesos.Offer_Operation_UNKNOWN) {
			keys = append(keys, "operations/"+strings.ToLower(name))
		}
	}
	for v, name := range mesos.TaskState_name {
		if mesos.IsTerminal(mesos.TaskState(v)) {
			keys = append(keys, "tasks/terminal/"+strings.ToLower(name))
		}
	}
	return keys
})

// frameworkMetrics renders every registered framework's metrics: its
// counters (zero until they move), subscribed (1 while it has a live
// subscription) and tasks/active/<state>, the gauges of its non-terminal
// tasks (unreachable ones included). Completed frameworks have none, as in
// Mesos, whose per-framework metrics go with the framework.
func frameworkMetrics(s *master.Snapshot) map[string]float64 {
	m := map[string]float64{}
	for _, f := range s.Frameworks {
		prefix := FrameworkMetricPrefix(f.Info)
		for _, k := range frameworkCounterKeys() {
			m[prefix+k] = f.Metrics[k]
		}
		m[prefix+"subscribed"] = b2f(f.Connected)
		active := map[mesos.TaskState]float64{}
		for _, t := range f.Tasks {
			active[t.GetState()]++
		}
		active[mesos.TaskState_TASK_UNREACHABLE] += float64(len(f.UnreachableTasks))
		for v, name := range mesos.TaskState_name {
			if st := mesos.TaskState(v); !mesos.IsTerminal(st) {
				m[prefix+"tasks/active/"+strings.ToLower(name)] = active[st]
			}
		}
	}
	return m
}
