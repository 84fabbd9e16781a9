package executor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/executorpb"
	mesos "mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/internal/tlsconfig"
)

// SubscribeRetryInterval is how often an executor that reached the agent but
// was not subscribed (e.g. 503 while the agent recovers) retries SUBSCRIBE,
// as Mesos's executors do.
const SubscribeRetryInterval = time.Second

// HeartbeatCallInterval is how often a subscribed executor sends a HEARTBEAT
// call to the agent (Mesos's executor library uses 30 minutes), which keeps
// idle connections from being reaped by middleboxes.
const HeartbeatCallInterval = 30 * time.Minute

// flushTimeout bounds how long Run, after Stop, waits for queued calls to be
// posted.
const flushTimeout = 5 * time.Second

// Errors returned by Run and by calls.
var (
	// ErrShutdownTimeout: the handler did not call Stop within the shutdown
	// grace period after SHUTDOWN (Mesos kills the executor at that point).
	ErrShutdownTimeout = errors.New("executor: shutdown grace period elapsed")
	// ErrNotSubscribed: a MESSAGE cannot be sent while not subscribed.
	ErrNotSubscribed = errors.New("executor: not subscribed")
)

// Options tune a Client; the zero value is the production setting.
type Options struct {
	// Codec is the media type of calls and events (default protobuf, as the
	// Mesos executors use).
	Codec codec.MediaType
	// Clock drives the retry, backoff, recovery and shutdown timers.
	Clock clock.Clock
	// HTTPClient sends calls; the default has no timeout (the SUBSCRIBE
	// response is a stream) and ignores proxy settings (the agent is local).
	HTTPClient *http.Client
	// Logf receives diagnostic lines; nil discards them.
	Logf func(format string, args ...any)
	// Jitter returns a number in [0,1) that scales the re-subscription
	// backoff (default math/rand).
	Jitter func() float64
}

type connState int

const (
	disconnected connState = iota
	subscribing
	subscribed
)

// pendingUpdate is an UPDATE sent but not yet acknowledged.
type pendingUpdate struct {
	seq    uint64
	uuid   [16]byte
	update *executorpb.Call_Update
}

// Client is one executor's connection to its agent. Create it with
// NewClient and drive it with Run. Methods other than Post and Config must be
// called on the loop goroutine, that is from Handler methods or functions
// given to Post.
type Client struct {
	cfg  Config
	opts Options
	h    Handler

	inbox chan any      // from stream goroutines and Post
	done  chan struct{} // closed when Run returns
	sendq chan *executorpb.Call

	// Loop-owned state below.
	state      connState
	conn       uint64 // generation of the current subscription attempt
	cancelConn context.CancelFunc
	reachable  bool // the agent has answered us at least once
	subscribed bool // we have been subscribed at least once
	gone       bool // given up on the agent
	shutdown   bool // SHUTDOWN delivered
	stopped    bool
	sendClosed bool // sendq is closed: Run has ended

	seq          uint64 // numbers updates in creation order
	subscribeSeq uint64 // updates up to this one went into the last SUBSCRIBE
	unacked      []pendingUpdate
	unackedTasks []*mesos.TaskInfo

	retryTimer    clock.Timer
	recoveryTimer clock.Timer
	shutdownTimer clock.Timer
}

