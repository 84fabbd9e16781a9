package httpapi

import (
	"fmt"
	"runtime"
	"sync"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
)

// Calls are decoded on a few long-lived goroutines rather than on the
// request's own. Go's HTTP/2 server runs each request on a new goroutine
// with a small stack, and decoding a deeply nested message (an agent's
// SUBSCRIBE, with its frameworks, executors and tasks) grew and copied
// that stack several times: during a 40,000-agent re-registration storm
// the copying was 6% of the new leader's CPU, more than the hand-off to
// a goroutine whose stack has long been grown.
//
// A decoder never blocks but to hand back its result (into a buffered
// channel), so callers waiting for one always get their turn.

// decodeJob is one message to decode.
type decodeJob struct {
	mt   codec.MediaType
	body []byte
	m    proto.Message
	done chan error
}

var (
	decodeJobs  chan decodeJob
	decodeStart sync.Once
	// donePool recycles the reply channels (one per call otherwise).
	donePool = sync.Pool{New: func() any { return make(chan error, 1) }}
)

// unmarshal decodes body into m like codec.Unmarshal, on a decoding
// goroutine. Decoding only computes, so one goroutine per processor is
// enough, and a caller waits for a free one rather than decode on its own
// stack (under load they are all busy most of the time).
func unmarshal(mt codec.MediaType, body []byte, m proto.Message) error {
	decodeStart.Do(func() {
		n := runtime.GOMAXPROCS(0)
		decodeJobs = make(chan decodeJob, 4*n)
		for range n {
			go decoder()
		}
	})
	done := donePool.Get().(chan error)
	decodeJobs <- decodeJob{mt: mt, body: body, m: m, done: done}
	err := <-done
	donePool.Put(done)
	return err
}

// decoder decodes jobs for the life of the process.
func decoder() {
	for j := range decodeJobs {
		j.done <- safeUnmarshal(j.mt, j.body, j.m)
	}
}

// safeUnmarshal is codec.Unmarshal with a panic turned into an error. On
// the request's goroutine the HTTP server would have recovered it and
// dropped the request; here it would take the master down.
func safeUnmarshal(mt codec.MediaType, body []byte, m proto.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoding panicked: %v", r)
		}
	}()
	return codec.Unmarshal(mt, body, m)
}
