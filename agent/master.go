package agent

import (
	"context"
	"net/http"
	"sync"

	"google.golang.org/protobuf/proto"

	"mezzo/api/protocol"
	"mezzo/internal/agentwire"
)

// agentPath is the master's endpoint of the internal agent protocol.
const agentPath = agentwire.Path

// dial opens the subscription stream: it tries the last known leader and
// then every configured master, following 307 redirects, until one
// answers 200. It returns the response whose body is the event stream and
// the master's host:port.
func (a *Agent) dial(ctx context.Context, body []byte, leader string) (*http.Response, string, error) {
	return agentwire.Dial(ctx, a.client, a.cfg.Masters, leader, body)
}

// readStream runs on its own goroutine for one connection: it delivers
// the stream's events to the loop, then reports the end.
func (a *Agent) readStream(id uint64, resp *http.Response) {
	defer resp.Body.Close()
	err := agentwire.ReadEvents(resp.Body, 0, 0, func(ev *protocol.AgentEvent) bool {
		return a.post(func() { a.onMasterEvent(id, ev) })
	})
	if err != nil {
		a.post(func() { a.onStreamClosed(id, err) })
	}
}

// callSender posts the agent's calls (status updates, pongs, executor
// exits, framework messages) to the master of one connection, in order,
// from its own goroutine, so the loop never waits on the network.
type callSender struct {
	a       *Agent
	ctx     context.Context
	connID  uint64
	master  string
	agentID string

	mu    sync.Mutex
	queue []*protocol.AgentCall
	wake  chan struct{}
}

func newCallSender(a *Agent, ctx context.Context, connID uint64, master, agentID string) *callSender {
	return &callSender{a: a, ctx: ctx, connID: connID, master: master, agentID: agentID, wake: make(chan struct{}, 1)}
}

// send queues a call; it never blocks.
func (s *callSender) send(c *protocol.AgentCall) {
	s.mu.Lock()
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *callSender) run() {
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, c := range q {
			if s.ctx.Err() != nil {
				return
			}
			if err := s.post(c); err != nil {
				s.a.log.Warn("call to the master failed", "type", c.GetType().String(), "master", s.master, "err", err)
			}
		}
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *callSender) post(c *protocol.AgentCall) error {
	if c.AgentId == nil {
		c.AgentId = agentIDProto(s.agentID)
	}
	body, err := proto.Marshal(c)
	if err != nil {
		return err
	}
	res, err := agentwire.Call(s.ctx, s.a.client, s.master, body)
	if res.Status == http.StatusForbidden {
		// The master does not know this agent (any more): re-register.
		id, msg := s.connID, res.Message
		s.a.post(func() { s.a.onCallRefused(id, msg) })
	}
	return err
}
