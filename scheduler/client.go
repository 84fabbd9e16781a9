package scheduler

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

// Client is a scheduler's connection to the masters. Subscribe once; Call
// and the helpers may be used from any goroutine once subscribed.
type Client struct {
	cfg    Config
	cfgErr error
	hc     *http.Client

	mu          sync.Mutex
	leader      string // base URL of the master holding our stream
	streamID    string
	frameworkID *mesos.FrameworkID
	heartbeat   time.Duration
	subscribed  bool
	started     bool  // Subscribe was called
	tornDown    bool  // a TEARDOWN was sent (or is being sent)
	err         error // why the event channel closed
	// sub is what SUBSCRIBE sends: the configured info, suppressed roles
	// and offer constraints, as the last UPDATE_FRAMEWORK replaced them.
	sub *schedulerpb.Call_Subscribe
}

// New returns a client for cfg. Configuration errors are reported by
// Subscribe.
func New(cfg Config) *Client {
	cfg, err := cfg.validate()
	c := &Client{cfg: cfg, cfgErr: err, heartbeat: DefaultHeartbeatInterval}
	if err != nil {
		return c
	}
	c.sub = &schedulerpb.Call_Subscribe{FrameworkInfo: cfg.Framework, SuppressedRoles: cfg.SuppressedRoles,
		OfferConstraints: cfg.OfferConstraints}
	// Follow redirects ourselves: the Location is the leader, which the
	// client must remember for its calls.
	hc := *cfg.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	if id := cfg.Framework.GetId(); id.GetValue() != "" {
		c.frameworkID = proto.Clone(id).(*mesos.FrameworkID)
	}
	return c
}

// FrameworkID returns the framework's id once the master assigned it (or
// the one configured), else nil.
func (c *Client) FrameworkID() *mesos.FrameworkID {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frameworkID == nil {
		return nil
	}
	return proto.Clone(c.frameworkID).(*mesos.FrameworkID)
}

// StreamID returns the Mesos-Stream-Id of the current subscription.
func (c *Client) StreamID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streamID
}

// Leader returns the base URL ("http://host:port") of the master holding
// the subscription, or "" before the first one.
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// Err reports why the event channel was closed (nil while it is open).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call posts one call to the master holding the subscription. It fills in
// framework_id (when unset) and the Mesos-Stream-Id header. A reply other
// than 200 or 202 is returned as an *Error. SUBSCRIBE goes through
// Subscribe, not Call.
func (c *Client) Call(ctx context.Context, call *schedulerpb.Call) error {
	if c.cfgErr != nil {
		return c.cfgErr
	}
	if call.GetType() == schedulerpb.Call_SUBSCRIBE {
		return &Error{Call: "SUBSCRIBE", Status: http.StatusBadRequest, Body: "use Client.Subscribe"}
	}
	c.mu.Lock()
	leader, stream, fwID, ok := c.leader, c.streamID, c.frameworkID, c.subscribed
	c.mu.Unlock()
	if !ok || stream == "" {
		return ErrNotSubscribed
	}
	if call.FrameworkId == nil && fwID != nil {
		call = proto.CloneOf(call)
		call.FrameworkId = proto.CloneOf(fwID)
	}
	body, err := codec.Marshal(c.cfg.Codec, call)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, leader+Path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", string(c.cfg.Codec))
	req.Header.Set("Accept", string(c.cfg.Codec))
	req.Header.Set("Mesos-Stream-Id", stream)
	teardown := call.GetType() == schedulerpb.Call_TEARDOWN
	if teardown {
		// Mark it before sending: the master may close the stream before
		// its 202 reaches us, and the event loop must not re-subscribe.
		c.setTornDown(true)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if teardown {
			c.setTornDown(false)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if teardown {
		c.setTornDown(false)
	}
	return responseError(call.GetType().String(), resp)
}

func (c *Client) setTornDown(v bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tornDown = v
}

func (c *Client) isTornDown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tornDown
}

// responseError reads a failed response into an *Error.
func responseError(call string, resp *http.Response) *Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return &Error{Call: call, Status: resp.StatusCode, Body: string(bytes.TrimSpace(b))}
}
