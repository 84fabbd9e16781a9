package codec

import (
	"errors"

	"google.golang.org/protobuf/proto"
)

// The JSON mapping, as Mesos's stout library implements it (facts in
// shared/reference/proto-facts.md, "JSON mapping rules"):
//
// Output (MarshalJSON):
//   - keys are proto field names, fields in .proto declaration order;
//   - a repeated field is written only when it has elements; a singular
//     field when it is set, or when it declares an explicit default and is
//     not deprecated (then the default is written: Filters.refuse_seconds 5);
//   - enums by name, bytes as standard base64, all integers as JSON numbers;
//   - doubles as stout prints them: 15 significant digits, always with a
//     decimal point ("2.0", "0.1"); NaN and ±Inf, which JSON lacks, as the
//     strings "NaN", "Infinity", "-Infinity";
//   - maps as JSON objects with sorted keys;
//   - compact: no whitespace, so a record never contains a newline.
//
// Input (UnmarshalJSON):
//   - unknown keys are ignored and null means "unset", anywhere;
//   - enums by name, or by number; an unknown name on an optional or
//     repeated field is dropped, on a required field it is an error;
//   - integers from numbers or numeric strings; doubles also from the
//     strings "Infinity", "-Infinity", "NaN";
//   - a single value given for a repeated field is one element (stout does
//     the same); a map may also be given as an array of {"key","value"};
//   - after decoding, required fields are checked and the first missing one
//     is named by its path.

// MarshalJSON encodes m with Mesos's JSON mapping. It fails only for a nil
// interface; unset required fields are simply not written (the receiver
// validates), as with protobuf output.
func MarshalJSON(m proto.Message) ([]byte, error) {
	if m == nil {
		return nil, errors.New("codec: cannot encode a nil message")
	}
	e := encoder{buf: make([]byte, 0, 256)}
	e.message(m.ProtoReflect())
	return e.buf, nil
}

// AppendJSON appends the Mesos-style JSON encoding of m to buf. Handlers that
// embed protobuf objects inside hand-written JSON (the classic endpoints) use
// it to avoid an extra copy.
func AppendJSON(buf []byte, m proto.Message) []byte {
	if m == nil {
		return append(buf, "null"...)
	}
	e := encoder{buf: buf}
	e.message(m.ProtoReflect())
	return e.buf
}

// UnmarshalJSON decodes Mesos-style JSON into m (which it resets first) and
// checks that required fields are set. Errors name the offending field by
// its path, e.g. `subscribe.framework_info.user`. It never panics on input.
func UnmarshalJSON(data []byte, m proto.Message) error {
	proto.Reset(m)
	if err := decodeJSON(data, m.ProtoReflect()); err != nil {
		return err
	}
	return CheckInitialized(m)
}
