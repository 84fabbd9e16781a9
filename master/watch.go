package master

import (
	"sync"

	"mezzo/api/masterpb"
)

// watcherBuffer is how many operator events may wait for a subscriber.
const watcherBuffer = 1024

// watcher is one operator-stream subscriber.
type watcher struct {
	ch       chan *masterpb.Event
	doneOnce sync.Once
	done     chan struct{}
}

func newWatcher() *watcher {
	return &watcher{ch: make(chan *masterpb.Event, watcherBuffer), done: make(chan struct{})}
}

func (w *watcher) gone() <-chan struct{} { return w.done }

// dropWatcher closes a subscriber's channel; idempotent.
func (s *state) dropWatcher(w *watcher) {
	if _, ok := s.watchers[w]; !ok {
		return
	}
	delete(s.watchers, w)
	close(w.ch)
	w.doneOnce.Do(func() { close(w.done) })
}
