package replog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// ErrClosed is returned by operations on a closed (or failed) log.
var ErrClosed = errors.New("replog: closed")

// ErrNotLeader is returned when this node does not lead the group; the
// master redirects to Leader().
var ErrNotLeader = errors.New("replog: not the leader")

// Log is one node of the replicated log. Its methods are safe for
// concurrent use.
type Log struct {
	cfg    Config
	raft   *raft.Raft
	bolt   *raftboltdb.BoltStore
	trans  raft.Transport
	fsm    *fsm
	leader leadership
	logger hclog.Logger
	// logState grades Raft's messages (logging.go).
	logState *logState
	// hadState: Dir held Raft state when opened (a restart, not a new node).
	hadState bool

	snapshotting atomic.Bool
	// hastened counts elections hastened by the leader death watch.
	hastened atomic.Int64
	// deadLeader is the address of a leader whose process was found gone,
	// until another leader is known.
	deadLeader atomic.Pointer[raft.ServerAddress]
	fatalOnce  sync.Once
	closeOnce  sync.Once
	closed     chan struct{}
	watchDone  chan struct{}
	failure    atomic.Pointer[error]
}

// Open opens (or creates) the node's state under cfg.Dir, joins the group
// and starts Raft, driving sm. It returns at once; leadership comes later
// (see LeaderCh, AwaitLeader).
func Open(cfg Config, sm StateMachine) (*Log, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("replog: %w", err)
	}
	st := newLogState(c)
	logger := raftLogger(c, st)

	l := &Log{cfg: c, logger: logger, logState: st, closed: make(chan struct{}), watchDone: make(chan struct{})}
	l.fsm = &fsm{sm: sm, onApplied: l.maybeSnapshot}

	// A second master on the same directory would block on the bolt lock;
	// time out with a clear error instead.
	l.bolt, err = raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(c.Dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: 2 * time.Second},
	})
	if err != nil {
		return nil, fmt.Errorf("replog: open %s: %w (is another master using this --work_dir?)", filepath.Join(c.Dir, "raft.db"), err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(c.Dir, 1, logger)
	if err != nil {
		l.bolt.Close()
		return nil, fmt.Errorf("replog: snapshots: %w", err)
	}
	l.trans = c.transport
	if l.trans == nil && c.single {
		_, l.trans = raft.NewInmemTransport(raft.ServerAddress(c.Advertise))
	}
	if l.trans == nil {
		adv, err := net.ResolveTCPAddr("tcp", c.Advertise)
		if err != nil {
			l.bolt.Close()
			return nil, fmt.Errorf("replog: Config.Advertise %q: %w", c.Advertise, err)
		}
		if c.ServerTLS != nil {
			l.trans, err = newTLSTransport(c.BindAddr, adv, c.ServerTLS, c.ClientTLS, logger)
		} else {
			l.trans, err = raft.NewTCPTransportWithLogger(c.BindAddr, adv, 3, 10*time.Second, logger)
		}
		if err != nil {
			l.bolt.Close()
			return nil, fmt.Errorf("replog: listen on %s: %w", c.BindAddr, err)
		}
	}
	logs, err := raft.NewLogCache(256, l.bolt)
	if err != nil {
		l.closeStores()
		return nil, fmt.Errorf("replog: %w", err)
	}
	l.hadState, err = raft.HasExistingState(logs, l.bolt, snaps)
	if err != nil {
		l.closeStores()
		return nil, fmt.Errorf("replog: read state in %s: %w", c.Dir, err)
	}

	notify := make(chan bool, 1)
	rc := c.raftConfig(notify)
	rc.Logger = logger
	l.raft, err = raft.NewRaft(rc, l.fsm, logs, l.bolt, snaps, l.trans)
	if err != nil {
		l.closeStores()
		return nil, fmt.Errorf("replog: start raft: %w", err)
	}
	go l.watchLeadership(notify)
	if !c.single {
		go l.watchLeaderProcess()
	}

	if c.Bootstrap && !l.hadState {
		var conf raft.Configuration
		for _, p := range c.Peers {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p), Address: raft.ServerAddress(p)})
		}
		if err := l.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			l.Close()
			return nil, fmt.Errorf("replog: bootstrap: %w", err)
		}
	}
	return l, nil
}

func (l *Log) closeStores() {
	if c, ok := l.trans.(interface{ Close() error }); ok {
		c.Close()
	}
	l.bolt.Close()
}

func (l *Log) watchLeadership(notify chan bool) {
	defer close(l.watchDone)
	for {
		select {
		case v := <-notify:
			l.leader.set(v)
		case <-l.closed:
			l.leader.set(false)
			return
		}
	}
}

// Quiesce tells the log that its process is stopping: Raft's complaints
// from then on about peers, elections and its transport (which the stop
// itself causes, e.g. every master of `mezzo local` closing at once) are
// logged at DEBUG. Call it when the stop begins, before Close. Safe for
// concurrent use.
func (l *Log) Quiesce() { l.logState.closing.Store(true) }

// HadState reports whether Dir held Raft state when the log was opened.
func (l *Log) HadState() bool { return l.hadState }

