package executor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"mezzo/api/codec"
	"mezzo/api/executorpb"
	"mezzo/api/recordio"
)

// Messages from the connection goroutines to the loop. Each carries the
// generation of the subscription attempt it belongs to, so that news from an
// abandoned connection is ignored.
type (
	msgFunc      func()
	msgConnected struct{ conn uint64 }
	msgRejected  struct {
		conn uint64
		code int
		body string
	}
	msgDisconnected struct {
		conn uint64
		err  error
	}
	msgEvent struct {
		conn uint64
		ev   *executorpb.Event
	}
	msgDecodeError struct {
		conn uint64
		err  error
	}
)

// maxErrorBody bounds how much of an error response we keep for messages.
const maxErrorBody = 4 << 10

func (c *Client) newRequest(ctx context.Context, call *executorpb.Call) (*http.Request, error) {
	body, err := codec.Marshal(c.opts.Codec, call)
	if err != nil {
		return nil, fmt.Errorf("encoding %s call: %w", call.GetType(), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.AgentURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", string(c.opts.Codec))
	req.Header.Set("Accept", string(c.opts.Codec))
	if c.cfg.AuthToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.AuthToken)
	}
	return req, nil
}

// stream performs one SUBSCRIBE and reads its event stream until it ends,
// reporting to the loop. It runs on its own goroutine.
func (c *Client) stream(ctx context.Context, conn uint64, call *executorpb.Call) {
	post := func(m any) {
		select {
		case c.inbox <- m:
		case <-ctx.Done():
		}
	}
	req, err := c.newRequest(ctx, call)
	if err != nil {
		post(msgDisconnected{conn, err})
		return
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		post(msgDisconnected{conn, err})
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		post(msgRejected{conn, resp.StatusCode, strings.TrimSpace(string(b))})
		return
	}
	mt := c.opts.Codec
	switch ct := codec.MediaType(resp.Header.Get("Content-Type")); ct {
	case codec.JSON, codec.Protobuf:
		mt = ct
	}
	post(msgConnected{conn})
	rd := recordio.NewReader(resp.Body, 0)
	for {
		rec, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				err = fmt.Errorf("end-of-file received from agent; the agent closed the event stream")
			}
			post(msgDisconnected{conn, err})
			return
		}
		ev := &executorpb.Event{}
		if err := codec.Unmarshal(mt, rec, ev); err != nil {
			post(msgDecodeError{conn, err})
			continue
		}
		post(msgEvent{conn, ev})
	}
}

// sendLoop posts queued non-SUBSCRIBE calls one at a time, in order. A failed
// UPDATE is not retried here: it stays unacknowledged and the next SUBSCRIBE
// carries it, which is how Mesos recovers lost updates too. When sendq is
// closed it posts what is left, then closes flushed.
func (c *Client) sendLoop(ctx context.Context, flushed chan<- struct{}) {
	work := make(chan *executorpb.Call)
	workerDone := make(chan struct{})
	go func(work <-chan *executorpb.Call) {
		defer close(workerDone)
		for call := range work {
			c.send(ctx, call)
		}
	}(work)
	defer func() {
		if work != nil {
			close(work)
		}
	}()
	in := c.sendq
	var queue []*executorpb.Call
	for {
		if in == nil && len(queue) == 0 {
			break
		}
		var out chan *executorpb.Call
		var next *executorpb.Call
		if len(queue) > 0 {
			out, next = work, queue[0]
		}
		select {
		case call, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			queue = append(queue, call)
		case out <- next:
			queue[0] = nil
			queue = queue[1:]
		case <-ctx.Done():
			return
		}
	}
	// Drained: wait for the last call in flight.
	close(work)
	work = nil
	select {
	case <-workerDone:
		close(flushed)
	case <-ctx.Done():
	}
}

func (c *Client) send(ctx context.Context, call *executorpb.Call) {
	req, err := c.newRequest(ctx, call)
	if err != nil {
		c.opts.Logf("executor: %v", err)
		return
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			c.opts.Logf("executor: %s call failed: %v", call.GetType(), err)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		c.opts.Logf("executor: %s call got %d: %s", call.GetType(), resp.StatusCode, strings.TrimSpace(string(b)))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
}
