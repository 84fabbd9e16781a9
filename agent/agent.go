package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/docker"
	"mezzo/agent/files"
	"mezzo/agent/httpapi"
	"mezzo/agent/statusupdate"
	"mezzo/api/mesos"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// ErrStopped is returned by calls into an agent that has stopped.
var ErrStopped = errors.New("agent stopped")

// Agent is one mezzo agent. Create it with New, serve Handler, then Start.
type Agent struct {
	meta metaDir
	// runtime holds the records a reboot makes worthless (Config.RuntimeDir;
	// the same as meta when none is configured).
	runtime metaDir

	cz containerizer.Containerizer
	// docker is the docker containerizer the agent built
	// (--containerizers with docker), which runs Docker command tasks; nil
	// without it.
	docker *docker.Docker
	// sumManager is the status update manager (core.sum as a sink).
	sumManager *statusupdate.Manager
	files      *files.Handler
	http       *httpapi.Handler
	client     *http.Client // cfg.HTTPClient's transport, redirects not followed

	// flagsTotal is what --resources and detection give the agent; it is
	// what AgentInfo.resources says (core.total applies the checkpointed
	// resources to it).
	flagsTotal resources.Resources
	attributes []*mesos.Attribute
	bootID     string
	endpoint   string // ip:port
	startTime  time.Time
	rec        *recovered
	// recoveredContainers are the containers the containerizer re-attached
	// to, by ID; recoverState consumes them.
	recoveredContainers map[string]containerizer.Recovered
	// streamsBefore are the status update streams checkpointed before the
	// manager's recovery (see checkpointedStreams).
	streamsBefore map[[2]string]bool
	// recovering is true until the loop has rebuilt the recovered state;
	// the executor API answers 503 meanwhile.
	recovering atomic.Bool
	// killAll: the agent is going away for good (the master shut it down,
	// or a fatal error), so even checkpointing executors are killed.
	killAll atomic.Bool
	// authFailures counts requests refused 401 (bad credentials, bad
	// executor tokens): slave/http_authentication_failures.
	authFailures *atomic.Int64
	// handler is http behind the HTTP authentication (Config.HTTPAuth).
	handler http.Handler

	inbox     chan func()
	stop      chan struct{} // closed to stop the loop
	done      chan struct{} // closed when the loop has stopped
	stopOnce  sync.Once
	startOnce sync.Once
	started   atomic.Bool
	errMu     sync.Mutex
	err       error

	// sender is the current master connection's call sender while
	// registered; read by the status update manager's Forward.
	sender atomic.Pointer[callSender]

	// sessIO is the registration session's I/O (core.sess's sink).
	sessIO masterIO

	// core is the loop-owned state (core.go).
	core
}

// counters are the agent's cumulative metrics.
type counters struct {
	validUpdates, invalidUpdates    uint64
	validFrameworkMessages          uint64 // scheduler messages delivered to an executor
	invalidFrameworkMessages        uint64 // ... dropped: no subscribed executor
	executorsTerminated             uint64
	containerLaunchErrors           uint64
	containerDestroyErrors          uint64
	recoveryErrors                  uint64
	fetchesSucceeded, fetchesFailed uint64
	tasksFinished, tasksFailed      uint64
	tasksKilled, tasksLost          uint64
	tasksError, tasksDropped        uint64
	tasksGone, tasksGoneByOperator  uint64
	// checkpointResourcesRefused counts CHECKPOINT_RESOURCES events the
	// agent could not apply; volumeErrors failures to create or remove
	// volume directories; volumesKept volume directories kept because a
	// container used them.
	checkpointResourcesRefused uint64
	volumeErrors               uint64
	volumesKept                uint64
}

