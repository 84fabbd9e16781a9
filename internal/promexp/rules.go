package promexp

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

// conv says how a rule converts a value.
type conv int

const (
	asIs conv = iota
	// resource: the value is in Mesos's unit for the "resource" label
	// (megabytes for mem and disk); the sample gets a "unit" label and
	// the value the base unit (bytes).
	resource
)

// A rule maps the Mesos keys its pattern matches to one family. In a
// pattern, {label} matches one path segment (possibly empty), {label...}
// one or more (role names contain '/'), {label:a|b} one of the listed
// words; each becomes a label, in order, unless the name template uses it
// ("mezzo_master_agents_{state}"). skip drops the key: an aggregate whose
// parts are exposed (sum them in PromQL), or a timer's percentile key that
// the summary replaces.
type rule struct {
	pattern string
	name    string
	typ     prometheus.ValueType
	help    string
	consts  []string // constant label pairs added after the matched ones
	conv    conv
	skip    bool

	re     *regexp.Regexp
	prefix string // the pattern's text before its first placeholder
	labels []string
}

const terminal = "finished|failed|killed|lost|error|dropped|gone|gone_by_operator"

// rules is the translation table, first match wins. docs/metrics.md lists
// the same families.
var rules = compile([]rule{
	// The master's own state.
	{pattern: "master/uptime_secs", name: "mezzo_master_uptime_seconds", typ: gauge, help: "Seconds since this master started."},
	{pattern: "master/elected", name: "mezzo_master_elected", typ: gauge, help: "1 if this master leads."},
	{pattern: "master/elections", name: "mezzo_master_elections_total", typ: counter, help: "Times this master was elected leader."},
	{pattern: "master/slaves_{state:active|inactive|connected|disconnected|unreachable}", name: "mezzo_master_agents_{state}", typ: gauge, help: "Agents by state (active/inactive and connected/disconnected each partition the registered agents; unreachable ones are apart)."},
	{pattern: "master/frameworks_{state:active|inactive|connected|disconnected}", name: "mezzo_master_frameworks_{state}", typ: gauge, help: "Registered frameworks by state (active/inactive and connected/disconnected each partition them)."},
	{pattern: "master/outstanding_offers", name: "mezzo_master_outstanding_offers", typ: gauge, help: "Offers sent and not yet accepted, declined or rescinded."},
	{pattern: "master/tasks_{state:staging|starting|running|killing|unreachable}", name: "mezzo_master_tasks", typ: gauge, help: "Tasks in a non-terminal state."},
	{pattern: "master/tasks_short_overrun", name: "mezzo_master_tasks_short_overrun_total", typ: counter, help: "Short tasks that outlived their declaration (--long_task_fraction)."},
	{pattern: "master/tasks_{state:" + terminal + "}", name: "mezzo_master_tasks_terminal_total", typ: counter, help: "Task transitions to a terminal state."},
	{pattern: "master/task_{state}/source_{source}/reason_{reason}", name: "mezzo_master_task_terminal_reasons_total", typ: counter, help: "Terminal task transitions by state, source and reason."},
	{pattern: "master/{resource:cpus|gpus|mem|disk}_revocable_total", name: "mezzo_master_resource_capacity", typ: gauge, conv: resource, consts: []string{"revocable", "true"}, help: "Resources of the registered agents, in base units."},
	{pattern: "master/{resource:cpus|gpus|mem|disk}_revocable_used", name: "mezzo_master_resource_used", typ: gauge, conv: resource, consts: []string{"revocable", "true"}, help: "Resources used by tasks and executors, in base units."},
	{pattern: "master/{resource:cpus|gpus|mem|disk}_revocable_percent", name: "mezzo_master_resource_used_ratio", typ: gauge, consts: []string{"revocable", "true"}, help: "Used over capacity (0 to 1)."},
	{pattern: "master/{resource:cpus|gpus|mem|disk}_total", name: "mezzo_master_resource_capacity", typ: gauge, conv: resource, consts: []string{"revocable", "false"}, help: "Resources of the registered agents, in base units."},
	{pattern: "master/{resource:cpus|gpus|mem|disk}_used", name: "mezzo_master_resource_used", typ: gauge, conv: resource, consts: []string{"revocable", "false"}, help: "Resources used by tasks and executors, in base units."},
	{pattern: "master/{resource:cpus|gpus|mem|disk}_percent", name: "mezzo_master_resource_used_ratio", typ: gauge, consts: []string{"revocable", "false"}, help: "Used over capacity (0 to 1)."},
	{pattern: "master/messages_{kind}", name: "mezzo_master_messages_total", typ: counter, help: "Scheduler and agent calls by the Mesos message they stand for."},
	{pattern: "master/dropped_messages", name: "mezzo_master_dropped_messages_total", typ: counter, help: "Calls refused because this master does not lead or the sender is unknown."},
	{pattern: "master/http_authentication_failures", name: "mezzo_master_http_authentication_failures_total", typ: counter, help: "Requests refused 401: no credentials where a realm requires them, or wrong ones."},
	{pattern: "master/authorization_denials", name: "mezzo_master_authorization_denials_total", typ: counter, help: "Writes, launches and agent calls the authorizer (--acls) refused."},
	{pattern: "master/{result:valid|invalid}_status_updates", name: "mezzo_master_status_updates_total", typ: counter, help: "Status updates from agents, valid or not."},
	{pattern: "master/{result:valid|invalid}_framework_to_executor_messages", name: "mezzo_master_framework_to_executor_messages_total", typ: counter, help: "Scheduler messages for executors, forwarded (valid) or dropped."},
	{pattern: "master/{result:valid|invalid}_executor_to_framework_messages", name: "mezzo_master_executor_to_framework_messages_total", typ: counter, help: "Executor messages for schedulers, forwarded (valid) or dropped."},
	{pattern: "master/slave_registrations", name: "mezzo_master_agent_registrations_total", typ: counter, help: "Agents admitted."},
	{pattern: "master/slave_reregistrations", name: "mezzo_master_agent_reregistrations_total", typ: counter, help: "Agents readmitted."},
	{pattern: "master/slave_removals", name: "mezzo_master_agent_removals_total", typ: counter, help: "Agents removed, for any reason."},
	{pattern: "master/slave_removals/reason_{reason}", name: "mezzo_master_agent_removals_by_reason_total", typ: counter, help: "Agents removed, by reason."},
	{pattern: "master/recovery_slave_removals", name: "mezzo_master_recovery_agent_removals_total", typ: counter, help: "Agents removed because they did not reregister after a failover."},
	{pattern: "master/slave_unreachable_completed", name: "mezzo_master_agent_unreachable_completed_total", typ: counter, help: "Agents marked unreachable."},
	{pattern: "master/operations/total", skip: true},
	{pattern: "master/operations/{type}/total", skip: true},
	{pattern: "master/operations/{type}/{state}", name: "mezzo_master_operations_total", typ: counter, help: "Offer operation outcomes by type and state."},
	{pattern: "master/operations/{state}", skip: true},
	{pattern: "master/operator_event_stream_subscribers", name: "mezzo_master_operator_event_stream_subscribers", typ: gauge, help: "Open operator API SUBSCRIBE streams."},
	{pattern: "master/event_queue_{queue:messages|http_requests|dispatches}", name: "mezzo_master_event_queue_length", typ: gauge, help: "Events waiting for the master's loop."},

	// Per framework; the aggregates are the sums of the per-type series.
	{pattern: "master/frameworks/{framework_name}/{framework_id}/{kind:calls|events|operations}", skip: true},
	{pattern: "master/frameworks/{framework_name}/{framework_id}/calls/{type}", name: "mezzo_master_framework_calls_total", typ: counter, help: "Scheduler calls from a framework by type (SUBSCRIBE is not counted)."},
	{pattern: "master/frameworks/{framework_name}/{framework_id}/events/{type}", name: "mezzo_master_framework_events_total", typ: counter, help: "Events sent to a framework by type."},
	{pattern: "master/frameworks/{framework_name}/{framework_id}/operations/{type}", name: "mezzo_master_framework_operations_total", typ: counter, help: "Offer operations a framework asked for, by type."},
	{pattern: "master/frameworks/{framework_name}/{framework_id}/offers/{action}", name: "mezzo_master_framework_offers_total", typ: counter, help: "A framework's offers: sent, accepted, declined, rescinded."},
	{pattern: "master/frameworks/{framework_name}/{framework_id}/tasks/terminal/task_{state}", name: "mezzo_master_framework_tasks_terminal_total", typ: counter, help: "A framework's task transitions to a terminal state."},
	{pattern: "master/frameworks/{framework_name}/{framework_id}/tasks/active/task_{state}", name: "mezzo_master_framework_tasks_active", typ: gauge, help: "A framework's tasks in a non-terminal state."},
	{pattern: "master/frameworks/{framework_name}/{framework_id}/subscribed", name: "mezzo_master_framework_subscribed", typ: gauge, help: "1 while the framework has a live subscription."},

	// The allocator.
	{pattern: "allocator/mesos/allocation_runs", name: "mezzo_allocator_allocation_runs_total", typ: counter, help: "Allocation runs."},
	{pattern: "allocator/mesos/allocation_run_ms", skip: true},
	{pattern: "allocator/mesos/allocation_run_ms/{stat}", skip: true},
	{pattern: "allocator/mesos/event_queue_dispatches", name: "mezzo_allocator_event_queue_dispatches", typ: gauge, help: "Notifications waiting for the allocator."},
	{pattern: "allocator/mesos/allocation_updates_rejected", name: "mezzo_allocator_allocation_updates_rejected_total", typ: counter, help: "Allocation changes the allocator refused as inconsistent."},
	{pattern: "allocator/mesos/resources/{resource}/total", name: "mezzo_allocator_resource_capacity", typ: gauge, conv: resource, help: "Resources the allocator knows, in base units."},
	{pattern: "allocator/mesos/resources/{resource}/offered_or_allocated", name: "mezzo_allocator_resource_offered_or_allocated", typ: gauge, conv: resource, help: "Resources offered or allocated, in base units."},
	{pattern: "allocator/mesos/roles/{role...}/shares/dominant", name: "mezzo_allocator_role_dominant_share", typ: gauge, help: "A role's dominant resource share (0 to 1)."},
	{pattern: "allocator/mesos/offer_filters/roles/{role...}/active", name: "mezzo_allocator_role_offer_filters_active", typ: gauge, help: "Active offer filters of a role's frameworks."},
	{pattern: "allocator/mesos/quota/roles/{role...}/resources/{resource}/{kind:guarantee|limit|offered_or_allocated}", name: "mezzo_allocator_role_quota_{kind}", typ: gauge, conv: resource, help: "A role's quota and what counts against it, in base units."},

	// The registrar.
	{pattern: "registrar/queued_operations", name: "mezzo_registrar_queued_operations", typ: gauge, help: "Registry operations waiting to be written."},
	{pattern: "registrar/registry_size_bytes", name: "mezzo_registrar_registry_size_bytes", typ: gauge, help: "Size of the encoded registry."},
	{pattern: "registrar/log/recovered", name: "mezzo_registrar_log_recovered", typ: gauge, help: "1 once the registrar has recovered the registry from the log."},
	{pattern: "registrar/state_{op:store|fetch}_ms", skip: true},
	{pattern: "registrar/state_{op:store|fetch}_ms/{stat}", skip: true},

	// The host.
	{pattern: "system/cpus_total", name: "mezzo_system_cpus", typ: gauge, help: "CPUs of the host."},
	{pattern: "system/load_{window:1|5|15}min", name: "mezzo_system_load{window}", typ: gauge, help: "The host's load average."},
	{pattern: "system/mem_total_bytes", name: "mezzo_system_memory_size_bytes", typ: gauge, help: "Memory of the host."},
	{pattern: "system/mem_free_bytes", name: "mezzo_system_memory_free_bytes", typ: gauge, help: "Free memory of the host (MemFree)."},

	// The agent.
	{pattern: "slave/uptime_secs", name: "mezzo_agent_uptime_seconds", typ: gauge, help: "Seconds since this agent started."},
	{pattern: "slave/registered", name: "mezzo_agent_registered", typ: gauge, help: "1 while the agent is registered with a master."},
	{pattern: "slave/http_authentication_failures", name: "mezzo_agent_http_authentication_failures_total", typ: counter, help: "Requests refused 401: no or wrong credentials, or a bad executor token."},
	{pattern: "slave/recovery_errors", name: "mezzo_agent_recovery_errors_total", typ: counter, help: "Errors while recovering checkpointed state."},
	{pattern: "slave/recovery_time_secs", name: "mezzo_agent_recovery_duration_seconds", typ: gauge, help: "How long the agent's recovery took."},
	{pattern: "slave/frameworks_active", name: "mezzo_agent_frameworks_active", typ: gauge, help: "Frameworks with executors on this agent."},
	{pattern: "slave/tasks_{state:staging|starting|running|killing}", name: "mezzo_agent_tasks", typ: gauge, help: "Tasks in a non-terminal state."},
	{pattern: "slave/tasks_{state:" + terminal + "}", name: "mezzo_agent_tasks_terminal_total", typ: counter, help: "Task transitions to a terminal state."},
	{pattern: "slave/executors_{state:registering|running|terminating}", name: "mezzo_agent_executors", typ: gauge, help: "Executors by state."},
	{pattern: "slave/executors_terminated", name: "mezzo_agent_executors_terminated_total", typ: counter, help: "Executors that terminated."},
	{pattern: "slave/executors_preempted", name: "mezzo_agent_executors_preempted_total", typ: counter, help: "Revocable containers killed: QoS corrections and evictions for lent reservations."},
	{pattern: "slave/qos_corrections", name: "mezzo_agent_qos_corrections_total", typ: counter, help: "Revocable containers killed by QoS corrections (mezzo's own)."},
	{pattern: "slave/qos_corrections_{result:ignored|refused}", name: "mezzo_agent_qos_corrections_not_applied_total", typ: counter, help: "QoS corrections not carried out: the container was ending or gone (ignored), or held no revocable resources (refused) (mezzo's own)."},
	{pattern: "slave/qos_controller_errors", name: "mezzo_agent_qos_controller_errors_total", typ: counter, help: "QoS controller rounds that failed (mezzo's own)."},
	{pattern: "slave/resource_estimator_errors", name: "mezzo_agent_resource_estimator_errors_total", typ: counter, help: "Resource estimator rounds that failed (mezzo's own)."},
	{pattern: "slave/lent_evictions", name: "mezzo_agent_lent_evictions_total", typ: counter, help: "Tenants evicted for the owner of a lent reservation (mezzo's own)."},
	{pattern: "slave/oversubscribed_updates_sent", name: "mezzo_agent_oversubscribed_updates_sent_total", typ: counter, help: "UPDATE_RESOURCES calls sent with the oversubscribed total (mezzo's own)."},
	{pattern: "slave/{result:valid|invalid}_status_updates", name: "mezzo_agent_status_updates_total", typ: counter, help: "Status updates from executors, valid or not."},
	{pattern: "slave/{result:valid|invalid}_framework_messages", name: "mezzo_agent_framework_messages_total", typ: counter, help: "Scheduler messages delivered to an executor (valid) or dropped."},
	{pattern: "slave/container_launch_errors", name: "mezzo_agent_container_launch_errors_total", typ: counter, help: "Containers that failed to launch."},
	{pattern: "slave/checkpoint_resources_refused", name: "mezzo_agent_checkpoint_resources_refused_total", typ: counter, help: "Checkpointed resources the agent refused (mezzo's own)."},
	{pattern: "slave/volume_errors", name: "mezzo_agent_volume_errors_total", typ: counter, help: "Persistent volume operations that failed (mezzo's own)."},
	{pattern: "slave/volumes_kept_in_use", name: "mezzo_agent_volumes_kept_in_use_total", typ: counter, help: "Volume directories kept because a container still used them (mezzo's own)."},
	{pattern: "slave/{resource:cpus|gpus|mem|disk}_revocable_total", name: "mezzo_agent_resource_capacity", typ: gauge, conv: resource, consts: []string{"revocable", "true"}, help: "The agent's resources, in base units."},
	{pattern: "slave/{resource:cpus|gpus|mem|disk}_revocable_used", name: "mezzo_agent_resource_used", typ: gauge, conv: resource, consts: []string{"revocable", "true"}, help: "Resources used by tasks and executors, in base units."},
	{pattern: "slave/{resource:cpus|gpus|mem|disk}_revocable_percent", name: "mezzo_agent_resource_used_ratio", typ: gauge, consts: []string{"revocable", "true"}, help: "Used over capacity (0 to 1)."},
	{pattern: "slave/{resource:cpus|gpus|mem|disk}_total", name: "mezzo_agent_resource_capacity", typ: gauge, conv: resource, consts: []string{"revocable", "false"}, help: "The agent's resources, in base units."},
	{pattern: "slave/{resource:cpus|gpus|mem|disk}_used", name: "mezzo_agent_resource_used", typ: gauge, conv: resource, consts: []string{"revocable", "false"}, help: "Resources used by tasks and executors, in base units."},
	{pattern: "slave/{resource:cpus|gpus|mem|disk}_percent", name: "mezzo_agent_resource_used_ratio", typ: gauge, consts: []string{"revocable", "false"}, help: "Used over capacity (0 to 1)."},
	{pattern: "containerizer/mesos/container_destroy_errors", name: "mezzo_containerizer_container_destroy_errors_total", typ: counter, help: "Containers that could not be destroyed."},
	{pattern: "containerizer/fetcher/task_fetches_{result:succeeded|failed}", name: "mezzo_containerizer_fetcher_task_fetches_total", typ: counter, help: "Fetcher runs for tasks by result."},
})

