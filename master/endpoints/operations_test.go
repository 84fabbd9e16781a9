package endpoints

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
)

// GET_OPERATIONS lists the snapshot's operations as they are.
func TestGetOperations(t *testing.T) {
	s := testSnapshot()
	op := &mesos.Operation{
		FrameworkId: &mesos.FrameworkID{Value: proto.String("f1")},
		AgentId:     &mesos.AgentID{Value: proto.String("a1")},
		Info: &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum(),
			Id: &mesos.OperationID{Value: proto.String("r1")}},
		LatestStatus: &mesos.OperationStatus{State: mesos.OperationState_OPERATION_FINISHED.Enum()},
		Uuid:         &mesos.UUID{Value: make([]byte, 16)},
	}
	s.Operations = []*mesos.Operation{op}
	mux, _ := newTestServer(t, newFakeSource(s))
	rec := postCall(t, mux, codec.JSON, callOf(masterpb.Call_GET_OPERATIONS))
	var resp masterpb.Response
	if err := codec.Unmarshal(codec.JSON, rec.Body.Bytes(), &resp); err != nil || rec.Code != 200 {
		t.Fatalf("GET_OPERATIONS: %d %s (%v)", rec.Code, rec.Body, err)
	}
	got := resp.GetGetOperations().GetOperations()
	if resp.GetType() != masterpb.Response_GET_OPERATIONS || len(got) != 1 || !proto.Equal(got[0], op) {
		t.Fatalf("GET_OPERATIONS = %v", &resp)
	}
}
