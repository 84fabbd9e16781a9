package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"mezzo/api/protocol"
	"mezzo/api/recordio"

	"google.golang.org/protobuf/proto"
)

// agentPath is the master's endpoint of the internal agent protocol.
const agentPath = "/internal/v1/agent"

// maxRedirects bounds how many 307s one subscription attempt follows.
const maxRedirects = 5

// dial opens the subscription stream: it tries the last known leader and
// then every configured master, following 307 redirects (Location
// "//host:port/..."), until one answers 200. It returns the response whose
// body is the event stream and the master's host:port.
func (a *Agent) dial(ctx context.Context, body []byte, leader string) (*http.Response, string, error) {
	var candidates []string
	seen := map[string]bool{}
	for _, m := range append([]string{leader}, a.cfg.Masters...) {
		if m != "" && !seen[m] {
			seen[m] = true
			candidates = append(candidates, m)
		}
	}
	var errs []error
	for _, m := range candidates {
		host := m
		for hop := 0; ; hop++ {
			resp, err := a.postMaster(ctx, host, body)
			if err != nil {
				errs = append(errs, err)
				break
			}
			if resp.StatusCode == http.StatusOK {
				return resp, host, nil
			}
			msg := readMessage(resp)
			if resp.StatusCode == http.StatusTemporaryRedirect && hop < maxRedirects {
				if next := redirectHost(resp.Header.Get("Location")); next != "" {
					host = next
					continue
				}
			}
			errs = append(errs, fmt.Errorf("master %s: %s: %s", host, resp.Status, msg))
			break
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
	}
	return nil, "", errors.Join(errs...)
}

// postMaster posts one protobuf AgentCall body to a master.
func (a *Agent) postMaster(ctx context.Context, host string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+agentPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Accept", "application/x-protobuf")
	return a.client.Do(req)
}

// readMessage reads (a bounded prefix of) an error body and closes it.
func readMessage(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return strings.TrimSpace(string(b))
}

// redirectHost extracts host:port from a Location such as
// "//10.0.0.2:5050/internal/v1/agent" or "http://10.0.0.2:5050/...".
func redirectHost(loc string) string {
	if loc == "" {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil {
		return ""
	}
	return u.Host
}

// readStream runs on its own goroutine for one connection: it delivers
// the stream's events to the loop, then reports the end.
func (a *Agent) readStream(id uint64, resp *http.Response) {
	defer resp.Body.Close()
	r := recordio.NewReader(resp.Body, 0)
	for {
		rec, err := r.Next()
		if err != nil {
			if err == io.EOF {
				err = errors.New("the master closed the event stream")
			}
			a.post(func() { a.onStreamClosed(id, err) })
			return
		}
		ev := &protocol.AgentEvent{}
		if err := proto.Unmarshal(rec, ev); err != nil {
			err = fmt.Errorf("undecodable event from the master: %w", err)
			a.post(func() { a.onStreamClosed(id, err) })
			return
		}
		if !a.post(func() { a.onMasterEvent(id, ev) }) {
			return
		}
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
	resp, err := s.a.postMaster(s.ctx, s.master, body)
	if err != nil {
		return err
	}
	msg := readMessage(resp)
	switch resp.StatusCode {
	case http.StatusAccepted, http.StatusOK:
		return nil
	case http.StatusForbidden:
		// The master does not know this agent (any more): re-register.
		id := s.connID
		s.a.post(func() { s.a.onCallRefused(id, msg) })
	}
	return fmt.Errorf("%s: %s", resp.Status, msg)
}
