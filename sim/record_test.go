package sim

import (
	"testing"
	"time"
)

func TestShardTimersFireInOrder(t *testing.T) {
	fc := newTestClock()
	sh := newShard(fc)
	go sh.run()
	defer func() { close(sh.stop); <-sh.done }()
	got := make(chan int, 10)
	ready := make(chan struct{})
	sh.post(func() {
		sh.after(3e9, func() { got <- 3 })
		sh.after(1e9, func() { got <- 1 })
		stopped := sh.after(2e9, func() { got <- 2 })
		sh.after(1e9, func() { got <- 11 }) // same deadline: FIFO
		stopped.Stop()
		stopped.Stop() // idempotent
		close(ready)
	})
	<-ready
	var order []int
	deadline := time.Now().Add(30 * time.Second)
	for len(order) < 3 {
		select {
		case v := <-got:
			order = append(order, v)
			continue
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fired %v, want [1 11 3]", order)
		}
		fc.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond) // poll interval, bounded by the deadline
	}
	if order[0] != 1 || order[1] != 11 || order[2] != 3 {
		t.Fatalf("fired %v, want [1 11 3]", order)
	}
}
