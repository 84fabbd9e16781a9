package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/master"
)

// FuzzCalls feeds arbitrary bodies to the scheduler and agent endpoints:
// they must answer with a status, never panic or hang.
func FuzzCalls(f *testing.F) {
	sub, _ := proto.Marshal(&schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String("n")}}})
	acc, _ := proto.Marshal(&schedulerpb.Call{Type: schedulerpb.Call_ACCEPT.Enum(), FrameworkId: &mesos.FrameworkID{Value: proto.String("M-0000")},
		Accept: &schedulerpb.Call_Accept{OfferIds: []*mesos.OfferID{{Value: proto.String("M-O0")}}}})
	ag, _ := proto.Marshal(&protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: &protocol.AgentCall_Subscribe{
		AgentInfo: &mesos.AgentInfo{Hostname: proto.String("h")}, Endpoint: proto.String("1.2.3.4:5")}})
	f.Add(false, false, sub)
	f.Add(false, false, acc)
	f.Add(true, false, []byte(`{"type":"SUBSCRIBE","subscribe":{"framework_info":{"user":"u","name":"n"}}}`))
	f.Add(true, false, []byte(`{"type":"ACKNOWLEDGE","framework_id":{"value":"M-0000"},"acknowledge":{"uuid":"AAAA"}}`))
	f.Add(false, true, ag)
	m, err := master.New(master.Config{ID: "M", Allocator: idleAllocator{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	m.Start()
	defer m.Stop()
	h := New(m, Options{})
	f.Fuzz(func(t *testing.T, json, agent bool, body []byte) {
		path, mt := "/api/v1/scheduler", codec.Protobuf
		if json {
			mt = codec.JSON
		}
		if agent {
			path = "/internal/v1/agent"
		}
		// A cancelled context ends any stream the call opens.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", string(mt))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
	})
}
