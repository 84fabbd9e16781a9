package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// weightsHistory drives the registry of the real masters through the
// operator API while they fail over: clients set role weights
// (UPDATE_WEIGHTS, answered once the registry write is durable) and read
// them back (GET_WEIGHTS), through any master (followers redirect to the
// leader). The recorded history is checked for linearizability with
// porcupine against a register per role (replog/linearizable_test.go
// checks every registry operation in process).
type weightsHistory struct {
	addrs []string
	start time.Time

	mu  sync.Mutex
	ops []porcupine.Operation
	wg  sync.WaitGroup
}

const historyRoles = 2

// weightsOp is an input: a write of weight to role, or a read.
type weightsOp struct {
	read   bool
	role   int
	weight float64
}

// weightsOut is a result: a write's outcome, or the weights read.
type weightsOut struct {
	unknown bool // the write may or may not have taken effect
	weights [historyRoles]float64
}

func startWeightsHistory(ctx context.Context, addrs []string, clients int, seed uint64) *weightsHistory {
	h := &weightsHistory{addrs: addrs, start: time.Now()}
	for id := range clients {
		rng := rand.New(rand.NewPCG(seed, uint64(id)))
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			hc := &http.Client{Timeout: 3 * time.Second}
			for ctx.Err() == nil {
				in := weightsOp{read: rng.IntN(2) == 0, role: rng.IntN(historyRoles), weight: float64(1 + rng.IntN(4))}
				addr := addrs[rng.IntN(len(addrs))]
				op := porcupine.Operation{ClientId: id, Input: in, Call: h.now()}
				out, ok := h.do(hc, addr, in)
				op.Return = h.now()
				if !ok {
					if in.read {
						time.Sleep(20 * time.Millisecond) // a failed read says nothing; back off a little
						continue
					}
					out.unknown = true
					op.Return = math.MaxInt64
				}
				op.Output = out
				h.mu.Lock()
				h.ops = append(h.ops, op)
				h.mu.Unlock()
				time.Sleep(5 * time.Millisecond) // pacing: the masters share two cores with the rest
			}
		}()
	}
	return h
}

func (h *weightsHistory) now() int64 { return int64(time.Since(h.start)) }

func roleName(i int) string { return fmt.Sprintf("fo-r%d", i) }

// do performs one call; false when it failed (no answer, or not 200).
func (h *weightsHistory) do(hc *http.Client, addr string, in weightsOp) (weightsOut, bool) {
	var body any = map[string]any{"type": "GET_WEIGHTS"}
	if !in.read {
		body = map[string]any{"type": "UPDATE_WEIGHTS", "update_weights": map[string]any{
			"weight_infos": []map[string]any{{"role": roleName(in.role), "weight": in.weight}}}}
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return weightsOut{}, false
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return weightsOut{}, false
	}
	if !in.read {
		return weightsOut{}, true
	}
	var r struct {
		GetWeights struct {
			WeightInfos []struct {
				Role   string  `json:"role"`
				Weight float64 `json:"weight"`
			} `json:"weight_infos"`
		} `json:"get_weights"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return weightsOut{}, false
	}
	var out weightsOut
	for i := range historyRoles {
		out.weights[i] = 1
	}
	for _, w := range r.GetWeights.WeightInfos {
		for i := range historyRoles {
			if w.Role == roleName(i) {
				out.weights[i] = w.Weight
			}
		}
	}
	return out, true
}

var weightsModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{[historyRoles]float64{1, 1}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.([historyRoles]float64), input.(weightsOp), output.(weightsOut)
		if in.read {
			if out.weights == s {
				return []any{s}
			}
			return nil
		}
		next := s
		next[in.role] = in.weight
		if out.unknown {
			return []any{s, next}
		}
		return []any{next}
	},
	DescribeOperation: func(input, output any) string { return fmt.Sprintf("%+v -> %+v", input, output) },
}

// check stops nothing (the caller cancels ctx first), waits for the
// clients and checks the history.
func (h *weightsHistory) check(t *testing.T) {
	t.Helper()
	h.wg.Wait()
	end := h.now() + 1
	var writes, unknown, reads int
	for i := range h.ops {
		switch {
		case h.ops[i].Input.(weightsOp).read:
			reads++
		case h.ops[i].Output.(weightsOut).unknown:
			h.ops[i].Return = end
			unknown++
		default:
			writes++
		}
	}
	t.Logf("registry history (weights through the operator API): %d writes, %d with unknown outcome, %d reads", writes, unknown, reads)
	if writes == 0 || reads == 0 {
		t.Errorf("registry history too thin: %d writes, %d reads", writes, reads)
		return
	}
	switch porcupine.CheckOperationsTimeout(weightsModel.ToModel(), h.ops, time.Minute) {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Error("porcupine timed out checking the registry history")
	default:
		t.Error("the registry history (weights) across the failovers is not linearizable")
	}
}
