package codec

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// TEMPORARY: protojson with proto names. Being replaced by a Mesos-style
// JSON mapping (int64 as numbers, defaults emitted, null tolerated).

// MarshalJSON encodes m with Mesos's JSON mapping.
func MarshalJSON(m proto.Message) ([]byte, error) {
	return protojson.MarshalOptions{UseProtoNames: true, AllowPartial: true}.Marshal(m)
}

// UnmarshalJSON decodes Mesos-style JSON into m and checks required fields.
func UnmarshalJSON(data []byte, m proto.Message) error {
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true, AllowPartial: true}).Unmarshal(data, m); err != nil {
		return err
	}
	return CheckInitialized(m)
}
