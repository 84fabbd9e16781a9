package containerizer

// maxTerminated bounds how many ended containers a containerizer remembers
// for late Wait calls.
const maxTerminated = 1024

// Terminated remembers the most recently ended containers by ID for late
// Wait and Status calls, forgetting the oldest beyond a fixed bound. Every
// containerizer (Mesos and Docker) keeps one. The zero value is empty and
// ready; it is not safe for concurrent use: callers guard it with their own
// lock.
type Terminated[T any] struct {
	byID  map[string]T
	order []string // IDs, oldest first
}

// Add records the ended container id, dropping the oldest one when full.
func (t *Terminated[T]) Add(id string, v T) {
	if t.byID == nil {
		t.byID = map[string]T{}
	}
	t.byID[id] = v
	t.order = append(t.order, id)
	for len(t.order) > maxTerminated {
		delete(t.byID, t.order[0])
		t.order = t.order[1:]
	}
}

// Get returns the ended container id, if it is still remembered.
func (t *Terminated[T]) Get(id string) (T, bool) {
	v, ok := t.byID[id]
	return v, ok
}

// Has says whether the ended container id is still remembered.
func (t *Terminated[T]) Has(id string) bool {
	_, ok := t.byID[id]
	return ok
}
