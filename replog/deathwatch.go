package replog

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// Leader death watch. Raft learns that its leader is gone only when no
// heartbeat arrived for HeartbeatTimeout (randomised up to twice that), so
// a killed leader costs at least that long before anyone campaigns. Yet
// when the leader's process dies, its host tells us at once: every TCP
// connection to it is reset and its Raft port refuses new ones. Each
// follower therefore keeps one idle connection open to the leader's Raft
// port; when it ends, the follower dials again, and only a refused
// connection (nothing listens there any more: the process is gone, not
// merely slow or cut off) makes it shorten its heartbeat and election
// timeouts to FastElectionTimeout until a new leader is known, and stop
// naming the dead leader (Leader), so that its master holds requests for
// the next leader instead of redirecting them to a dead address. A leader
// that is partitioned or paused keeps its port open, so nothing changes
// for it: Raft's normal timeouts apply, and the fast path can never
// depose a live leader.

// probeDialTimeout bounds a dial to the leader's Raft port; a dial that
// times out (a partition) proves nothing and is simply retried.
const probeDialTimeout = time.Second

// watchLeaderProcess runs until the log closes.
func (l *Log) watchLeaderProcess() {
	obs := make(chan raft.Observation, 8)
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	l.raft.RegisterObserver(o)
	defer l.raft.DeregisterObserver(o)

	var hastened *hastening
	for {
		addr, id := l.raft.LeaderWithID()
		if hastened != nil && (addr != "" && addr != hastened.dead || time.Now().After(hastened.until)) {
			hastened.restore(l)
			hastened = nil
		}
		if addr == "" || string(id) == l.cfg.ID {
			select {
			case <-obs:
			case <-l.closed:
				return
			case <-time.After(l.cfg.HeartbeatTimeout):
			}
			continue
		}
		conn, err := net.DialTimeout("tcp", string(addr), probeDialTimeout)
		if err != nil {
			if isRefused(err) && hastened == nil {
				hastened = l.hasten(addr)
			}
			// Refused or not, wait for news before probing again.
			select {
			case <-obs:
			case <-l.closed:
				return
			case <-time.After(l.cfg.FastElectionTimeout):
			}
			continue
		}
		ended := make(chan struct{})
		go func() {
			// The leader never writes to this connection; a read returns
			// only when it ends.
			_, _ = io.Copy(io.Discard, conn)
			close(ended)
		}()
		select {
		case <-ended:
			// Dial again at once: refused means the process is gone.
		case <-obs:
		case <-l.closed:
			conn.Close()
			<-ended
			return
		}
		conn.Close()
		<-ended
	}
}

// hastening is a period of shortened Raft timeouts after the leader at
// dead was found gone.
type hastening struct {
	dead  raft.ServerAddress
	orig  raft.ReloadableConfig
	until time.Time
}

// hasten marks the leader at dead as gone (Leader stops naming it) and
// shortens this node's heartbeat and election timeouts so that it notices
// the missing leader and campaigns within FastElectionTimeout (the other
// followers do the same from their own watch).
func (l *Log) hasten(dead raft.ServerAddress) *hastening {
	l.deadLeader.Store(&dead)
	orig := l.raft.ReloadableConfig()
	fast := orig
	fast.HeartbeatTimeout = min(orig.HeartbeatTimeout, l.cfg.FastElectionTimeout)
	fast.ElectionTimeout = min(orig.ElectionTimeout, l.cfg.FastElectionTimeout)
	if err := l.raft.ReloadConfig(fast); err != nil {
		l.logger.Warn("cannot shorten the election timeouts", "err", err)
		return &hastening{dead: dead, orig: orig, until: time.Now().Add(orig.ElectionTimeout)}
	}
	l.logger.Info("the leader's process is gone; campaigning early", "leader", dead, "timeout", fast.HeartbeatTimeout)
	l.hastened.Add(1)
	// Restore even if no leader emerges soon (say the rest of the group
	// is down too), so a lasting outage runs on the configured timeouts.
	return &hastening{dead: dead, orig: orig, until: time.Now().Add(10 * orig.ElectionTimeout)}
}

func (h *hastening) restore(l *Log) {
	l.deadLeader.Store(nil)
	if err := l.raft.ReloadConfig(h.orig); err != nil {
		l.logger.Warn("cannot restore the election timeouts", "err", err)
	}
}

// isRefused reports whether a dial failed because nothing listens on the
// port (the host answered with a reset).
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
