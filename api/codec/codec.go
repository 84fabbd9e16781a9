// Package codec encodes and decodes the v1 API messages in the two media
// types Mesos speaks, and negotiates them from HTTP headers.
//
// JSON follows Mesos's mapping (stout), not protojson's defaults: proto field
// names, enums by name, 64-bit integers as numbers, bytes as base64, explicit
// non-deprecated defaults emitted, `null` and unknown keys tolerated on input.
// See docs/compatibility.md and shared/reference/proto-facts.md.
package codec

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"
)

// MediaType is a wire encoding of v1 messages.
type MediaType string

// The media types of the v1 APIs.
const (
	JSON     MediaType = "application/json"
	Protobuf MediaType = "application/x-protobuf"
)

// Marshal encodes m. Protobuf output allows unset required fields (the
// receiver validates); JSON output follows Mesos's mapping.
func Marshal(mt MediaType, m proto.Message) ([]byte, error) {
	switch mt {
	case Protobuf:
		return proto.MarshalOptions{AllowPartial: true, Deterministic: true}.Marshal(m)
	case JSON:
		return MarshalJSON(m)
	}
	return nil, fmt.Errorf("codec: unsupported media type %q", mt)
}

// Unmarshal decodes data into m and checks that required fields are set.
func Unmarshal(mt MediaType, data []byte, m proto.Message) error {
	switch mt {
	case Protobuf:
		if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(data, m); err != nil {
			return err
		}
		return CheckInitialized(m)
	case JSON:
		return UnmarshalJSON(data, m)
	}
	return fmt.Errorf("codec: unsupported media type %q", mt)
}

// Errors from header negotiation; handlers map them to HTTP statuses.
var (
	ErrMissingContentType = errors.New("Expecting 'Content-Type' to be present")
	ErrUnsupportedType    = errors.New("unsupported media type")
	ErrNotAcceptable      = errors.New("not acceptable")
)

// RequestType returns the media type of a request body. Mesos requires the
// Content-Type to be exactly one of the two media types: a missing header is
// 400 (ErrMissingContentType) and anything else 415 (ErrUnsupportedType).
func RequestType(r *http.Request) (MediaType, int, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", http.StatusBadRequest, ErrMissingContentType
	}
	switch MediaType(ct) {
	case JSON, Protobuf:
		return MediaType(ct), 0, nil
	}
	return "", http.StatusUnsupportedMediaType, fmt.Errorf("%w: Expecting 'Content-Type' of %s or %s, got %q", ErrUnsupportedType, JSON, Protobuf, ct)
}

// ResponseType picks the response media type from the Accept header(s):
// JSON if acceptable, else protobuf, else ErrNotAcceptable (406). No Accept
// header accepts anything, so JSON. Several Accept headers are one list
// (mesos-go sends the header twice).
func ResponseType(r *http.Request) (MediaType, error) {
	values := r.Header.Values("Accept")
	if len(values) == 0 {
		return JSON, nil
	}
	var json, pb bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			t, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch t {
			case string(JSON), "application/*", "*/*":
				json = true
			case string(Protobuf):
				pb = true
			}
		}
	}
	switch {
	case json:
		return JSON, nil
	case pb:
		return Protobuf, nil
	}
	return "", fmt.Errorf("%w: expecting 'Accept' to allow %s or %s", ErrNotAcceptable, JSON, Protobuf)
}
