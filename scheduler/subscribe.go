package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/recordio"
	"mezzo/api/schedulerpb"
)

// Subscribe subscribes the framework and returns its event stream. It
// returns once a master has accepted the subscription (HTTP 200); the first
// event on the channel is SUBSCRIBED. It fails if every master refused or
// was unreachable Config.InitialRounds times, or at once if a master
// rejected the subscription outright (4xx: e.g. an invalid FrameworkInfo).
//
// The channel is owned by one goroutine that also re-subscribes after a
// disconnection; it is closed when ctx ends or the subscription ends for
// good (see Err). Subscribe may be called once per Client.
func (c *Client) Subscribe(ctx context.Context) (<-chan *schedulerpb.Event, error) {
	if c.cfgErr != nil {
		return nil, c.cfgErr
	}
	c.mu.Lock()
	again := c.started
	c.started = true
	c.mu.Unlock()
	if again {
		return nil, errors.New("scheduler: Subscribe called twice")
	}
	var st *stream
	var err error
	for round := 0; round < c.cfg.InitialRounds; round++ {
		if round > 0 {
			if err := c.sleep(ctx, c.backoff(round-1)); err != nil {
				return nil, err
			}
		}
		st, err = c.connect(ctx)
		if err == nil || isFatal(err) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	out := make(chan *schedulerpb.Event)
	go c.run(ctx, st, out)
	return out, nil
}

// run owns the event channel: it pumps the current stream, and when it ends
// re-subscribes with backoff, until the subscription ends for good.
func (c *Client) run(ctx context.Context, st *stream, out chan<- *schedulerpb.Event) {
	defer close(out)
	for {
		err := c.pump(ctx, st, out)
		st.close()
		if ctx.Err() != nil {
			c.finish(ctx.Err())
			return
		}
		c.mu.Lock()
		c.subscribed = false
		c.mu.Unlock()
		if c.isTornDown() {
			c.finish(ErrTornDown)
			return
		}
		var fe *FrameworkError
		if errors.As(err, &fe) {
			c.finish(err)
			return
		}
		c.cfg.Logf("scheduler: subscription to %s lost: %v; re-subscribing", c.Leader(), err)
		st, err = c.reconnect(ctx)
		if err != nil {
			c.finish(err)
			return
		}
	}
}

func (c *Client) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	c.subscribed = false
}

// reconnect retries the subscription with exponential backoff until it
// succeeds, ctx ends, or a master refuses it outright.
func (c *Client) reconnect(ctx context.Context) (*stream, error) {
	for attempt := 0; ; attempt++ {
		if err := c.sleep(ctx, c.backoff(attempt)); err != nil {
			return nil, err
		}
		if c.isTornDown() {
			return nil, ErrTornDown
		}
		st, err := c.connect(ctx)
		if err == nil {
			return st, nil
		}
		if isFatal(err) || ctx.Err() != nil {
			return nil, err
		}
		c.cfg.Logf("scheduler: re-subscription failed: %v", err)
	}
}

// backoff returns the delay before retry number attempt (0-based): the
// minimum doubled per attempt up to the maximum, with jitter in [d/2, d]
// so that many schedulers of a failed-over master do not stampede.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.MinBackoff
	for i := 0; i < attempt && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// sleep waits d on the injected clock, or until ctx ends.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	t := c.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// connect makes one pass over the masters, starting with the last known
