package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrInvalidJSON wraps every error UnmarshalJSON returns for input that is
// not JSON or does not fit the message (as opposed to ErrNotInitialized).
var ErrInvalidJSON = errors.New("codec: invalid JSON")

// fieldError is a decoding error at a field path. The path is collected
// innermost-first while the error travels up, and only rendered at the end,
// so decoding valid input builds no path strings.
type fieldError struct {
	rev []string // path segments, innermost first
	msg string
}

func (e *fieldError) Error() string {
	if len(e.rev) == 0 {
		return "codec: " + e.msg
	}
	return fmt.Sprintf("codec: field '%s': %s", e.Path(), e.msg)
}

// Path renders the field path, e.g. "subscribe.framework_info.user" or
// "accept.operations[0].type".
func (e *fieldError) Path() string {
	var b strings.Builder
	for i := len(e.rev) - 1; i >= 0; i-- {
		s := e.rev[i]
		if b.Len() > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func (e *fieldError) Unwrap() error { return ErrInvalidJSON }

func errorf(format string, args ...any) error {
	return &fieldError{msg: fmt.Sprintf(format, args...)}
}

// within prefixes a path segment onto a fieldError coming up from below.
func within(seg string, err error) error {
	if fe, ok := err.(*fieldError); ok {
		fe.rev = append(fe.rev, seg)
		return fe
	}
	return err
}

// decodeJSON parses data and fills m. JSON numbers stay in their textual
// form (json.Number) so 64-bit integers are exact.
func decodeJSON(data []byte, m protoreflect.Message) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return &fieldError{msg: "malformed JSON: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &fieldError{msg: "malformed JSON: data after the top-level value"}
	}
	switch obj := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return decodeMessage(m, obj)
	default:
		return errorf("expecting a JSON object, got %s", jsonKind(v))
	}
}

func decodeMessage(m protoreflect.Message, obj map[string]any) error {
	// Walk the descriptor, not the object: the order is deterministic
	// (which matters for oneofs given twice) and unknown keys are skipped
	// for free.
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		v, ok := obj[string(fd.Name())]
		if !ok || v == nil {
			continue
		}
		var err error
		switch {
		case fd.IsMap():
			err = decodeMap(m, fd, v)
		case fd.IsList():
			err = decodeList(m, fd, v)
		default:
			err = decodeSingular(m, fd, v)
		}
		if err != nil {
			return within(string(fd.Name()), err)
		}
	}
	return nil
}

func decodeSingular(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any) error {
	if isMessage(fd) {
		obj, ok := v.(map[string]any)
		if !ok {
			return errorf("expecting a JSON object, got %s", jsonKind(v))
		}
		return decodeMessage(m.Mutable(fd).Message(), obj)
	}
	val, ok, err := scalar(fd, v)
	if err != nil {
		return err
	}
	if !ok {
		if fd.Cardinality() == protoreflect.Required {
			return errorf("unknown enum value %s for %s", compact(v), fd.Enum().FullName())
		}
		return nil // unknown enum on an optional field: dropped, as stout does
	}
	m.Set(fd, val)
	return nil
}

func decodeList(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any) error {
	arr, ok := v.([]any)
	if !ok {
		// stout appends a lone value to a repeated field.
		arr = []any{v}
	}
	list := m.Mutable(fd).List()
	for i, el := range arr {
		if el == nil {
			continue
		}
		if isMessage(fd) {
			obj, ok := el.(map[string]any)
			if !ok {
				return within(fmt.Sprintf("[%d]", i), errorf("expecting a JSON object, got %s", jsonKind(el)))
			}
			nv := list.NewElement()
			if err := decodeMessage(nv.Message(), obj); err != nil {
				return within(fmt.Sprintf("[%d]", i), err)
			}
			list.Append(nv)
			continue
		}
		val, ok, err := scalar(fd, el)
		if err != nil {
			return within(fmt.Sprintf("[%d]", i), err)
		}
		if ok {
			list.Append(val)
		}
	}
	return nil
}

