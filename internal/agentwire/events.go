package agentwire

import (
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"mezzo/api/protocol"
	"mezzo/api/recordio"
)

// DefaultBuffer is the read buffer of a stream when ReadEvents is given
// none: api/recordio's size, right for one agent per process.
const DefaultBuffer = 64 << 10

// DefaultMaxEvent bounds one event record (a RUN_TASK_GROUP of a big group
// is the largest) when ReadEvents is given no bound.
const DefaultMaxEvent = 16 << 20

// ErrStreamClosed is returned by ReadEvents when the master ends the
// stream cleanly.
var ErrStreamClosed = errors.New("the master closed the event stream")

// ReadEvents decodes the stream's AgentEvents and hands each to deliver
// until the stream ends or deliver returns false; it returns why it ended
// (nil if deliver stopped it). bufSize is the read buffer (DefaultBuffer
// if <= 0; the simulator uses a few hundred bytes, since an agent's
// events are small and seldom and it holds tens of thousands of streams);
// maxEvent bounds one record (DefaultMaxEvent if <= 0).
func ReadEvents(body io.Reader, bufSize, maxEvent int, deliver func(*protocol.AgentEvent) bool) error {
	if bufSize <= 0 {
		bufSize = DefaultBuffer
	}
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	r := recordio.NewReaderSize(body, bufSize, maxEvent)
	for {
		rec, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return ErrStreamClosed
			}
			return err
		}
		ev := &protocol.AgentEvent{}
		if err := proto.Unmarshal(rec, ev); err != nil {
			return fmt.Errorf("undecodable event from the master: %w", err)
		}
		if !deliver(ev) {
			return nil
		}
	}
}
