package replog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/master/registrar"
)

// TestRegistrarLinearizable checks the registry's history for
// linearizability across leader crashes (issue 11 §1): three Raft nodes
// with the real registrar on top, clients admitting, readmitting, marking
// unreachable and reachable, removing agents, updating weights and reading
// the registry through whichever node leads, while the leader is shut down
// abruptly and restarted again and again. The history (invocation and
// response times, results, registry reads) is checked with porcupine
// against a sequential model of the registry. A write whose outcome is
// unknown (the leader died under it) may or may not have happened: the
// model allows both, at any point after its invocation.
//
// MEZZO_FAILOVER_SEED replays a run (the seed is logged);
// MEZZO_REGISTRAR_KILLS (default 4) sets the number of crashes.
func TestRegistrarLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes Raft leaders for several seconds")
	}
	seed := envSeed(t, "MEZZO_FAILOVER_SEED", uint64(time.Now().UnixNano()))
	kills := int(envSeed(t, "MEZZO_REGISTRAR_KILLS", 4))
	t.Logf("seed %d (MEZZO_FAILOVER_SEED=%d replays the schedule), %d leader crashes", seed, seed, kills)
	rng := rand.New(rand.NewPCG(seed, ^seed))

	c := newLinCluster(t)
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }

	var (
		mu      sync.Mutex
		history []porcupine.Operation
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const clients = 3
	for id := range clients {
		crng := rand.New(rand.NewPCG(rng.Uint64(), uint64(id)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				in := randomRegOp(crng)
				op, ok := c.run(in, now)
				if !ok {
					time.Sleep(10 * time.Millisecond) // no leader to ask yet; not part of the history
					continue
				}
				op.ClientId = id
				mu.Lock()
				history = append(history, op)
				mu.Unlock()
			}
		}()
	}

	terms := map[uint64]bool{}
	for k := range kills {
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond) // seeded moment
		i := c.awaitLeader(t)
		terms[c.node(i).log.Term()] = true
		c.crash(i)
		time.Sleep(time.Duration(100+rng.IntN(600)) * time.Millisecond) // down for a seeded while
		c.restart(t, i)
		t.Logf("crash %d: node %d (leader) shut down and restarted", k+1, i)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	i := c.awaitLeader(t)
	terms[c.node(i).log.Term()] = true

	// Operations whose outcome is unknown stay open to the end.
	end := now() + 1
	var ok, failed, unknown, reads int
	for j := range history {
		out := history[j].Output.(regOut)
		switch {
		case out.unknown:
			history[j].Return = end
			unknown++
		case history[j].Input.(regOp).kind == opRead:
			reads++
		case out.err == "":
			ok++
		default:
			failed++
		}
	}
	t.Logf("history: %d operations (%d applied, %d refused by the registry, %d outcome unknown, %d reads) over %d leader terms",
		len(history), ok, failed, unknown, reads, len(terms))
	if ok == 0 || reads == 0 || len(terms) < 2 {
		t.Fatalf("history too thin to mean anything: %d applied, %d reads, %d terms", ok, reads, len(terms))
	}
	res, _ := porcupine.CheckOperationsVerbose(registryModel.ToModel(), history, time.Minute)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Fatal("porcupine timed out checking the history")
	default:
		t.Fatalf("the registry history is not linearizable (seed %d)", seed)
	}
}

