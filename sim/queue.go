package sim

import "sync"

// fifo is an unbounded multi-producer queue drained by one consumer. Event
// readers and posters push into it without ever blocking, so an event loop
// that posts to itself (or to the posters, which post back) cannot
// deadlock.
type fifo[T any] struct {
	mu    sync.Mutex
	items []T
	wake  chan struct{} // 1-buffered: "there may be items"
}

func newFIFO[T any]() *fifo[T] { return &fifo[T]{wake: make(chan struct{}, 1)} }

// push appends v and wakes the consumer.
func (q *fifo[T]) push(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drain takes every queued item, oldest first.
func (q *fifo[T]) drain(buf []T) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	buf = append(buf[:0], q.items...)
	clear(q.items)
	q.items = q.items[:0]
	return buf
}

// len reports how many items are queued.
func (q *fifo[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// pop takes the oldest item, for queues with several consumers. A consumer
// that leaves items behind passes the wake-up on, so that a burst spreads
// over every idle consumer.
func (q *fifo[T]) pop() (T, bool) {
	q.mu.Lock()
	var zero T
	if len(q.items) == 0 {
		q.mu.Unlock()
		return zero, false
	}
	v := q.items[0]
	q.items[0] = zero
	q.items = q.items[1:]
	more := len(q.items) > 0
	if !more {
		q.items = nil // let a burst's backing array go
	}
	q.mu.Unlock()
	if more {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return v, true
}