// summary names a timer's Prometheus summary.
type summary struct{ name, help string }

// summaries maps a Mesos timer name to its summary.
var summaries = map[string]summary{
	"allocator/mesos/allocation_run_ms": {"mezzo_allocator_allocation_run_duration_seconds", "Duration of allocation runs (quantiles over the last 1000)."},
	"registrar/state_store_ms":          {"mezzo_registrar_state_store_duration_seconds", "Duration of registry writes (quantiles over the last 1000)."},
	"registrar/state_fetch_ms":          {"mezzo_registrar_state_fetch_duration_seconds", "Duration of the registry's recovery from the log."},
}

var placeholder = regexp.MustCompile(`\{([a-z_]+)(\.\.\.|:[^}]*)?\}`)

// compile builds each rule's regular expression and label list.
func compile(rs []rule) []rule {
	for i := range rs {
		r := &rs[i]
		var re strings.Builder
		re.WriteString("^")
		last := 0
		for _, m := range placeholder.FindAllStringSubmatchIndex(r.pattern, -1) {
			re.WriteString(regexp.QuoteMeta(r.pattern[last:m[0]]))
			label := r.pattern[m[2]:m[3]]
			switch mod := ""; {
			case m[4] >= 0 && r.pattern[m[4]:m[5]] == "...":
				re.WriteString("(.+)")
			case m[4] >= 0:
				mod = r.pattern[m[4]+1 : m[5]]
				re.WriteString("(" + mod + ")")
			default:
				re.WriteString("([^/]*)")
			}
			r.labels = append(r.labels, label)
			last = m[1]
		}
		re.WriteString(regexp.QuoteMeta(r.pattern[last:]) + "$")
		r.prefix, _, _ = strings.Cut(r.pattern, "{")
		r.re = regexp.MustCompile(re.String())
	}
	return rs
}

