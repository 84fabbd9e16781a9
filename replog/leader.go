package replog

import "sync"

// leadership fans Raft's leadership changes out to any number of
// subscribers. Each subscriber's channel holds only the latest value, so a
// slow reader never blocks Raft and never acts on a stale one.
type leadership struct {
	mu     sync.Mutex
	leader bool
	subs   []chan bool
}

func (l *leadership) set(v bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v == l.leader {
		return
	}
	l.leader = v
	for _, ch := range l.subs {
		sendLatest(ch, v)
	}
}

func (l *leadership) subscribe() <-chan bool {
	ch := make(chan bool, 1)
	l.mu.Lock()
	ch <- l.leader
	l.subs = append(l.subs, ch)
	l.mu.Unlock()
	return ch
}

// sendLatest replaces whatever ch holds with v (ch has capacity 1 and only
// set, under the lock, sends on it).
func sendLatest(ch chan bool, v bool) {
	select {
	case <-ch:
	default:
	}
	ch <- v
}
