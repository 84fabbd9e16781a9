package codec

import (
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// encoder writes one message as compact Mesos-style JSON into buf.
type encoder struct {
	buf []byte
}

// fieldPlan is what the encoder needs to know about a field beyond its
// descriptor; computed once per message type.
type fieldPlan struct {
	fd protoreflect.FieldDescriptor
	// emitDefault: singular, has an explicit default and is not deprecated,
	// so stout writes it even when unset.
	emitDefault bool
	// key is the field name already quoted and followed by a colon.
	key string
}

var plans sync.Map // protoreflect.MessageDescriptor -> []fieldPlan

func planFor(md protoreflect.MessageDescriptor) []fieldPlan {
	if p, ok := plans.Load(md); ok {
		return p.([]fieldPlan)
	}
	fields := md.Fields()
	p := make([]fieldPlan, fields.Len())
	for i := range p {
		fd := fields.Get(i)
		p[i] = fieldPlan{
			fd:          fd,
			emitDefault: !fd.IsList() && !fd.IsMap() && fd.HasDefault() && !isDeprecated(fd),
			key:         string(appendString(nil, string(fd.Name()))) + ":",
		}
	}
	plans.Store(md, p)
	return p
}

func isDeprecated(fd protoreflect.FieldDescriptor) bool {
	opts, ok := fd.Options().(*descriptorpb.FieldOptions)
	return ok && opts.GetDeprecated()
}

func (e *encoder) message(m protoreflect.Message) {
	e.buf = append(e.buf, '{')
	first := true
	plan := planFor(m.Descriptor())
	for i := range plan {
		p := &plan[i]
		fd := p.fd
		switch {
		case fd.IsMap():
			if m.Get(fd).Map().Len() == 0 {
				continue
			}
		case fd.IsList():
			if m.Get(fd).List().Len() == 0 {
				continue
			}
		default:
			if !m.Has(fd) && !p.emitDefault {
				continue
			}
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		e.buf = append(e.buf, p.key...)
		v := m.Get(fd)
		switch {
		case fd.IsMap():
			e.mapValue(fd, v.Map())
		case fd.IsList():
			l := v.List()
			e.buf = append(e.buf, '[')
			for j := 0; j < l.Len(); j++ {
				if j > 0 {
					e.buf = append(e.buf, ',')
				}
				e.single(fd, l.Get(j))
			}
			e.buf = append(e.buf, ']')
		default:
			e.single(fd, v)
		}
	}
	e.buf = append(e.buf, '}')
}

func (e *encoder) mapValue(fd protoreflect.FieldDescriptor, mp protoreflect.Map) {
	type entry struct {
		key string
		val protoreflect.Value
	}
	entries := make([]entry, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		entries = append(entries, entry{k.String(), v})
		return true
	})
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	e.buf = append(e.buf, '{')
	for i, en := range entries {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = appendString(e.buf, en.key)
		e.buf = append(e.buf, ':')
		e.single(fd.MapValue(), en.val)
	}
	e.buf = append(e.buf, '}')
}

// single writes one (non-repeated) value of field fd's kind.
func (e *encoder) single(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		e.buf = AppendFloat(e.buf, v.Float())
	case protoreflect.StringKind:
		e.buf = appendString(e.buf, v.String())
	case protoreflect.BytesKind:
		b := v.Bytes()
		e.buf = append(e.buf, '"')
		e.buf = base64.StdEncoding.AppendEncode(e.buf, b)
		e.buf = append(e.buf, '"')
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			e.buf = appendString(e.buf, string(ev.Name()))
		} else {
			// A number without a name can only come from binary input;
			// write the number, which our decoder accepts back.
			e.buf = strconv.AppendInt(e.buf, int64(v.Enum()), 10)
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		e.message(v.Message())
	default:
		e.buf = append(e.buf, "null"...)
	}
}

// AppendFloat appends v as Mesos (stout) writes a double in JSON: printf
// "%#.15g" with trailing zeros trimmed, keeping at least one digit after the
// decimal point, so 2 is "2.0", 0.1 is "0.1" and 1/3 is "0.333333333333333".
// JSON has no NaN or infinities; they are written as the strings "NaN",
// "Infinity" and "-Infinity", which the decoder accepts. The classic JSON
// endpoints use this too, so their numbers look like Mesos's.
func AppendFloat(buf []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(buf, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(buf, `"Infinity"`...)
	case math.IsInf(v, -1):
		return append(buf, `"-Infinity"`...)
	}
	// 15 significant digits in scientific form tells us the decimal
	// exponent after rounding, which decides the style exactly as %g does.
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], v, 'e', 14, 64)
	exp := 0
	if i := indexByte(sci, 'e'); i >= 0 {
		exp, _ = strconv.Atoi(string(sci[i+1:]))
	}
	if exp < -4 || exp >= 15 {
		// Exponent style: trim the mantissa's trailing zeros (stout keeps
		// them only by accident of trimming the whole string).
		i := indexByte(sci, 'e')
		mant, tail := sci[:i], sci[i:]
		mant = trimZeros(mant)
		buf = append(buf, mant...)
		return append(buf, tail...)
	}
	var fixed [48]byte
	return append(buf, trimZeros(strconv.AppendFloat(fixed[:0], v, 'f', 14-exp, 64))...)
}

// trimZeros removes trailing zeros after a decimal point, keeping one digit
// after the point ("2.000" -> "2.0", "0.500" -> "0.5").
func trimZeros(b []byte) []byte {
	if indexByte(b, '.') < 0 {
		return append(b, ".0"...)
	}
	for len(b) > 0 && b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if b[len(b)-1] == '.' {
		b = append(b, '0')
	}
	return b
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD so
// the output is always valid JSON; '<', '>' and '&' are not escaped (this
// is an API, not HTML).
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but break JavaScript consumers
		// (the web UI evaluates JSONP).
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
