package sim

import (
	"container/heap"
	"time"

	"mezzo/internal/clock"
)

// shard is an event loop owning the state of a set of agents: every
// event, timer and call result of those agents runs as a closure on its
// goroutine. Timers live in a heap driven by one clock.Timer, so
// thousands of pending task completions and retries cost no goroutines.
type shard struct {
	clk   clock.Clock
	q     *fifo[func()]
	stop  chan struct{}
	done  chan struct{}
	heap  timerHeap
	timer clock.Timer
	seq   uint64
}

func newShard(clk clock.Clock) *shard {
	return &shard{clk: clk, q: newFIFO[func()](), stop: make(chan struct{}), done: make(chan struct{})}
}

// post runs f on the loop. Safe from any goroutine; never blocks. Closures
// posted after the loop stopped are dropped.
func (s *shard) post(f func()) { s.q.push(f) }

// loopTimer is a pending callback on a shard's heap. Only the loop
// touches it.
type loopTimer struct {
	when  time.Time
	seq   uint64 // FIFO among equal deadlines
	fn    func()
	sh    *shard
	index int // in the heap; -1 once fired or stopped
}

// Stop cancels the timer (loop only); nil-safe and idempotent.
func (t *loopTimer) Stop() {
	if t == nil || t.index < 0 {
		return
	}
	heap.Remove(&t.sh.heap, t.index)
}

// after schedules fn on the loop after d (loop only).
func (s *shard) after(d time.Duration, fn func()) *loopTimer {
	s.seq++
	t := &loopTimer{when: s.clk.Now().Add(d), seq: s.seq, fn: fn, sh: s}
	heap.Push(&s.heap, t)
	return t
}

// run is the loop. It ends when stop is closed.
func (s *shard) run() {
	defer close(s.done)
	s.timer = s.clk.NewTimer(time.Hour)
	defer s.timer.Stop()
	var batch []func()
	for {
		batch = s.q.drain(batch)
		for i, f := range batch {
			f()
			batch[i] = nil
		}
		s.fireDue()
		var timerC <-chan time.Time
		if len(s.heap) > 0 {
			d := s.heap[0].when.Sub(s.clk.Now())
			if d <= 0 {
				continue // came due meanwhile
			}
			s.timer.Reset(d)
			timerC = s.timer.C()
		}
		select {
		case <-s.stop:
			return
		case <-s.q.wake:
		case <-timerC:
		}
	}
}

// fireDue runs every timer whose deadline has passed, in deadline order.
func (s *shard) fireDue() {
	now := s.clk.Now()
	for len(s.heap) > 0 {
		t := s.heap[0]
		if t.when.After(now) {
			return
		}
		heap.Pop(&s.heap)
		t.fn()
	}
}

// timerHeap orders loop timers by deadline.
type timerHeap []*loopTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*loopTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