// New validates cfg, detects resources, recovers the checkpointed identity
// and builds the agent (nothing runs until Start).
func New(cfg Config) (*Agent, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	total, err := totalResources(cfg.Resources, cfg.WorkDir, realProbe)
	if err != nil {
		return nil, err
	}
	attrs, err := parseAttributes(cfg.Attributes)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		meta:       metaDir(cfg.WorkDir + "/meta"),
		runtime:    runtimeMeta(cfg),
		cz:         cfg.Containerizer,
		files:      files.New(),
		flagsTotal: total,
		attributes: attrs,
		bootID:     readBootID(),
		endpoint:   net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.Port)),
		inbox:      make(chan func(), 64),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	a.core = newCore(cfg, total)
	a.sessIO.a = a
	a.containers, a.calls, a.timers, a.cp = liveContainers{a}, liveCalls{a}, clockTimers{a}, diskCheckpointer{a}
	a.sess = session{
		sink:           &a.sessIO,
		rand:           func(n int64) int64 { return rand.Int64N(n + 1) },
		initialBackoff: cfg.RegistrationBackoff,
		maxBackoff:     MaxRegistrationBackoff,
		holdsTasks:     func() bool { return len(a.frameworks) > 0 },
	}
	transport := cfg.HTTPClient.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	a.client = &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if err := a.recoverCheckpointedResources(); err != nil {
		return nil, err
	}
	if err := a.recoverCheckpoint(); err != nil {
		if a.docker != nil {
			a.docker.Close() // containers stay for the next attempt
		}
		return nil, err
	}
	a.finishCheckpointedResources(a.rec)
	if ovs := cfg.Oversubscription; ovs.ResourceEstimator != "noop" || ovs.QoSController != "noop" {
		r, err := newOversubRunner(ovs, meterOf(a.cz))
		if err != nil {
			return nil, fmt.Errorf("agent config: %w", err)
		}
		a.ovsSink = liveOversub{a, r}
	}
	a.http = httpapi.New(backend{a}, a.files, a.log, cfg.Logging)
	a.http.SetAuthorizer(cfg.Authorizer)
	a.authFailures = &atomic.Int64{}
	if cfg.HTTPAuth != nil {
		if cfg.HTTPAuth.Failures == nil {
			cfg.HTTPAuth.Failures = a.authFailures
		}
		a.authFailures = cfg.HTTPAuth.Failures
	}
	if cfg.AuthenticateExecutors {
		a.http.SetExecutorAuthenticator(a.authenticateExecutor)
	}
	a.handler = httpapi.Authenticate(cfg.HTTPAuth, a.http)
	return a, nil
}

// Handler is the agent's HTTP API: the executor API, /state, /health,
// /metrics/snapshot and /files/*, each also under /slave(1)/, behind the
// HTTP authentication when configured.
func (a *Agent) Handler() http.Handler { return a.handler }

// Start runs the agent: its loop, the status update manager and the
// registration with the master. It may be called once.
func (a *Agent) Start() {
	a.startOnce.Do(func() {
		a.started.Store(true)
		a.startTime = a.clock.Now()
		a.sumManager.Pause() // until registered
		a.sumManager.Start()
		go a.run()
	})
}

// Stop ends the agent as Mesos's agent exits on SIGTERM: it disconnects
// from the master and its executors; the executors of checkpointing
// frameworks keep running (a restarted agent re-attaches to them), the
// others are shut down (SHUTDOWN event, then SIGTERM and after the grace
// period SIGKILL to the whole container) and waited for. Safe to call more
// than once and before Start. Use Shutdown to kill every executor.
func (a *Agent) Stop() {
	a.stopOnce.Do(func() { close(a.stop) })
	if a.started.Load() {
		<-a.done
	}
}

// Shutdown stops the agent and kills every executor, checkpointing or not,
// as when the master shuts the agent down.
func (a *Agent) Shutdown() {
	a.killAll.Store(true)
	a.Stop()
}

// Done is closed when the agent has stopped (Stop, or a SHUTDOWN from the
// master).
func (a *Agent) Done() <-chan struct{} {
	if !a.started.Load() {
		return a.stop
	}
	return a.done
}

