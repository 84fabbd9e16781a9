package codec

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrNotInitialized wraps the error for a message missing a required field
// (Mesos answers such calls 400 "Missing required fields").
var ErrNotInitialized = errors.New("codec: missing required field")

// RequiredError names the first required field found missing.
type RequiredError struct {
	// Path of the missing field from the top-level message, e.g.
	// "subscribe.framework_info.user" or "offers[0].id.value".
	Path string
}

func (e *RequiredError) Error() string {
	return fmt.Sprintf("codec: missing required field '%s'", e.Path)
}

// Unwrap makes errors.Is(err, ErrNotInitialized) true.
func (e *RequiredError) Unwrap() error { return ErrNotInitialized }

// CheckInitialized reports the first required field that is missing, naming
// it by its path (e.g. "subscribe.framework_info.user"). The error is a
// *RequiredError.
func CheckInitialized(m proto.Message) error {
	// The generated fast path answers the common case (all set) cheaply;
	// only a failure pays for the reflective walk that finds the path.
	if proto.CheckInitialized(m) == nil {
		return nil
	}
	if path, ok := missing(m.ProtoReflect(), ""); ok {
		return &RequiredError{Path: path}
	}
	return proto.CheckInitialized(m)
}

// missing walks m depth-first in declaration order and returns the path of
// the first unset required field.
func missing(m protoreflect.Message, prefix string) (string, bool) {
	join := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Cardinality() == protoreflect.Required && !m.Has(fd) {
			return join(string(fd.Name())), true
		}
	}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			if !isMessage(fd.MapValue()) {
				continue
			}
			var path string
			var found bool
			m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				path, found = missing(v.Message(), join(string(fd.Name()))+"["+strconv.Quote(k.String())+"]")
				return !found
			})
			if found {
				return path, true
			}
		case !isMessage(fd):
			continue
		case fd.IsList():
			l := m.Get(fd).List()
			for j := 0; j < l.Len(); j++ {
				if p, ok := missing(l.Get(j).Message(), join(string(fd.Name()))+"["+strconv.Itoa(j)+"]"); ok {
					return p, true
				}
			}
		default:
			if m.Has(fd) {
				if p, ok := missing(m.Get(fd).Message(), join(string(fd.Name()))); ok {
					return p, true
				}
			}
		}
	}
	return "", false
}
