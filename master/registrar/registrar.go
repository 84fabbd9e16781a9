package registrar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"mezzo/api/mesos"
)

// Defaults.
const (
	// DefaultMaxBatch bounds the operations in one write, so one log entry
	// stays a few hundred kilobytes even when a whole cluster re-registers.
	DefaultMaxBatch = 8192
	// DefaultWriteTimeout bounds one write, as Mesos's
	// --registry_store_timeout (20secs).
	DefaultWriteTimeout = 20 * time.Second
)

// Config configures a Registrar.
type Config struct {
	// Store writes entries and applies them to Machine. Required.
	Store Store
	// Machine is the state machine Store applies entries to. Required.
	Machine *Machine
	// Strict refuses to recover an empty registry (--registry_strict).
	Strict bool
	// MaxBatch caps the operations per write (0: DefaultMaxBatch).
	MaxBatch int
	// WriteTimeout bounds one Append (0: DefaultWriteTimeout).
	WriteTimeout time.Duration
}

// Stats are the registrar's counters, for /metrics/snapshot
// (registrar/queued_operations, registrar/state_store_ms, ...).
type Stats struct {
	Queued         int           // operations waiting for the next write
	Writes         uint64        // successful writes
	FailedWrites   uint64        // failed writes
	Operations     uint64        // operations made durable
	Rejected       uint64        // operations that did not apply
	Unchanged      uint64        // re-admissions the registry already held as they were
	LastWrite      time.Duration // duration of the last write
	WriteTime      time.Duration // total duration of successful writes
	LargestBatch   int           // most operations in one write
	Recovered      bool          // Recover succeeded and no write failed since
	RegistryAgents int           // admitted agents
}

