package master

import (
	"strings"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
)

// The counters below are Mesos's master message and per-framework metrics
// (src/master/metrics.cpp). mezzo has no libprocess messages: every
// scheduler and agent call arrives over HTTP, so master/messages_<kind>
// counts the calls that stand for Mesos's message of that kind.

// schedulerMessages maps a scheduler call to its master/messages_* key.
// ACCEPT is counted per operation (countSchedulerCall); SUBSCRIBE by
// countSubscribe.
var schedulerMessages = map[schedulerpb.Call_Type]string{
	schedulerpb.Call_TEARDOWN:                     "master/messages_unregister_framework",
	schedulerpb.Call_DECLINE:                      "master/messages_decline_offers",
	schedulerpb.Call_REVIVE:                       "master/messages_revive_offers",
	schedulerpb.Call_SUPPRESS:                     "master/messages_suppress_offers",
	schedulerpb.Call_KILL:                         "master/messages_kill_task",
	schedulerpb.Call_ACKNOWLEDGE:                  "master/messages_status_update_acknowledgement",
	schedulerpb.Call_ACKNOWLEDGE_OPERATION_STATUS: "master/messages_operation_status_update_acknowledgement",
	schedulerpb.Call_RECONCILE:                    "master/messages_reconcile_tasks",
	schedulerpb.Call_RECONCILE_OPERATIONS:         "master/messages_reconcile_operations",
	schedulerpb.Call_MESSAGE:                      "master/messages_framework_to_executor",
	schedulerpb.Call_REQUEST:                      "master/messages_resource_request",
}

// agentMessages maps an agent-protocol call to its master/messages_* key.
var agentMessages = map[protocol.AgentCall_Type]string{
	protocol.AgentCall_STATUS_UPDATE:     "master/messages_status_update",
	protocol.AgentCall_EXECUTOR_EXITED:   "master/messages_exited_executor",
	protocol.AgentCall_FRAMEWORK_MESSAGE: "master/messages_executor_to_framework",
	protocol.AgentCall_UNREGISTER:        "master/messages_unregister_slave",
	protocol.AgentCall_UPDATE_RESOURCES:  "master/messages_update_slave",
}

// MessageCounters lists every master/messages_* key the master counts, so
// /metrics/snapshot shows them at 0 before the first call of each kind, as
// Mesos registers its counters at start-up.
var MessageCounters = []string{
	"master/dropped_messages",
	"master/messages_register_framework", "master/messages_reregister_framework",
	"master/messages_unregister_framework", "master/messages_launch_tasks",
	"master/messages_decline_offers", "master/messages_revive_offers",
	"master/messages_suppress_offers", "master/messages_kill_task",
	"master/messages_status_update_acknowledgement",
	"master/messages_operation_status_update_acknowledgement",
	"master/messages_reconcile_tasks", "master/messages_reconcile_operations",
	"master/messages_framework_to_executor", "master/messages_resource_request",
	"master/messages_register_slave", "master/messages_reregister_slave",
	"master/messages_status_update", "master/messages_exited_executor",
	"master/messages_executor_to_framework", "master/messages_unregister_slave",
	"master/messages_update_slave",
	"master/slave_registrations", "master/slave_reregistrations",
}

// countSchedulerCall counts a non-SUBSCRIBE scheduler call from fw (nil:
// unknown framework, the call is dropped): its message counter and, for a
// known framework, calls, calls/<type>, offers/accepted or
// offers/declined (offers still outstanding) and operations/<type>. As
// Mesos, an ACCEPT counts messages_launch_tasks per LAUNCH or LAUNCH_GROUP
// with tasks and messages_decline_offers for one without.
func (s *state) countSchedulerCall(fw *framework, call *schedulerpb.Call) {
	if key, ok := schedulerMessages[call.GetType()]; ok {
		s.count(key)
	}
	if call.GetType() == schedulerpb.Call_ACCEPT {
		for _, op := range call.GetAccept().GetOperations() {
			switch op.GetType() {
			case mesos.Offer_Operation_LAUNCH, mesos.Offer_Operation_LAUNCH_GROUP:
				if len(launchTasks(op)) > 0 {
					s.count("master/messages_launch_tasks")
				} else {
					s.count("master/messages_decline_offers")
				}
			}
		}
	}
	if fw == nil {
		return
	}
	t := strings.ToLower(call.GetType().String())
	s.countFramework(fw, "calls")
	s.countFramework(fw, "calls/"+t)
	switch call.GetType() {
	case schedulerpb.Call_ACCEPT:
		s.countFramework(fw, "offers/accepted", s.ownOffers(fw, call.GetAccept().GetOfferIds()))
		for _, op := range call.GetAccept().GetOperations() {
			s.countFramework(fw, "operations")
			s.countFramework(fw, "operations/"+strings.ToLower(op.GetType().String()))
		}
	case schedulerpb.Call_DECLINE:
		s.countFramework(fw, "offers/declined", s.ownOffers(fw, call.GetDecline().GetOfferIds()))
	}
}

