package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/protocol"
)

// AgentPath is the master's endpoint of the agent protocol.
const AgentPath = "/internal/v1/agent"

// maxRedirects bounds the 307s one subscription attempt follows.
const maxRedirects = 5

// maxEventSize bounds one event record (a RUN_TASK_GROUP of a big group
// is the largest); larger records end the stream as malformed.
const maxEventSize = 16 << 20

// dial opens a subscription stream: the last known leader first, then
// every configured master, each time following 307 redirects (Location
// "//host:port/..."), until one answers 200. It returns the response whose
// body is the event stream and the master's host:port.
func (rt *simRuntime) dial(ctx context.Context, body []byte, leader string) (*http.Response, string, error) {
	candidates := make([]string, 0, len(rt.cfg.Masters)+1)
	if leader != "" {
		candidates = append(candidates, leader)
	}
	for _, m := range rt.cfg.Masters {
		if m != leader {
			candidates = append(candidates, m)
		}
	}
	var errs []error
	for _, m := range candidates {
		host := m
		for hop := 0; ; hop++ {
			resp, err := rt.post(ctx, host, body)
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

// post sends one protobuf AgentCall body to a master.
func (rt *simRuntime) post(ctx context.Context, host string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+AgentPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Accept", "application/x-protobuf")
	return rt.client.Do(req)
}

// readMessage reads (a bounded prefix of) an error body and closes it.
func readMessage(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return strings.TrimSpace(string(b))
}

// redirectHost extracts host:port from a Location such as
// "//10.0.0.2:5050/internal/v1/agent" or "http://10.0.0.2:5050/...";
// "" if it names none.
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

// readEvents decodes the stream's records and hands each event to deliver
// until the stream ends; it returns why it ended.
func readEvents(body io.Reader, deliver func(*protocol.AgentEvent)) error {
	r := newRecordReader(body, maxEventSize)
	for {
		rec, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return errors.New("the master closed the event stream")
			}
			return err
		}
		ev := &protocol.AgentEvent{}
		if err := proto.Unmarshal(rec, ev); err != nil {
			return fmt.Errorf("undecodable event from the master: %w", err)
		}
		deliver(ev)
	}
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
	resp, err := rt.post(rt.ctx, j.master, body)
	if err != nil {
		return err
	}
	msg := readMessage(resp)
	switch resp.StatusCode {
	case http.StatusAccepted, http.StatusOK:
		return nil
	case http.StatusForbidden:
		// The master does not know this agent (any more): re-register.
		a, attempt := j.a, j.attempt
		a.sh.post(func() { a.onCallRefused(attempt, msg) })
	}
	return fmt.Errorf("%s: %s", resp.Status, msg)
}
