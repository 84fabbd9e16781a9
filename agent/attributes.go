package agent

import (
	"fmt"
	"strconv"
	"strings"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// parseAttributes parses Mesos's --attributes syntax: "name:value" pairs
// separated by ';' (or newlines). A value is a scalar if it is a number,
// ranges if written "[a-b, c-d]", and text otherwise; sets are not valid
// attribute values (as in Mesos).
func parseAttributes(text string) ([]*mesos.Attribute, error) {
	var out []*mesos.Attribute
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		parts := strings.Split(tok, ":")
		if len(parts) != 2 {
			return nil, fmt.Errorf("agent config: 'attributes': invalid attribute key:value pair %q", tok)
		}
		name, value := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
		if name == "" {
			return nil, fmt.Errorf("agent config: 'attributes': empty name in %q", tok)
		}
		a, err := parseAttribute(name, value)
		if err != nil {
			return nil, fmt.Errorf("agent config: 'attributes': %s: %w", name, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func parseAttribute(name, value string) (*mesos.Attribute, error) {
	a := &mesos.Attribute{Name: proto.String(name)}
	switch {
	case value == "":
		return nil, fmt.Errorf("empty value")
	case strings.HasPrefix(value, "["):
		rs, err := parseRanges(value)
		if err != nil {
			return nil, err
		}
		a.Type = mesos.Value_RANGES.Enum()
		a.Ranges = rs
	case strings.HasPrefix(value, "{"):
		return nil, fmt.Errorf("sets are not supported as attribute values (%q)", value)
	default:
		if f, err := strconv.ParseFloat(value, 64); err == nil && isNumber(value) {
			a.Type = mesos.Value_SCALAR.Enum()
			a.Scalar = &mesos.Value_Scalar{Value: proto.Float64(f)}
		} else {
			a.Type = mesos.Value_TEXT.Enum()
			a.Text = &mesos.Value_Text{Value: proto.String(value)}
		}
	}
	return a, nil
}

// isNumber rejects what ParseFloat accepts but Mesos would treat as text
// ("inf", "nan", hex floats).
func isNumber(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
			return false
		}
	}
	return true
}

// parseRanges parses "[1-10, 20-30]".
func parseRanges(v string) (*mesos.Value_Ranges, error) {
	if !strings.HasSuffix(v, "]") {
		return nil, fmt.Errorf("ranges %q: missing ']'", v)
	}
	body := strings.TrimSpace(v[1 : len(v)-1])
	rs := &mesos.Value_Ranges{}
	if body == "" {
		return rs, nil
	}
	for _, part := range strings.Split(body, ",") {
		lo, hi, ok := strings.Cut(strings.TrimSpace(part), "-")
		if !ok {
			return nil, fmt.Errorf("ranges %q: %q is not begin-end", v, part)
		}
		b, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		e, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		if err1 != nil || err2 != nil || b > e {
			return nil, fmt.Errorf("ranges %q: invalid range %q", v, part)
		}
		rs.Range = append(rs.Range, &mesos.Value_Range{Begin: proto.Uint64(b), End: proto.Uint64(e)})
	}
	return rs, nil
}