// Translate maps Mesos keys to samples, sorted by key; unmapped lists the
// keys no rule knows.
func Translate(values map[string]float64) (samples []Sample, unmapped []string) {
	keys := sortedKeys(values)
	for _, k := range keys {
		s, ok, known := translate(k, values[k])
		if !known {
			unmapped = append(unmapped, k)
		}
		if ok {
			samples = append(samples, s)
		}
	}
	return samples, unmapped
}

// translate applies the first matching rule: ok if it yields a sample,
// known if any rule matched.
func translate(key string, v float64) (s Sample, ok, known bool) {
	for i := range rules {
		r := &rules[i]
		// The prefix test spares most regular expressions: a scrape
		// translates every key of every framework.
		if !strings.HasPrefix(key, r.prefix) {
			continue
		}
		m := r.re.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		if r.skip {
			return Sample{}, false, true
		}
		name := r.name
		var labels []string
		for j, l := range r.labels {
			val := m[j+1]
			if l == "framework_name" {
				if dec, err := url.PathUnescape(val); err == nil {
					val = dec
				}
			}
			if strings.Contains(name, "{"+l+"}") {
				name = strings.ReplaceAll(name, "{"+l+"}", val)
				continue
			}
			labels = append(labels, l, val)
			if l == "resource" && r.conv == resource {
				unit, scale := Unit(val)
				labels = append(labels, "unit", unit)
				v *= scale
			}
		}
		labels = append(labels, r.consts...)
		return Sample{Name: name, Help: r.help, Type: r.typ, Labels: labels, Value: v}, true, true
	}
	return Sample{}, false, false
}

// Unit is the base unit of a Mesos scalar resource and the factor from
// Mesos's unit to it: mem and disk are megabytes in Mesos, bytes here.
func Unit(resource string) (unit string, scale float64) {
	switch resource {
	case "mem", "disk":
		return "bytes", 1 << 20
	case "cpus":
		return "cores", 1
	case "gpus":
		return "devices", 1
	}
	return "count", 1
}

// Families lists the family names the rules and summaries can produce,
// sorted (name templates as written), for the documentation test.
func Families() []string {
	set := map[string]bool{}
	for _, r := range rules {
		if !r.skip {
			set[r.name] = true
		}
	}
	for _, s := range summaries {
		set[s.name] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