// Append implements master/registrar.Store: it replicates entry and returns
// nil once a quorum has it on disk and this node has applied it (the
// StateMachine's Apply error is returned as is). ErrNotLeader if this node
// does not lead. A storage failure here is fatal (see Config.OnFatal).
func (l *Log) Append(ctx context.Context, entry []byte) error {
	if err := l.usable(); err != nil {
		return err
	}
	f := l.raft.Apply(entry, enqueueTimeout(ctx))
	if err := wait(ctx, f); err != nil {
		return l.classify(err)
	}
	if err, ok := f.Response().(error); ok {
		return err
	}
	return nil
}

// Barrier implements master/registrar.Store: it returns once every entry
// committed before it is applied here. Only the leader can do this; on a
// new leader it also commits what its predecessor left uncommitted.
func (l *Log) Barrier(ctx context.Context) error {
	if err := l.usable(); err != nil {
		return err
	}
	if err := wait(ctx, l.raft.Barrier(enqueueTimeout(ctx))); err != nil {
		return l.classify(err)
	}
	return nil
}

func enqueueTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 0
}

// wait waits for a Raft future or the context. A future abandoned on
// cancellation still completes inside Raft.
func wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Log) usable() error {
	if p := l.failure.Load(); p != nil {
		return fmt.Errorf("%w: %v", ErrClosed, *p)
	}
	select {
	case <-l.closed:
		return ErrClosed
	default:
		return nil
	}
}

// classify maps Raft's errors to ours and treats anything else (a log or
// stable store error) as a disk failure.
func (l *Log) classify(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w (%v)", ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	}
	l.fatal(err)
	return fmt.Errorf("replog: write failed: %w", err)
}

// fatal handles a disk failure: stop acknowledging (Raft has stepped down),
// shut this node's Raft down so it neither leads nor votes on a broken
// disk, and report loudly.
func (l *Log) fatal(err error) {
	l.fatalOnce.Do(func() {
		l.failure.Store(&err)
		l.logger.Error("cannot write to disk: this master stops acknowledging and steps down", "dir", l.cfg.Dir, "error", err)
		l.leader.set(false)
		go func() {
			l.raft.Shutdown().Error()
			if l.cfg.OnFatal != nil {
				l.cfg.OnFatal(err)
			}
		}()
	})
}

// maybeSnapshot starts a snapshot when the entries since the last one
// outgrow it (and SnapshotMinBytes). Called on Raft's FSM goroutine, so
// the snapshot itself runs on another.
func (l *Log) maybeSnapshot() {
	since := l.fsm.sinceSnap.Load()
	if since < l.cfg.SnapshotMinBytes || since < l.fsm.lastSnap.Load() {
		return
	}
	if !l.snapshotting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer l.snapshotting.Store(false)
		if err := l.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			l.logger.Warn("snapshot failed", "error", err)
		}
	}()
}

// Snapshot takes a snapshot now and compacts the log behind it.
func (l *Log) Snapshot() error {
	if err := l.usable(); err != nil {
		return err
	}
	err := l.raft.Snapshot().Error()
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil
	}
	return err
}

// IsLeader reports whether this node leads the group now.
func (l *Log) IsLeader() bool { return l.usable() == nil && l.raft.State() == raft.Leader }

// LeaderCh returns a channel that receives this node's leadership (true:
// it leads) now and at every change. The channel holds only the latest
// value; it is never closed (false is sent when the log closes).
func (l *Log) LeaderCh() <-chan bool { return l.leader.subscribe() }

// AwaitLeader returns once this node leads, or ctx ends.
func (l *Log) AwaitLeader(ctx context.Context) error {
	ch := l.LeaderCh()
	for {
		select {
		case v := <-ch:
			if v && l.IsLeader() {
				return nil
			}
		case <-l.closed:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Leader returns the Raft address and ID of the current leader, empty if
// unknown or if its process was found gone (deathwatch.go): requests are
// better held until the next leader is known than sent to a dead one.
// HTTPAddr(addr) is its master's HTTP address.
func (l *Log) Leader() (addr, id string) {
	a, i := l.raft.LeaderWithID()
	if a != "" {
		if dead := l.deadLeader.Load(); dead != nil && *dead == a {
			return "", ""
		}
	}
	return string(a), string(i)
}

// Term is the current Raft term: the leader's epoch, which fences the
// messages of a deposed leader.
func (l *Log) Term() uint64 { return l.raft.CurrentTerm() }

// ID is this node's server ID.
func (l *Log) ID() string { return l.cfg.ID }

// Stats returns Raft's statistics (state, term, indexes, ...).
func (l *Log) Stats() map[string]string { return l.raft.Stats() }

// DiskUsage is the size in bytes of the node's files under Dir.
func (l *Log) DiskUsage() (int64, error) { return DirSize(l.cfg.Dir) }

// DirSize sums the sizes of the regular files under dir. Files that
// disappear while it walks (Raft reaps old snapshots concurrently) are not
// counted, rather than failing the walk.
func DirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path != dir {
			return nil
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// Close shuts this node down and closes its files. It does not hand
// leadership over: the others elect a new leader after ElectionTimeout.
func (l *Log) Close() error {
	var err error
	l.closeOnce.Do(func() {
		err = l.raft.Shutdown().Error()
		close(l.closed)
		<-l.watchDone
		if c, ok := l.trans.(interface{ Close() error }); ok {
			c.Close()
		}
		if berr := l.bolt.Close(); err == nil && l.failure.Load() == nil {
			err = berr
		}
	})
	return err
}