// Registrar applies operations to the registry through a Store, durably,
// batching what arrives while a write is in flight. Its methods are safe
// for concurrent use.
type Registrar struct {
	cfg Config

	mu        sync.Mutex
	queue     []item
	closed    bool
	recovered bool
	broken    error // why the registrar is not recovered (a failed write)
	stats     Stats
	timers    timers // write and fetch durations, for Metrics
	// The encoded registry's size at sizeVersion (registrySize's cache).
	size        int
	sizeVersion uint64
	sizeValid   bool

	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

// item is a queued operation or a recovery request.
type item struct {
	op   op
	enc  []byte // op encoded on the caller's goroutine
	info []byte // Readmit: the encoded AgentInfo (Operation.info)
	err  error  // encoding failed
	done func(error)

	rec *recoverReq
}

type recoverReq struct {
	ctx    context.Context
	master *mesos.MasterInfo
	reply  chan recoverResult
}

type recoverResult struct {
	reg *Registry
	err error
}

// New starts a registrar. Call Recover before applying operations.
func New(cfg Config) (*Registrar, error) {
	if cfg.Store == nil {
		return nil, errors.New("registrar: Config.Store is required")
	}
	if cfg.Machine == nil {
		return nil, errors.New("registrar: Config.Machine is required")
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	r := &Registrar{
		cfg:     cfg,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go r.loop()
	return r, nil
}

// Recover makes this registrar ready to write as the leading master: it
// waits until every committed entry is applied (a Barrier, which on a
// replicated store also makes sure this node leads), refuses an empty
// registry in strict mode (ErrEmptyRegistry), and makes master durable as
// the leading master (SetMaster), so the registry changes with every
// election. It returns a view of the registry as of that point. Call it again after a failed write or a regained leadership.
func (r *Registrar) Recover(ctx context.Context, master *mesos.MasterInfo) (*Registry, error) {
	if master.GetId() == "" {
		return nil, invalid("recover: master info id is missing")
	}
	req := &recoverReq{ctx: ctx, master: master, reply: make(chan recoverResult, 1)}
	if !r.enqueue(item{rec: req}) {
		return nil, ErrClosed
	}
	select {
	case res := <-req.reply:
		return res.reg, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Apply applies op and returns once the batch containing it is durable
// (nil), or with why it did not apply or the write failed. If ctx ends
// first Apply returns ctx.Err(), but op may still be written.
func (r *Registrar) Apply(ctx context.Context, op Operation) error {
	done := make(chan error, 1)
	r.Submit(op, func(err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Submit queues op and returns at once; done is called exactly once with
// Apply's result, from the registrar's goroutine (or a new one if the
// registrar is closed). done must not block: it delays every later write.
// This is the shape the master's event loop uses.
func (r *Registrar) Submit(op Operation, done func(error)) {
	it := item{op: op.o, enc: op.enc, info: op.info, done: done}
	if op.err != nil {
		it.err = fmt.Errorf("%w: encode %s: %v", ErrInvalid, op, op.err)
	}
	if !r.enqueue(it) {
		go done(ErrClosed)
	}
}

func (r *Registrar) enqueue(it item) bool {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false
	}
	r.queue = append(r.queue, it)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return true
}

// Registry returns a view of the current (durable) registry.
func (r *Registrar) Registry() *Registry { return r.cfg.Machine.Registry() }

// Stats returns the registrar's counters.
func (r *Registrar) Stats() Stats {
	r.mu.Lock()
	s := r.stats
	s.Queued = len(r.queue)
	s.Recovered = r.recovered
	r.mu.Unlock()
	s.RegistryAgents, _, _ = r.cfg.Machine.Counts()
	return s
}

// Close stops the registrar after the write in flight; queued operations
// fail with ErrClosed. It does not close the Store.
func (r *Registrar) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.stopped
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.stopped
	r.mu.Lock()
	q := r.queue
	r.queue = nil
	r.mu.Unlock()
	for _, it := range q {
		it.fail(ErrClosed)
	}
	return nil
}

func (it item) fail(err error) {
	if it.rec != nil {
		it.rec.reply <- recoverResult{err: err}
		return
	}
	it.done(err)
}

// loop is the registrar's goroutine: it owns the write path.
func (r *Registrar) loop() {
	defer close(r.stopped)
	for {
		select {
		case <-r.stop:
			return
		case <-r.wake:
		}
		for r.step() {
			select {
			case <-r.stop:
				return
			default:
			}
		}
	}
}

// step takes the next recovery request, or the next batch of operations
// (up to MaxBatch, stopping at a recovery request), and writes it. It
// reports whether it found work.
func (r *Registrar) step() bool {
	r.mu.Lock()
	if len(r.queue) == 0 || r.closed {
		r.mu.Unlock()
		return false
	}
	if rec := r.queue[0].rec; rec != nil {
		r.queue = r.queue[1:]
		r.mu.Unlock()
		r.recover(rec)
		return true
	}
	n := 0
	for n < len(r.queue) && n < r.cfg.MaxBatch && r.queue[n].rec == nil {
		n++
	}
	batch := r.queue[:n:n]
	r.queue = r.queue[n:]
	if len(r.queue) == 0 {
		r.queue = nil // let the backing array go
	}
	recovered, broken := r.recovered, r.broken
	r.mu.Unlock()

	if !recovered {
		err := ErrNotRecovered
		if broken != nil {
			err = fmt.Errorf("%w: a registry write failed: %v", ErrNotRecovered, broken)
		}
		for _, it := range batch {
			it.done(err)
		}
		return true
	}
	r.write(context.Background(), batch)
	return true
}

// write validates the items against the registry plus the items accepted
// before them, fails the rejected ones at once, writes the rest as one
// entry and reports the outcome to them.
func (r *Registrar) write(ctx context.Context, items []item) error {
	m := r.cfg.Machine
	var (
		accepted  []item
		enc       []byte
		rejected  uint64
		unchanged uint64
	)
	m.mu.RLock()
	ov := newOverlay(m.s)
	for _, it := range items {
		err := it.err
		if err == nil {
			err = validateShape(it.op)
		}
		if err == nil {
			err = check(ov, it.op)
		}
		if err != nil {
			it.done(err)
			rejected++
			continue
		}
		if ov.holds(it.op, it.info) {
			// Every agent re-registers with a new leader after a
			// failover; as Mesos, write only what changed. The durable
			// registry already says this, so the operation is done.
			it.done(nil)
			unchanged++
			continue
		}
		ov.record(it.op)
		accepted = append(accepted, it)
		enc = appendOp(enc, it.enc)
	}
	m.mu.RUnlock()

	r.mu.Lock()
	r.stats.Rejected += rejected
	r.stats.Unchanged += unchanged
	r.mu.Unlock()
	if len(accepted) == 0 {
		return nil
	}

	ctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	start := time.Now()
	err := r.cfg.Store.Append(ctx, encodeEntry(enc))
	cancel()
	took := time.Since(start)

	r.mu.Lock()
	r.stats.LastWrite = took
	if err != nil {
		r.stats.FailedWrites++
		r.recovered = false
		r.broken = err
	} else {
		r.stats.Writes++
		r.stats.WriteTime += took
		r.stats.Operations += uint64(len(accepted))
		r.stats.LargestBatch = max(r.stats.LargestBatch, len(accepted))
		r.timers.store.add(took)
	}
	r.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("registrar: write of %d operations failed: %w", len(accepted), err)
	}
	for _, it := range accepted {
		it.done(err)
	}
	return err
}

// recover serves one Recover call on the registrar's goroutine.
func (r *Registrar) recover(req *recoverReq) {
	res := func(reg *Registry, err error) { req.reply <- recoverResult{reg, err} }
	start := time.Now()
	if err := r.cfg.Store.Barrier(req.ctx); err != nil {
		res(nil, fmt.Errorf("registrar: recover: barrier: %w", err))
		return
	}
	// Fetching the registry is catching up with the log (the barrier):
	// what Mesos times as registrar/state_fetch_ms.
	r.mu.Lock()
	r.timers.fetch.add(time.Since(start))
	r.mu.Unlock()
	if r.cfg.Strict && r.cfg.Machine.Empty() {
		res(nil, ErrEmptyRegistry)
		return
	}
	op := SetMaster(req.master)
	// write calls done before it returns, with the rejection or the
	// write's outcome.
	var werr error
	r.write(req.ctx, []item{{op: op.o, enc: op.enc, err: op.err, done: func(err error) { werr = err }}})
	if werr != nil {
		res(nil, fmt.Errorf("registrar: recover: record leading master: %w", werr))
		return
	}
	r.mu.Lock()
	r.recovered, r.broken = true, nil
	r.mu.Unlock()
	res(r.cfg.Machine.Registry(), nil)
}