func envSeed(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// The model: four agents and two roles keep the state space small.
const (
	linAgents = 4
	linRoles  = 2
)

type opKind uint8

const (
	opAdmit opKind = iota
	opReadmit
	opMarkUnreachable
	opMarkReachable
	opRemove
	opWeight
	opRead
)

func (k opKind) String() string {
	return [...]string{"Admit", "Readmit", "MarkUnreachable", "MarkReachable", "Remove", "UpdateWeights", "Read"}[k]
}

// regOp is an operation's input; regOut its result.
type regOp struct {
	kind   opKind
	agent  int
	role   int
	weight float64
}

type regOut struct {
	err     string // "" or the registrar's refusal (see classify)
	unknown bool   // the write failed in a way that leaves its outcome open
	view    regState
}

// regState is the registry as the model sees it (a value type).
type regState struct {
	status [linAgents]registrar.AgentStatus
	weight [linRoles]float64 // 0 means the default, 1
}

func randomRegOp(r *rand.Rand) regOp {
	k := opKind(r.IntN(int(opRead) + 1))
	return regOp{kind: k, agent: r.IntN(linAgents), role: r.IntN(linRoles), weight: float64(1 + r.IntN(4))}
}

func linAgentID(i int) string { return fmt.Sprintf("lin-S%d", i) }

// step is the registry's sequential specification for one write: the
// refusal it must give, or the new state.
func step(s regState, in regOp) (regState, string) {
	st := s.status[in.agent]
	switch in.kind {
	case opAdmit:
		switch st {
		case registrar.AgentAdmitted, registrar.AgentUnreachable:
			return s, "admitted"
		case registrar.AgentGone:
			return s, "gone"
		}
		s.status[in.agent] = registrar.AgentAdmitted
	case opReadmit, opMarkReachable:
		if st == registrar.AgentGone {
			return s, "gone"
		}
		s.status[in.agent] = registrar.AgentAdmitted
	case opMarkUnreachable:
		switch st {
		case registrar.AgentUnknown:
			return s, "unknown"
		case registrar.AgentUnreachable:
			return s, "unreachable"
		case registrar.AgentGone:
			return s, "gone"
		}
		s.status[in.agent] = registrar.AgentUnreachable
	case opRemove:
		if st == registrar.AgentUnknown {
			return s, "unknown"
		}
		s.status[in.agent] = registrar.AgentGone
	case opWeight:
		s.weight[in.role] = in.weight
		if in.weight == 1 {
			s.weight[in.role] = 0
		}
	}
	return s, ""
}

var registryModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(regState), input.(regOp), output.(regOut)
		if in.kind == opRead {
			if out.view == s {
				return []interface{}{s}
			}
			return nil
		}
		next, refusal := step(s, in)
		if out.unknown {
			return []interface{}{s, next} // it happened, or it did not
		}
		if refusal != out.err {
			return nil
		}
		return []interface{}{next}
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regOp), output.(regOut)
		return fmt.Sprintf("%v(agent %d, role %d, weight %g) -> %+v", in.kind, in.agent, in.role, in.weight, out)
	},
}

// classify maps a registrar result to the model's vocabulary.
func classify(err error) regOut {
	switch {
	case err == nil:
		return regOut{}
	case errors.Is(err, registrar.ErrAlreadyAdmitted):
		return regOut{err: "admitted"}
	case errors.Is(err, registrar.ErrGone):
		return regOut{err: "gone"}
	case errors.Is(err, registrar.ErrUnknownAgent):
		return regOut{err: "unknown"}
	case errors.Is(err, registrar.ErrAlreadyUnreachable):
		return regOut{err: "unreachable"}
	default:
		return regOut{unknown: true}
	}
}

// linCluster is three nodes on fixed loopback ports, so a crashed node
// restarts at the same address with its directory.
type linCluster struct {
	t    *testing.T
	cfgs []Config

	mu    sync.Mutex
	nodes []*node
	regs  []*registrar.Registrar // a recovered registrar per leading node
}

func newLinCluster(t *testing.T) *linCluster {
	c := &linCluster{t: t}
	var peers []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, ln.Addr().String())
		ln.Close()
	}
	for _, p := range peers {
		c.cfgs = append(c.cfgs, Config{Dir: t.TempDir(), Peers: peers, BindAddr: p, Bootstrap: true,
			HeartbeatTimeout: 150 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond,
			LogOutput: io.Discard, LogLevel: "error"})
	}
	c.nodes = make([]*node, 3)
	c.regs = make([]*registrar.Registrar, 3)
	for i := range c.cfgs {
		c.restart(t, i)
	}
	return c
}

func (c *linCluster) node(i int) *node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

func (c *linCluster) restart(t *testing.T, i int) {
	n := openNode(t, c.cfgs[i])
	c.mu.Lock()
	c.nodes[i] = n
	c.mu.Unlock()
}