func decodeMap(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any) error {
	mp := m.Mutable(fd).Map()
	put := func(k string, val any) error {
		if val == nil {
			return nil
		}
		key, err := mapKey(fd.MapKey(), k)
		if err != nil {
			return err
		}
		vd := fd.MapValue()
		if isMessage(vd) {
			obj, ok := val.(map[string]any)
			if !ok {
				return errorf("expecting a JSON object, got %s", jsonKind(val))
			}
			nv := mp.NewValue()
			if err := decodeMessage(nv.Message(), obj); err != nil {
				return err
			}
			mp.Set(key, nv)
			return nil
		}
		sv, ok, err := scalar(vd, val)
		if err != nil {
			return err
		}
		if ok {
			mp.Set(key, sv)
		}
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := put(k, x[k]); err != nil {
				return within("["+strconv.Quote(k)+"]", err)
			}
		}
	case []any:
		// The protobuf view of a map: repeated {key, value} entries.
		for i, el := range x {
			if el == nil {
				continue
			}
			entry, ok := el.(map[string]any)
			if !ok {
				return within(fmt.Sprintf("[%d]", i), errorf("expecting a map entry object, got %s", jsonKind(el)))
			}
			var k string
			switch kv := entry["key"].(type) {
			case string:
				k = kv
			case json.Number:
				k = kv.String()
			case bool:
				k = strconv.FormatBool(kv)
			case nil:
				k = ""
			default:
				return within(fmt.Sprintf("[%d].key", i), errorf("expecting a map key, got %s", jsonKind(kv)))
			}
			if err := put(k, entry["value"]); err != nil {
				return within(fmt.Sprintf("[%d].value", i), err)
			}
		}
	default:
		return errorf("expecting a JSON object, got %s", jsonKind(v))
	}
	return nil
}

func mapKey(fd protoreflect.FieldDescriptor, k string) (protoreflect.MapKey, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(k).MapKey(), nil
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(k)
		if err != nil {
			return protoreflect.MapKey{}, errorf("invalid bool map key %q", k)
		}
		return protoreflect.ValueOfBool(b).MapKey(), nil
	}
	v, _, err := scalar(fd, k)
	if err != nil {
		return protoreflect.MapKey{}, err
	}
	return v.MapKey(), nil
}

func isMessage(fd protoreflect.FieldDescriptor) bool {
	return fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind
}

