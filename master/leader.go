package master

import (
	"context"
	"errors"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/quotapb"
)

// leaderPollInterval is how often a master re-reads who leads (to keep
// its redirects current) and retries a failed recovery.
const leaderPollInterval = 50 * time.Millisecond

// recoverTimeout bounds one recovery attempt (barrier, MasterInfo write).
const recoverTimeout = 30 * time.Second

// follow is the leader lifecycle: it runs beside the event loop while the
// master has an Election and turns leadership changes into state
// changes.
//
//   - Elected (IsLeader): Recover the registry (a Barrier, so every entry
//     of earlier terms is applied, then this master's MasterInfo is
//     committed), and only then make the state lead with epoch = the term
//     in which recovery happened. If the term moved meanwhile, recover
//     again.
//   - Deposed (or a registrar write failed: the registrar refuses writes
//     until recovered again): replace the state with a fresh follower
//     state. Streams close, schedulers and agents reconnect and are
//     redirected to the leader; the allocator forgets everything, so a
//     deposed master makes no offers.
//   - As a follower, publish the leader's address for 307 redirects.
func (m *Master) follow() {
	defer close(m.followDone)
	e := m.cfg.Election
	rec := m.cfg.Registrar.(Recoverer)
	log := m.cfg.Logger
	ch := e.LeaderCh()
	poll := time.NewTicker(leaderPollInterval)
	defer poll.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-m.stop
		cancel()
	}()

	leading, serving := false, false
	lastAddr := "\x00" // never a real address: publish on the first pass
	for {
		select {
		case <-m.stop:
			return
		case leading = <-ch:
		case <-m.regFailed:
			if serving {
				log.Error("a registry write failed; stepping down to recover the registry")
				m.depose("")
				serving = false
			}
		case <-poll.C:
		}
		if serving && (!leading || !e.IsLeader()) {
			addr := e.LeaderAddr()
			m.depose(addr)
			lastAddr = addr
			serving = false
		}
		if !serving {
			addr := e.LeaderAddr()
			if leading {
				// Elected but not yet serving: no redirect to ourselves;
				// requests wait (or get 503) until recovery completes.
				addr = ""
			}
			if addr != lastAddr {
				lastAddr = addr
				var info *mesos.MasterInfo
				if addr != "" {
					info = leaderInfo(addr, nil)
				}
				m.post(func(s *state, now time.Time) { s.setLeader(info) })
			}
		}
		if serving || !leading || !e.IsLeader() {
			continue
		}
		term := e.Term()
		rctx, rcancel := context.WithTimeout(ctx, recoverTimeout)
		reg, err := rec.Recover(rctx, m.cfg.info())
		rcancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrEmptyRegistry) {
				log.Error("refusing to serve", "err", err)
				m.fatal(err)
				return
			}
			log.Warn("registry recovery failed; will retry while leading", "err", err)
			continue
		}
		if !e.IsLeader() || e.Term() != term {
			continue // leadership moved while recovering: start over
		}
		err = m.call(ctx, func(s *state, now time.Time) error {
			s.elect(reg, term, now)
			return nil
		})
		if err != nil {
			return // stopped
		}
		serving = true
		lastAddr = ""
	}
}

// depose replaces the state with a fresh follower state that knows addr
// as the leader ("" if unknown).
func (m *Master) depose(addr string) {
	m.post(func(s *state, now time.Time) {
		s.depose(now)
		var leader *mesos.MasterInfo
		if addr != "" {
			leader = leaderInfo(addr, nil)
		}
		ns := s.successor(leader, now)
		ns.post = m.postFor(ns)
		m.s = ns
	})
}

// fatal reports a condition the master cannot serve through.
func (m *Master) fatal(err error) {
	if m.cfg.OnFatal != nil {
		go m.cfg.OnFatal(err)
	}
}

// info is this master's MasterInfo as recorded in the registry.
func (c *Config) info() *mesos.MasterInfo { return masterInfo(*c) }

// ErrEmptyRegistry is returned by a Recoverer in strict mode
// (--registry_strict) when the registry was never written.
var ErrEmptyRegistry = errors.New("registry is empty and --registry_strict refuses to start on an empty registry")

// failureWatch passes registrar completions through and signals failed
// when one reports ErrRegistryUnavailable (the write failed, not the
// operation): the master then steps down and recovers.
type failureWatch struct {
	Registrar
	failed chan struct{}
}

// Recover implements Recoverer (Config.validate checked the inner one).
func (w *failureWatch) Recover(ctx context.Context, info *mesos.MasterInfo) (*RecoveredRegistry, error) {
	return w.Registrar.(Recoverer).Recover(ctx, info)
}

func (w *failureWatch) wrap(done func(error)) func(error) {
	return func(err error) {
		if errors.Is(err, ErrRegistryUnavailable) {
			select {
			case w.failed <- struct{}{}:
			default:
			}
		}
		done(err)
	}
}

func (w *failureWatch) Admit(info *mesos.AgentInfo, principal string, done func(error)) {
	w.Registrar.Admit(info, principal, w.wrap(done))
}

func (w *failureWatch) Readmit(info *mesos.AgentInfo, principal string, done func(error)) {
	w.Registrar.Readmit(info, principal, w.wrap(done))
}

func (w *failureWatch) MarkUnreachable(id string, at time.Time, done func(error)) {
	w.Registrar.MarkUnreachable(id, at, w.wrap(done))
}

func (w *failureWatch) MarkReachable(info *mesos.AgentInfo, principal string, done func(error)) {
	w.Registrar.MarkReachable(info, principal, w.wrap(done))
}

func (w *failureWatch) Remove(id string, done func(error)) { w.Registrar.Remove(id, w.wrap(done)) }

func (w *failureWatch) UpdateWeights(ws []*mesos.WeightInfo, done func(error)) {
	w.Registrar.UpdateWeights(ws, w.wrap(done))
}

func (w *failureWatch) UpdateQuota(cs []*quotapb.QuotaConfig, done func(error)) {
	w.Registrar.UpdateQuota(cs, w.wrap(done))
}