// NewClient returns a client for the executor described by cfg.
func NewClient(cfg Config, opts Options) *Client {
	if opts.Codec == "" {
		opts.Codec = codec.Protobuf
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		if cfg.TLS {
			// The agent's certificate chains to the CA it named; a file
			// that cannot be read leaves the system's roots, and the
			// handshake then fails with the reason.
			if src, err := tlsconfig.Load(tlsconfig.Files{CA: cfg.TLSCAFile}); err == nil {
				tr.TLSClientConfig = src.Client()
			} else {
				opts.Logf("executor: %v", err)
			}
		}
		opts.HTTPClient = &http.Client{Transport: tr}
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	return &Client{
		cfg:   cfg,
		opts:  opts,
		inbox: make(chan any, 64),
		done:  make(chan struct{}),
		sendq: make(chan *executorpb.Call, 16),
	}
}

// Config returns the configuration the client was built with. Safe from any
// goroutine.
func (c *Client) Config() Config { return c.cfg }

// Clock returns the client's clock, so executors time their own work with it.
func (c *Client) Clock() clock.Clock { return c.opts.Clock }

// Logf writes a diagnostic line through Options.Logf. Safe from any goroutine.
func (c *Client) Logf(format string, args ...any) { c.opts.Logf(format, args...) }

// Post runs fn on the loop goroutine. It is safe from any goroutine and
// reports false (without running fn) once Run has returned.
func (c *Client) Post(fn func()) bool {
	select {
	case c.inbox <- msgFunc(fn):
		return true
	case <-c.done:
		return false
	}
}

// Stop makes Run return nil once the current handler call returns.
func (c *Client) Stop() {
	c.stopped = true
}

// Subscribed reports whether the client is currently subscribed.
func (c *Client) Subscribed() bool { return c.state == subscribed }

// AgentGone reports that the library gave up on the agent (a broken
// connection without checkpointing, or the recovery timeout): no further
// acknowledgements will come, so the executor should not wait for them.
func (c *Client) AgentGone() bool { return c.gone }

// Unacknowledged returns how many updates await the agent's acknowledgement.
func (c *Client) Unacknowledged() int { return len(c.unacked) }

// Update sends a status update for a task and keeps it until acknowledged.
// The status is copied; the copy gets a fresh UUID, the current time, source
// SOURCE_EXECUTOR and this executor's ID. It returns the UUID. Without a
// subscription the update waits for the next SUBSCRIBE, which carries it.
func (c *Client) Update(status *mesos.TaskStatus) ([]byte, error) {
	if status.GetTaskId().GetValue() == "" {
		return nil, errors.New("executor: status update: task_id is required")
	}
	if status.State == nil {
		return nil, errors.New("executor: status update: state is required")
	}
	st := proto.Clone(status).(*mesos.TaskStatus)
	id := uuid.New()
	st.Uuid = id[:]
	now := c.opts.Clock.Now()
	st.Timestamp = proto.Float64(float64(now.UnixNano()) / 1e9)
	st.Source = mesos.TaskStatus_SOURCE_EXECUTOR.Enum()
	st.ExecutorId = &mesos.ExecutorID{Value: proto.String(c.cfg.ExecutorID)}

	c.seq++
	up := &executorpb.Call_Update{Status: st}
	c.unacked = append(c.unacked, pendingUpdate{seq: c.seq, uuid: id, update: up})
	if c.state == subscribed {
		c.enqueue(c.call(executorpb.Call_UPDATE, func(call *executorpb.Call) { call.Update = up }))
	}
	return st.Uuid, nil
}

// Message sends framework data through the agent to the scheduler. Like
// Mesos, it is dropped (ErrNotSubscribed) while not subscribed.
func (c *Client) Message(data []byte) error {
	if c.state != subscribed {
		return ErrNotSubscribed
	}
	c.enqueue(c.call(executorpb.Call_MESSAGE, func(call *executorpb.Call) {
		call.Message = &executorpb.Call_Message{Data: append([]byte(nil), data...)}
	}))
	return nil
}

func (c *Client) call(t executorpb.Call_Type, fill func(*executorpb.Call)) *executorpb.Call {
	call := &executorpb.Call{
		ExecutorId:  &mesos.ExecutorID{Value: proto.String(c.cfg.ExecutorID)},
		FrameworkId: &mesos.FrameworkID{Value: proto.String(c.cfg.FrameworkID)},
		Type:        t.Enum(),
	}
	if fill != nil {
		fill(call)
	}
	return call
}

// Run connects to the agent and delivers its events to h until the handler
// calls Stop (nil), the shutdown grace period runs out after SHUTDOWN
// (ErrShutdownTimeout), or ctx ends (its error). Run may be called once.
func (c *Client) Run(ctx context.Context, h Handler) error {
	c.h = h
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		close(c.done)
		for _, t := range []clock.Timer{c.retryTimer, c.recoveryTimer, c.shutdownTimer} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	flushed := make(chan struct{})
	go c.sendLoop(ctx, flushed)
	heartbeat := c.opts.Clock.NewTicker(HeartbeatCallInterval)
	defer heartbeat.Stop()
	c.subscribe(ctx)
	for !c.stopped {
		select {
		case <-heartbeat.C():
			if c.state == subscribed {
				c.enqueue(c.call(executorpb.Call_HEARTBEAT, nil))
			}
		case <-ctx.Done():
			return ctx.Err()
		case m := <-c.inbox:
			c.handle(ctx, m)
		case <-timerC(c.retryTimer):
			c.retryTimer = nil
			c.subscribe(ctx)
		case <-timerC(c.recoveryTimer):
			c.recoveryTimer = nil
			c.opts.Logf("executor: recovery timeout of %v exceeded; shutting down", c.cfg.RecoveryTimeout)
			c.giveUp()
		case <-timerC(c.shutdownTimer):
			return ErrShutdownTimeout
		}
	}
	if c.cancelConn != nil {
		c.cancelConn()
	}
	// Deliver calls still queued (a last MESSAGE, say) before returning.
	c.sendClosed = true
	close(c.sendq)
	select {
	case <-flushed:
	case <-ctx.Done():
	case <-time.After(flushTimeout):
	}
	return nil
}

func timerC(t clock.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

// subscribe starts a SUBSCRIBE attempt carrying everything unacknowledged.
func (c *Client) subscribe(ctx context.Context) {
	if c.state != disconnected || c.gone || c.stopped {
		return
	}
	sub := &executorpb.Call_Subscribe{}
	for _, p := range c.unacked {
		sub.UnacknowledgedUpdates = append(sub.UnacknowledgedUpdates, p.update)
	}
	sub.UnacknowledgedTasks = append(sub.UnacknowledgedTasks, c.unackedTasks...)
	call := c.call(executorpb.Call_SUBSCRIBE, func(call *executorpb.Call) { call.Subscribe = sub })
	c.subscribeSeq = c.seq
	c.conn++
	c.state = subscribing
	connCtx, cancel := context.WithCancel(ctx)
	c.cancelConn = cancel
	go c.stream(connCtx, c.conn, call)
}

// giveUp is reached when the agent is gone for good: deliver SHUTDOWN.
func (c *Client) giveUp() {
	c.gone = true
	if c.retryTimer != nil {
		c.retryTimer.Stop()
		c.retryTimer = nil
	}
	c.injectShutdown()
}

func (c *Client) injectShutdown() {
	if c.shutdown {
		return
	}
	c.shutdown = true
	c.shutdownTimer = c.opts.Clock.NewTimer(c.cfg.ShutdownGracePeriod)
	c.h.Shutdown(c)
}

// enqueue hands a call to the sender, which posts calls one at a time in
// order (so a task's updates reach the agent in the order they were made).
func (c *Client) enqueue(call *executorpb.Call) {
	if c.sendClosed {
		return
	}
	select {
	case c.sendq <- call:
	case <-c.done:
	}
}

// backoff is a random delay in [0, SubscriptionBackoffMax].
func (c *Client) backoff() time.Duration {
	return time.Duration(float64(c.cfg.SubscriptionBackoffMax) * c.opts.Jitter())
}

func (c *Client) armRetry(d time.Duration) {
	if c.retryTimer != nil {
		c.retryTimer.Stop()
	}
	c.retryTimer = c.opts.Clock.NewTimer(d)
}

func (c *Client) handle(ctx context.Context, m any) {
	switch m := m.(type) {
	case msgFunc:
		m()
	case msgConnected:
		if m.conn != c.conn {
			return
		}
		c.reachable, c.subscribed, c.state = true, true, subscribed
		c.stopRecovery()
		// Updates made while the SUBSCRIBE was in flight were not in it.
		for _, p := range c.unacked {
			if p.seq > c.subscribeSeq {
				up := p.update
				c.enqueue(c.call(executorpb.Call_UPDATE, func(call *executorpb.Call) { call.Update = up }))
			}
		}
	case msgRejected:
		if m.conn != c.conn {
			return
		}
		c.reachable, c.state = true, disconnected
		c.stopRecovery()
		switch m.code {
		case http.StatusServiceUnavailable, http.StatusNotFound:
			// The agent is recovering or not routed yet: just retry.
			c.opts.Logf("executor: SUBSCRIBE got %d (%s); retrying", m.code, m.body)
		default:
			c.h.Error(c, fmt.Sprintf("Received unexpected '%d %s' (%s) for SUBSCRIBE", m.code, http.StatusText(m.code), m.body))
		}
		c.armRetry(SubscribeRetryInterval)
	case msgDisconnected:
		if m.conn != c.conn {
			return
		}
		c.disconnected(m.err)
	case msgEvent:
		if m.conn != c.conn || c.state != subscribed {
			return
		}
		c.dispatch(m.ev)
	case msgDecodeError:
		if m.conn != c.conn {
			return
		}
		c.h.Error(c, "Failed to de-serialize event: "+m.err.Error())
	}
}

func (c *Client) stopRecovery() {
	if c.recoveryTimer != nil {
		c.recoveryTimer.Stop()
		c.recoveryTimer = nil
	}
}

func (c *Client) disconnected(err error) {
	if c.cancelConn != nil {
		c.cancelConn()
	}
	c.state = disconnected
	switch {
	case c.gone || c.stopped:
	case c.recoveryTimer != nil:
		// Still recovering from an earlier break: keep backing off.
		c.armRetry(c.backoff())
	case c.cfg.Checkpoint && (c.reachable || c.subscribed):
		c.opts.Logf("executor: disconnected from agent: %v; retrying for up to %v", err, c.cfg.RecoveryTimeout)
		c.recoveryTimer = c.opts.Clock.NewTimer(c.cfg.RecoveryTimeout)
		c.armRetry(0)
	default:
		c.opts.Logf("executor: disconnected from agent: %v; shutting down", err)
		c.giveUp()
	}
}

func (c *Client) dispatch(ev *executorpb.Event) {
	switch ev.GetType() {
	case executorpb.Event_SUBSCRIBED:
		c.h.Subscribed(c, ev.GetSubscribed())
	case executorpb.Event_LAUNCH:
		task := ev.GetLaunch().GetTask()
		c.trackTask(task)
		c.h.Launch(c, task)
	case executorpb.Event_LAUNCH_GROUP:
		group := ev.GetLaunchGroup().GetTaskGroup()
		for _, t := range group.GetTasks() {
			c.trackTask(t)
		}
		c.h.LaunchGroup(c, group)
	case executorpb.Event_KILL:
		c.h.Kill(c, ev.GetKill().GetTaskId(), ev.GetKill().GetKillPolicy())
	case executorpb.Event_ACKNOWLEDGED:
		ack := ev.GetAcknowledged()
		if !c.acknowledge(ack.GetTaskId(), ack.GetUuid()) {
			c.opts.Logf("executor: acknowledgement for unknown status update of task %s", ack.GetTaskId().GetValue())
			return
		}
		c.h.Acknowledged(c, ack.GetTaskId(), ack.GetUuid())
	case executorpb.Event_MESSAGE:
		c.h.Message(c, ev.GetMessage().GetData())
	case executorpb.Event_SHUTDOWN:
		c.injectShutdown()
	case executorpb.Event_ERROR:
		c.h.Error(c, ev.GetError().GetMessage())
	default:
		// HEARTBEAT and event types newer than us.
	}
}

func (c *Client) trackTask(t *mesos.TaskInfo) {
	if t == nil {
		return
	}
	for _, u := range c.unackedTasks {
		if u.GetTaskId().GetValue() == t.GetTaskId().GetValue() {
			return
		}
	}
	c.unackedTasks = append(c.unackedTasks, t)
}

// acknowledge drops the update with uuid and, since the agent now knows the
// task, the task from the unacknowledged tasks. It reports whether the
// update was known.
func (c *Client) acknowledge(taskID *mesos.TaskID, id []byte) bool {
	found := false
	for i, p := range c.unacked {
		if string(p.uuid[:]) == string(id) {
			c.unacked = append(c.unacked[:i], c.unacked[i+1:]...)
			found = true
			break
		}
	}
	if found {
		for i, t := range c.unackedTasks {
			if t.GetTaskId().GetValue() == taskID.GetValue() {
				c.unackedTasks = append(c.unackedTasks[:i], c.unackedTasks[i+1:]...)
				break
			}
		}
	}
	return found
}
