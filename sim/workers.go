package sim

import "sync"

// workers runs functions on reused goroutines. Each connection attempt
// of an agent runs on a goroutine of its own for as long as its stream
// lives; a new goroutine starts with a small stack that grew and was
// copied several times on every attempt (HTTP client, event decoding), a
// tenth of the emulation's CPU in a 40,000-agent re-registration storm.
// A goroutine whose function returned waits for the next one instead.
type workers struct {
	mu      sync.Mutex
	idle    []chan func()
	stopped bool
	wg      sync.WaitGroup
}

// run runs f on an idle worker, or on a new one if none is idle.
func (w *workers) run(f func()) {
	w.mu.Lock()
	if n := len(w.idle); n > 0 && !w.stopped {
		ch := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		ch <- f // buffered: the worker is idle, this never blocks
		return
	}
	w.wg.Add(1)
	w.mu.Unlock()
	go w.loop(make(chan func(), 1), f)
}

func (w *workers) loop(ch chan func(), f func()) {
	defer w.wg.Done()
	for {
		f()
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		w.idle = append(w.idle, ch)
		w.mu.Unlock()
		var ok bool
		if f, ok = <-ch; !ok {
			return
		}
	}
}

// stop ends the idle workers, and the busy ones once their function
// returns, and waits for them. run must not be called after stop.
func (w *workers) stop() {
	w.mu.Lock()
	w.stopped = true
	for _, ch := range w.idle {
		close(ch)
	}
	w.idle = nil
	w.mu.Unlock()
	w.wg.Wait()
}
