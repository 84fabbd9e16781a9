package httpapi

import (
	"runtime"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"mezzo/api/codec"
	"mezzo/api/protocol"
)

// unmarshal answers as codec.Unmarshal does, whether a decoding
// goroutine or the caller's decodes, and from many callers at once.
func TestUnmarshalMatchesCodec(t *testing.T) {
	good, err := proto.Marshal(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum(),
		Pong: &protocol.AgentCall_Pong{Sequence: proto.Uint64(7)}})
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte{0x0a, 0xff} // a length running past the end
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := good
			if i%3 == 0 {
				body = bad
			}
			var got, want protocol.AgentCall
			gotErr := unmarshal(codec.Protobuf, body, &got)
			wantErr := codec.Unmarshal(codec.Protobuf, body, &want)
			if (gotErr == nil) != (wantErr == nil) || !proto.Equal(&got, &want) {
				t.Errorf("unmarshal = %v, %v; codec.Unmarshal = %v, %v", &got, gotErr, &want, wantErr)
			}
		}()
	}
	wg.Wait()
}

// panicky is a message whose decoding panics (a stand-in for a decoder
// bug): the decoding goroutine survives and the caller gets an error.
type panicky struct{ protocol.AgentCall }

func (p *panicky) ProtoReflect() protoreflect.Message { panic("boom") }

func TestUnmarshalPanicIsAnError(t *testing.T) {
	for range 2 * runtime.GOMAXPROCS(0) { // every decoder, and again
		if err := unmarshal(codec.Protobuf, []byte{}, &panicky{}); err == nil {
			t.Fatal("no error from a decoding that panicked")
		}
	}
	var call protocol.AgentCall
	if err := unmarshal(codec.Protobuf, nil, &call); err != nil {
		t.Fatalf("decoding after the panics: %v", err)
	}
}