// scalar converts a JSON value to a value of fd's (non-message) kind. ok is
// false, with no error, for an enum name the schema does not know: callers
// decide whether that is dropped (optional) or an error (required).
func scalar(fd protoreflect.FieldDescriptor, v any) (val protoreflect.Value, ok bool, err error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		switch x := v.(type) {
		case bool:
			return protoreflect.ValueOfBool(x), true, nil
		case string:
			if b, err := strconv.ParseBool(x); err == nil {
				return protoreflect.ValueOfBool(b), true, nil
			}
		}
		return val, false, errorf("expecting a boolean, got %s", compact(v))

	case protoreflect.StringKind:
		if s, ok := v.(string); ok {
			return protoreflect.ValueOfString(s), true, nil
		}
		return val, false, errorf("expecting a string, got %s", jsonKind(v))

	case protoreflect.BytesKind:
		s, isStr := v.(string)
		if !isStr {
			return val, false, errorf("expecting a base64 string, got %s", jsonKind(v))
		}
		b, err := decodeBase64(s)
		if err != nil {
			return val, false, errorf("invalid base64: %v", err)
		}
		return protoreflect.ValueOfBytes(b), true, nil

	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		switch x := v.(type) {
		case string:
			if ev := values.ByName(protoreflect.Name(x)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), true, nil
			}
			if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 32); err == nil {
				if ev := values.ByNumber(protoreflect.EnumNumber(n)); ev != nil {
					return protoreflect.ValueOfEnum(ev.Number()), true, nil
				}
			}
			return val, false, nil
		case json.Number:
			n, err := parseInt(string(x), 32)
			if err != nil {
				return val, false, errorf("invalid enum number %s", x)
			}
			if ev := values.ByNumber(protoreflect.EnumNumber(n)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), true, nil
			}
			return val, false, nil
		}
		return val, false, errorf("expecting an enum name, got %s", jsonKind(v))

	case protoreflect.FloatKind, protoreflect.DoubleKind:
		s, isNum := numberText(v)
		if !isNum {
			return val, false, errorf("expecting a number, got %s", jsonKind(v))
		}
		f, err := parseFloat(s)
		if err != nil {
			return val, false, errorf("invalid number %s", compact(v))
		}
		if fd.Kind() == protoreflect.FloatKind {
			if math.Abs(f) > math.MaxFloat32 && !math.IsInf(f, 0) {
				return val, false, errorf("number %s out of range for float", compact(v))
			}
			return protoreflect.ValueOfFloat32(float32(f)), true, nil
		}
		return protoreflect.ValueOfFloat64(f), true, nil

	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		bits := 64
		if k := fd.Kind(); k == protoreflect.Int32Kind || k == protoreflect.Sint32Kind || k == protoreflect.Sfixed32Kind {
			bits = 32
		}
		s, isNum := numberText(v)
		if !isNum {
			return val, false, errorf("expecting an integer, got %s", jsonKind(v))
		}
		n, err := parseInt(s, bits)
		if err != nil {
			return val, false, errorf("invalid %d-bit integer %s", bits, compact(v))
		}
		if bits == 32 {
			return protoreflect.ValueOfInt32(int32(n)), true, nil
		}
		return protoreflect.ValueOfInt64(n), true, nil

	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		bits := 64
		if k := fd.Kind(); k == protoreflect.Uint32Kind || k == protoreflect.Fixed32Kind {
			bits = 32
		}
		s, isNum := numberText(v)
		if !isNum {
			return val, false, errorf("expecting an unsigned integer, got %s", jsonKind(v))
		}
		n, err := parseUint(s, bits)
		if err != nil {
			return val, false, errorf("invalid unsigned %d-bit integer %s", bits, compact(v))
		}
		if bits == 32 {
			return protoreflect.ValueOfUint32(uint32(n)), true, nil
		}
		return protoreflect.ValueOfUint64(n), true, nil
	}
	return val, false, errorf("unsupported field kind %v", fd.Kind())
}

// numberText returns the text of a JSON number, or of a string that should
// hold one (Mesos accepts numeric strings, and protojson-style clients send
// 64-bit integers that way).
func numberText(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case string:
		return strings.TrimSpace(x), true
	}
	return "", false
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// ParseFloat returns ±Inf with ErrRange for huge values: a JSON
		// number like 1e400 means infinity.
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return f, nil
		}
		return 0, err
	}
	return f, nil
}

// parseInt accepts an integer, or a number in exponent or decimal form with
// an integral value ("1e3", "5.0"), as stout's number conversion does.
func parseInt(s string, bits int) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, bits); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, errors.New("not an integer")
	}
	limit := math.Ldexp(1, bits-1)
	if f < -limit || f >= limit {
		return 0, errors.New("out of range")
	}
	return int64(f), nil
}

func parseUint(s string, bits int) (uint64, error) {
	if n, err := strconv.ParseUint(s, 10, bits); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, errors.New("not an integer")
	}
	if f < 0 || f >= math.Ldexp(1, bits) {
		return 0, errors.New("out of range")
	}
	return uint64(f), nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return nil, err
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// compact renders a scalar JSON value for an error message, bounded.
func compact(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = strconv.Quote(x)
	case json.Number:
		s = string(x)
	case bool:
		s = strconv.FormatBool(x)
	default:
		return jsonKind(v)
	}
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return s
}
