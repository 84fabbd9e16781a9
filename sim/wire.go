package sim

import (
	"context"
	"io"
	"net/http"

	"google.golang.org/protobuf/proto"

	"mezzo/api/protocol"
	"mezzo/internal/agentwire"
)

// AgentPath is the master's endpoint of the agent protocol.
const AgentPath = agentwire.Path

// maxEventSize bounds one event record (a RUN_TASK_GROUP of a big group
// is the largest); larger records end the stream as malformed.
const maxEventSize = 16 << 20

// recordBuffer is the read buffer per stream: an agent's events are a few
// hundred bytes and arrive seldom, and 64 KiB per stream would be 3 GiB
// at 50,000 agents.
const recordBuffer = 512

// dial opens a subscription stream: the last known leader first, then
// every configured master, each time following 307 redirects, until one
// answers 200. It returns the response whose body is the event stream and
// the master's host:port.
func (rt *simRuntime) dial(ctx context.Context, index int, body []byte, leader string) (*http.Response, string, error) {
	return agentwire.Dial(ctx, rt.clientFor(index), rt.cfg.Masters, leader, body)
}

// readEvents decodes the stream's records and hands each event to deliver
// until the stream ends; it returns why it ended.
func readEvents(body io.Reader, deliver func(*protocol.AgentEvent)) error {
	return agentwire.ReadEvents(body, recordBuffer, maxEventSize, func(ev *protocol.AgentEvent) bool {
		deliver(ev)
		return true
	})
}

// postJob is one call to post for an agent on one connection attempt.
type postJob struct {
	a       *Agent
	attempt uint64
	master  string
	call    *protocol.AgentCall // agent_id set; never mutated once queued
}

// poster posts queued calls until the runtime stops. The call protos are
// never mutated after they are queued, so marshalling here is safe.
func (rt *simRuntime) poster() {
	defer rt.wg.Done()
	for {
		j, ok := rt.posts.pop()
		if !ok {
			select {
			case <-rt.stop:
				return
			case <-rt.posts.wake:
			}
			continue
		}
		if rt.ctx.Err() != nil {
			continue
		}
		if err := rt.postCall(j); err != nil {
			rt.counters.callErrors.Add(1)
			rt.log.Debug("call to the master failed", "agent", j.call.GetAgentId().GetValue(), "type", j.call.GetType().String(), "master", j.master, "err", err)
		}
	}
}

func (rt *simRuntime) postCall(j postJob) error {
	body, err := proto.Marshal(j.call)
	if err != nil {
		return err
	}
	res, err := agentwire.Call(rt.ctx, rt.clientFor(j.a.index), j.master, body)
	if res.Status == http.StatusForbidden {
		// The master does not know this agent (any more): re-register.
		a, attempt, msg := j.a, j.attempt, res.Message
		a.sh.post(func() { a.onCallRefused(attempt, msg) })
	}
	return err
}