// leader, and returns the first accepted subscription. A refusal (4xx) ends
// the pass at once; unreachable masters and 503s move on to the next.
func (c *Client) connect(ctx context.Context) (*stream, error) {
	candidates := make([]string, 0, len(c.cfg.Masters)+1)
	if l := c.Leader(); l != "" {
		candidates = append(candidates, l)
	}
	for _, m := range c.cfg.Masters {
		if len(candidates) == 0 || m != candidates[0] {
			candidates = append(candidates, m)
		}
	}
	var errs []error
	for _, base := range candidates {
		st, err := c.subscribeAt(ctx, base)
		if err == nil {
			return st, nil
		}
		c.cfg.Logf("scheduler: subscribe at %s: %v", base, err)
		if isFatal(err) || ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w: %w", ErrNoMaster, errors.Join(errs...))
}

// subscribeAt sends SUBSCRIBE to one master, following its redirects.
func (c *Client) subscribeAt(ctx context.Context, base string) (*stream, error) {
	call := c.subscribeCall()
	body, err := codec.Marshal(c.cfg.Codec, call)
	if err != nil {
		return nil, err
	}
	url := base + Path
	for redirects := 0; ; redirects++ {
		sctx, cancel := context.WithCancel(ctx)
		req, err := http.NewRequestWithContext(sctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			cancel()
			return nil, err
		}
		req.Header.Set("Content-Type", string(c.cfg.Codec))
		req.Header.Set("Accept", string(c.cfg.Codec))
		resp, err := c.hc.Do(req)
		if err != nil {
			cancel()
			return nil, err
		}
		switch resp.StatusCode {
		case http.StatusOK:
			st, err := c.startStream(resp, cancel)
			if err != nil {
				return nil, err
			}
			c.mu.Lock()
			c.leader = baseURL(resp.Request.URL.String())
			c.streamID = resp.Header.Get("Mesos-Stream-Id")
			c.subscribed = true
			c.mu.Unlock()
			return st, nil
		case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			loc := resp.Header.Get("Location")
			resp.Body.Close()
			cancel()
			if loc == "" {
				return nil, &Error{Call: "SUBSCRIBE", Status: resp.StatusCode, Body: "redirect without Location"}
			}
			if redirects >= c.cfg.MaxRedirects {
				return nil, fmt.Errorf("scheduler: SUBSCRIBE: too many redirects (last to %s)", loc)
			}
			next, err := resp.Request.URL.Parse(loc)
			if err != nil {
				return nil, fmt.Errorf("scheduler: SUBSCRIBE: bad redirect Location %q: %w", loc, err)
			}
			// A Location without a path ("//host:port", as /redirect
			// answers) means the same endpoint on that master.
			if next.Path == "" || next.Path == "/" {
				next.Path = Path
			}
			url = next.String()
			c.cfg.Logf("scheduler: redirected to %s", url)
		default:
			e := responseError("SUBSCRIBE", resp)
			resp.Body.Close()
			cancel()
			return nil, e
		}
	}
}

func (c *Client) subscribeCall() *schedulerpb.Call {
	c.mu.Lock()
	sub := proto.CloneOf(c.sub)
	c.mu.Unlock()
	fi := sub.FrameworkInfo
	call := &schedulerpb.Call{
		Type:      schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: sub,
	}
	// Re-subscribing: the id goes in both places (the master checks that
	// they agree).
	if id := c.FrameworkID(); id != nil {
		fi.Id = id
		call.FrameworkId = proto.CloneOf(id)
	}
	return call
}

// pump forwards the events of one stream until it ends, goes silent for
// MissedHeartbeats intervals, carries an ERROR, or ctx ends.
func (c *Client) pump(ctx context.Context, st *stream, out chan<- *schedulerpb.Event) error {
	c.mu.Lock()
	hb := c.heartbeat
	c.mu.Unlock()
	deadline := c.cfg.Clock.NewTimer(MissedHeartbeats * hb)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C():
			return ErrDeadStream
		case ev, ok := <-st.events:
			if !ok {
				return st.err
			}
			if ev.GetType() == schedulerpb.Event_SUBSCRIBED {
				hb = c.noteSubscribed(ev.GetSubscribed())
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
			if ev.GetType() == schedulerpb.Event_ERROR {
				return &FrameworkError{Message: ev.GetError().GetMessage()}
			}
			// The deadline counts from the last event handed over, so a
			// slow consumer is not mistaken for a dead master.
			deadline.Stop()
			select {
			case <-deadline.C():
			default:
			}
			deadline.Reset(MissedHeartbeats * hb)
		}
	}
}

// noteSubscribed records the framework id and heartbeat interval from a
// SUBSCRIBED event and returns the interval.
func (c *Client) noteSubscribed(s *schedulerpb.Event_Subscribed) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id := s.GetFrameworkId(); id.GetValue() != "" {
		c.frameworkID = proto.CloneOf(id)
	}
	if secs := s.GetHeartbeatIntervalSeconds(); secs > 0 && secs < 365*24*3600 {
		c.heartbeat = time.Duration(secs * float64(time.Second))
	}
	return c.heartbeat
}

// stream is one subscription's response body, decoded by a reader
// goroutine into events.
type stream struct {
	events chan *schedulerpb.Event // closed when the body ends
	err    error                   // why events closed; read after close
	cancel context.CancelFunc      // aborts the request
	done   chan struct{}           // closed by close(): stop the reader
	body   io.Closer
}

func (c *Client) startStream(resp *http.Response, cancel context.CancelFunc) (*stream, error) {
	mt := c.cfg.Codec
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if t, _, err := mime.ParseMediaType(ct); err == nil && (t == string(codec.JSON) || t == string(codec.Protobuf)) {
			mt = codec.MediaType(t)
		}
	}
	st := &stream{
		events: make(chan *schedulerpb.Event),
		cancel: cancel,
		done:   make(chan struct{}),
		body:   resp.Body,
	}
	go st.read(recordio.NewReader(resp.Body, 0), mt)
	return st, nil
}

func (st *stream) read(r *recordio.Reader, mt codec.MediaType) {
	defer close(st.events)
	for {
		rec, err := r.Next()
		if err != nil {
			if err == io.EOF {
				err = errors.New("stream closed by master")
			}
			st.err = err
			return
		}
		ev := &schedulerpb.Event{}
		if err := codec.Unmarshal(mt, rec, ev); err != nil {
			st.err = fmt.Errorf("scheduler: undecodable event: %w", err)
			return
		}
		select {
		case st.events <- ev:
		case <-st.done:
			st.err = errors.New("stream closed")
			return
		}
	}
}

// close aborts the request and stops the reader; safe to call twice.
func (st *stream) close() {
	select {
	case <-st.done:
		return
	default:
	}
	close(st.done)
	st.cancel()
	st.body.Close()
}