// ownOffers counts the listed offers that are fw's outstanding offers.
func (s *state) ownOffers(fw *framework, ids []*mesos.OfferID) int {
	n := 0
	seen := map[string]bool{}
	for _, id := range ids {
		if o := s.offers[id.GetValue()]; o != nil && o.fwID == fw.id && !seen[o.id] {
			seen[o.id] = true
			n++
		}
	}
	return n
}

// countSubscribe counts a framework SUBSCRIBE: a re-registration when it
// names a framework ID.
func (s *state) countSubscribe(info *mesos.FrameworkInfo) {
	if info.GetId().GetValue() != "" {
		s.count("master/messages_reregister_framework")
	} else {
		s.count("master/messages_register_framework")
	}
}

// countAgentSubscribe counts an agent SUBSCRIBE: a re-registration when the
// agent names its ID.
func (s *state) countAgentSubscribe(info *mesos.AgentInfo) {
	if info.GetId().GetValue() != "" {
		s.count("master/messages_reregister_slave")
	} else {
		s.count("master/messages_register_slave")
	}
}

// countAgentCall counts a non-SUBSCRIBE agent call (PONG has no Mesos
// message and is not counted).
func (s *state) countAgentCall(call *protocol.AgentCall) {
	if key, ok := agentMessages[call.GetType()]; ok {
		s.count(key)
	}
}

// countFramework adds n (default 1) to one of fw's own counters, named as
// Mesos names them under master/frameworks/<name>/<id>/.
func (s *state) countFramework(fw *framework, key string, n ...int) {
	d := 1
	if len(n) > 0 {
		d = n[0]
	}
	if d == 0 {
		return
	}
	if fw.metrics == nil {
		fw.metrics = map[string]float64{}
	}
	fw.metrics[key] += float64(d)
	s.dirty = true
}

// countEvent counts an event sent to fw (events, events/<type>,
// offers/sent per offer, offers/rescinded per RESCIND).
func (s *state) countEvent(fw *framework, ev *schedulerpb.Event) {
	s.countFramework(fw, "events")
	s.countFramework(fw, "events/"+strings.ToLower(ev.GetType().String()))
	switch ev.GetType() {
	case schedulerpb.Event_OFFERS:
		s.countFramework(fw, "offers/sent", len(ev.GetOffers().GetOffers()))
	case schedulerpb.Event_RESCIND:
		s.countFramework(fw, "offers/rescinded")
	}
}

// countTerminalStatus counts a task's terminal transition by state, source
// and reason (master/task_<state>/source_<source>/reason_<reason>, with
// Mesos's internal names: SOURCE_SLAVE, REASON_SLAVE_*) and in its
// framework's tasks/terminal/<state>.
func (s *state) countTerminalStatus(fwID string, st *mesos.TaskStatus, latest mesos.TaskState) {
	s.count(ReasonCounter(latest, st.GetSource(), st.GetReason()))
	if fw := s.frameworks[fwID]; fw != nil {
		s.countFramework(fw, "tasks/terminal/"+strings.ToLower(latest.String()))
	}
}

// ReasonCounter is the Mesos key of the per-source, per-reason counter of a
// task state.
func ReasonCounter(state mesos.TaskState, source mesos.TaskStatus_Source, reason mesos.TaskStatus_Reason) string {
	v0 := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "AGENT", "SLAVE")) }
	return "master/" + strings.ToLower(state.String()) + "/" + v0(source.String()) + "/" + v0(reason.String())
}

// countSchedulerCallAt counts a non-SUBSCRIBE scheduler call before the
// master's checks: one the master will refuse (unknown framework, not
// subscribed, another subscription's stream ID) is also a dropped message,
// and counts toward no framework.
func (s *state) countSchedulerCallAt(fw *framework, call *schedulerpb.Call, streamID string) {
	if fw == nil || !fw.connected || fw.stream == nil || streamID != fw.stream.id {
		s.count("master/dropped_messages")
		fw = nil
	}
	s.countSchedulerCall(fw, call)
}

// EventQueueMetrics are Mesos's master/event_queue_* gauges, read live from
// the loop's mailbox: event_queue_http_requests are the scheduler, agent
// and operator requests waiting for the loop; event_queue_dispatches the
// other events (allocator offers, registrar completions, stream ends);
// event_queue_messages is always 0, mezzo has no libprocess messages. Safe
// from any goroutine.
func (m *Master) EventQueueMetrics() map[string]float64 {
	total := m.mbox.length()
	calls := min(max(int(m.pendingCalls.Load()), 0), total)
	return map[string]float64{
		"master/event_queue_messages":      0,
		"master/event_queue_http_requests": float64(calls),
		"master/event_queue_dispatches":    float64(total - calls),
	}
}