// crash shuts node i down with no leadership transfer: Raft stops, the
// transport closes, in-flight writes fail.
func (c *linCluster) crash(i int) {
	c.mu.Lock()
	n, r := c.nodes[i], c.regs[i]
	c.nodes[i], c.regs[i] = nil, nil
	c.mu.Unlock()
	if r != nil {
		r.Close()
	}
	n.log.Close()
}

func (c *linCluster) leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.nodes {
		if n != nil && n.log.IsLeader() {
			return i
		}
	}
	return -1
}

func (c *linCluster) awaitLeader(t *testing.T) int {
	i := -1
	eventually(t, "a leader", func() bool { i = c.leader(); return i >= 0 })
	return i
}

// registrar returns the leading node's registrar, recovering one if
// needed; false when no node leads.
func (c *linCluster) registrar(ctx context.Context) (*registrar.Registrar, int, bool) {
	i := c.leader()
	if i < 0 {
		return nil, -1, false
	}
	c.mu.Lock()
	n, r := c.nodes[i], c.regs[i]
	c.mu.Unlock()
	if n == nil {
		return nil, -1, false
	}
	if r == nil {
		nr, err := registrar.New(registrar.Config{Store: n.log, Machine: n.machine})
		if err != nil {
			return nil, -1, false
		}
		if _, err := nr.Recover(ctx, masterInfo(n.log.ID())); err != nil {
			nr.Close()
			return nil, -1, false
		}
		c.mu.Lock()
		if c.nodes[i] != n || c.regs[i] != nil {
			c.mu.Unlock()
			nr.Close()
			return nil, -1, false
		}
		c.regs[i] = nr
		c.mu.Unlock()
		r = nr
	}
	return r, i, true
}

// drop forgets a registrar after a failed write: the next one recovers
// anew (Recover's contract after a failed write or lost leadership).
func (c *linCluster) drop(i int, r *registrar.Registrar) {
	c.mu.Lock()
	if c.regs[i] == r {
		c.regs[i] = nil
	} else {
		r = nil
	}
	c.mu.Unlock()
	if r != nil {
		r.Close()
	}
}

// run performs one operation through the leader and returns it as a
// history entry; false if no leader could take it (nothing was invoked).
func (c *linCluster) run(in regOp, now func() int64) (porcupine.Operation, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r, i, ok := c.registrar(ctx)
	if !ok {
		return porcupine.Operation{}, false
	}
	op := porcupine.Operation{Input: in, Call: now()}
	if in.kind == opRead {
		// A read is a Recover: a barrier, then the registry as of a write
		// of this node's MasterInfo; a read that fails is left out.
		reg, err := r.Recover(ctx, masterInfo(fmt.Sprintf("reader-%d", i)))
		op.Return = now()
		if err != nil {
			c.drop(i, r)
			return porcupine.Operation{}, false
		}
		var v regState
		for a := range linAgents {
			v.status[a] = reg.Status(linAgentID(a))
		}
		w := reg.Weights()
		for role := range linRoles {
			v.weight[role] = w[fmt.Sprintf("role%d", role)]
		}
		op.Output = regOut{view: v}
		return op, true
	}
	err := r.Apply(ctx, c.operation(in))
	op.Return = now()
	out := classify(err)
	if out.unknown {
		op.Return = math.MaxInt64
		c.drop(i, r)
	}
	op.Output = out
	return op, true
}

func (c *linCluster) operation(in regOp) registrar.Operation {
	id := linAgentID(in.agent)
	info := &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String(id)}, Hostname: proto.String(id), Port: proto.Int32(5051)}
	switch in.kind {
	case opAdmit:
		return registrar.Admit(info, "")
	case opReadmit:
		return registrar.Readmit(info, "")
	case opMarkUnreachable:
		return registrar.MarkUnreachable(id, time.Unix(1, 0))
	case opMarkReachable:
		return registrar.MarkReachable(info, "")
	case opRemove:
		return registrar.Remove(id, time.Unix(2, 0))
	default:
		return registrar.UpdateWeights([]*mesos.WeightInfo{{Role: proto.String(fmt.Sprintf("role%d", in.role)), Weight: proto.Float64(in.weight)}})
	}
}
