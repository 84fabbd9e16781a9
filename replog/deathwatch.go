package replog

import (
	"errors"
	"io"
	"net"
	"slices"
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
// merely slow or cut off) counts as the leader's death. Then the follower
// stops naming the dead leader (Leader), so that its master holds
// requests for the next leader instead of redirecting them to a dead
// address, and the surviving voters campaign in turn: the first in ID
// order at once, each next one CampaignStagger later if by then nobody
// has campaigned (the first may be dead too) and enough voters may remain
// to elect it. Once anyone has, Raft's own timeouts take over, so a
// campaign in progress is never disrupted.
//
// A follower campaigns by sending itself Raft's TimeoutNow, the message a
// leader uses to hand leadership over: the follower campaigns at once,
// and the others grant their vote although they still remember the dead
// leader. Raft's votes and terms keep elections safe whoever starts them;
// what this adds is only when a campaign starts. Shortening the heartbeat
// timeout instead (as an earlier version did) would do the same, but Raft
// requires the leader lease to be no longer than the heartbeat timeout,
// so the lease had to be as short as the early campaign: a leader starved
// of CPU by the re-registration storm after a failover then lost its
// lease and stepped down again and again.
//
// A leader that is partitioned or paused keeps its port open, so nothing
// changes for it: Raft's normal timeouts apply, and the fast path can
// never depose a live leader.

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
		if addr != "" {
			l.logState.markFormed() // peers that fail from now on are news
		}
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
			case <-time.After(l.cfg.CampaignStagger):
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

// hastening is the period after the leader at dead was found gone,
// until another leader is known.
type hastening struct {
	dead  raft.ServerAddress
	term  uint64 // this node's term when the death was found
	until time.Time
	// stop ends the campaign goroutine early (a new leader is known).
	stop chan struct{}
}

// hasten marks the leader at dead as gone (Leader stops naming it) and
// starts this node's turn to campaign (see the comment at the top).
func (l *Log) hasten(dead raft.ServerAddress) *hastening {
	l.deadLeader.Store(&dead)
	h := &hastening{dead: dead, term: l.raft.CurrentTerm(), stop: make(chan struct{}),
		// Name the dead leader no longer than an election without the
		// watch would take, in case no leader emerges (the rest of the
		// group is down too).
		until: time.Now().Add(2*l.cfg.HeartbeatTimeout + l.cfg.ElectionTimeout)}
	go l.campaignInTurn(h)
	return h
}

// campaignInTurn waits for this node's turn among the surviving voters and
// campaigns if by then nobody has (this node's term has not moved) and no
// leader is known.
func (l *Log) campaignInTurn(h *hastening) {
	conf := l.raft.GetConfiguration()
	if conf.Error() != nil {
		return
	}
	var voters []string
	all := 0
	for _, s := range conf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		all++
		if s.Address != h.dead {
			voters = append(voters, string(s.ID))
		}
	}
	slices.Sort(voters)
	turn := slices.Index(voters, l.cfg.ID)
	if turn < 0 {
		return // not a voter
	}
	// A voter campaigns in its turn in case those before it are dead
	// too; if they were, it could win only with a quorum of the rest.
	// Where it could not (the second of three), it leaves the election to
	// the first, or to Raft's timeouts: campaigning anyway when the
	// first's campaign was merely slow to be seen split the vote, and the
	// next round came an election timeout later (0.8-1.1 s elections).
	if quorum := all/2 + 1; turn > all-1-quorum {
		return
	}
	select {
	case <-time.After(time.Duration(turn) * l.cfg.CampaignStagger):
	case <-h.stop:
		return
	case <-l.closed:
		return
	}
	if l.raft.State() != raft.Follower || l.raft.CurrentTerm() != h.term {
		return
	}
	if addr, _ := l.raft.LeaderWithID(); addr != "" && addr != h.dead {
		return
	}
	self := l.trans.LocalAddr()
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersionMax,
		ID:              []byte(l.cfg.ID),
		Addr:            l.trans.EncodePeer(raft.ServerID(l.cfg.ID), self),
	}}
	if err := l.trans.TimeoutNow(raft.ServerID(l.cfg.ID), self, req, &raft.TimeoutNowResponse{}); err != nil {
		l.logger.Warn("cannot campaign early", "err", err)
		return
	}
	l.logger.Info("the leader's process is gone; campaigning", "leader", h.dead, "turn", turn)
	l.hastened.Add(1)
}

func (h *hastening) restore(l *Log) {
	close(h.stop)
	l.deadLeader.Store(nil)
}

// isRefused reports whether a dial failed because nothing listens on the
// port (the host answered with a reset).
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
