package httpapi

import (
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

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
