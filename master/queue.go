package master

import "sync"

// queue is an unbounded FIFO with a wake-up channel: the event loop pushes
// without ever blocking, and one consumer goroutine drains it. It is the
// only place in the package that takes a lock (a leaf utility).
type queue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	limit  int           // 0 = unbounded; beyond it push fails
	ready  chan struct{} // holds a token while items are pending or closed
}

func newQueue[T any](limit int) *queue[T] {
	return &queue[T]{ready: make(chan struct{}, 1), limit: limit}
}

// push appends v; it reports false if the queue is closed or full.
func (q *queue[T]) push(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || (q.limit > 0 && len(q.items) >= q.limit) {
		return false
	}
	q.items = append(q.items, v)
	q.signalLocked()
	return true
}

func (q *queue[T]) signalLocked() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// close marks the end of the queue; items already pushed stay readable.
func (q *queue[T]) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.signalLocked()
	}
}

// drain takes every pending item and reports whether the queue is closed.
func (q *queue[T]) drain() ([]T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items, q.closed
}

func (q *queue[T]) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// length is the number of items waiting to be drained.
func (q *queue[T]) length() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// pending reports whether items are waiting to be drained.
func (q *queue[T]) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) > 0
}