// Err says why the agent stopped on its own (e.g. the master shut it
// down); nil after Stop.
func (a *Agent) Err() error {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	return a.err
}

// fail stops the agent for a reason (called from the loop).
func (a *Agent) fail(err error) {
	a.errMu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.errMu.Unlock()
	a.log.Error("agent stopping", "err", err)
	a.killAll.Store(true)
	a.stopOnce.Do(func() { close(a.stop) })
}

// run is the agent's loop: the only goroutine touching loop-owned state.
func (a *Agent) run() {
	defer close(a.done)
	a.recoverState()
	a.startOversubscription() // after recovery: a restarted agent estimates anew
	for {
		select {
		case f := <-a.inbox:
			f()
		case <-a.stop:
			a.shutdown()
			return
		}
	}
}

// post hands f to the loop; false if the agent has stopped.
func (a *Agent) post(f func()) bool {
	select {
	case a.inbox <- f:
		return true
	case <-a.stop:
		return false
	}
}

// query runs f on the loop and waits for it.
func (a *Agent) query(f func()) error {
	if !a.started.Load() {
		return ErrStopped
	}
	ch := make(chan struct{})
	if !a.post(func() { f(); close(ch) }) {
		return ErrStopped
	}
	select {
	case <-ch:
		return nil
	case <-a.done:
		return ErrStopped
	}
}

// loopTimer runs a function on the loop after a delay unless stopped
// first. Both Stop and the function run on the loop, so a stopped timer's
// function never runs even if the timer already fired.
type loopTimer struct {
	stopped bool
	cancel  chan struct{}
}

// after arms a loopTimer through the timer sink.
func (a *core) after(d time.Duration, f func()) *loopTimer { return a.timers.after(d, f) }

// Stop cancels the timer (loop only; nil-safe).
func (lt *loopTimer) Stop() {
	if lt == nil || lt.stopped {
		return
	}
	lt.stopped = true
	close(lt.cancel)
}

// shutdown runs when the loop stops: disconnect, kill the executors (all
// of them, or those of non-checkpointing frameworks when the agent merely
// stops, see Stop) and wait for them, stop the status update manager.
func (a *Agent) shutdown() {
	a.sess.disconnect()
	a.sumManager.Stop()
	killAll := a.killAll.Load()
	var wg sync.WaitGroup
	for _, fw := range a.frameworks {
		for _, e := range fw.executors {
			if e.phase == phaseTerminated || e.containerID == "" {
				continue
			}
			if fw.checkpoint() && !killAll {
				// Left running: its stream breaks and it re-subscribes
				// to the next agent process.
				if e.conn != nil {
					e.conn.Close()
				}
				continue
			}
			if e.conn != nil {
				e.conn.Send(shutdownEvent())
				e.conn.Close()
			}
			grace := time.Duration(e.shutdownGrace(int64(a.cfg.ExecutorShutdownGracePeriod)))
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
				defer cancel()
				if err := a.cz.Destroy(ctx, id, grace); err != nil && !errors.Is(err, containerizer.ErrUnknownContainer) {
					a.log.Warn("destroying container", "container", id, "err", err)
				}
			}(e.containerID)
		}
	}
	wg.Wait()
	if a.docker != nil {
		// Stops following the containers' output (checkpointing the log
		// cursors); the containers left running are recovered next time.
		a.docker.Close()
	}
}

// agentInfo is the AgentInfo the agent registers with.
func (a *Agent) agentInfo() *mesos.AgentInfo {
	info := &mesos.AgentInfo{
		Hostname:   proto.String(a.cfg.Hostname),
		Port:       proto.Int32(int32(a.cfg.Port)),
		Resources:  a.flagsTotal.Proto(),
		Attributes: a.attributes,
	}
	if a.sess.agentID != "" {
		info.Id = &mesos.AgentID{Value: proto.String(a.sess.agentID)}
	}
	return info
}

func (a *Agent) pid() string { return "slave(1)@" + a.endpoint }
