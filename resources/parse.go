package resources

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
)

// Parse parses resources in Mesos's --resources syntax:
//
//	cpus:4;mem(web):1024;ports:[31000-32000,40000-40010];disks:{a,b}
//
// Entries are "name(role):value" separated by ';' (empty entries are
// ignored). The role defaults to defaultRole ("" means "*"); a role other
// than "*" is a STATIC reservation. A value is a scalar ("1.5"), ranges
// ("[b-e,...]") or a set ("{a,b}"). Like Mesos, text that is a JSON array
// is parsed as JSON resources instead, entries with neither role nor
// reservations getting defaultRole. The result is validated, including
// Mesos's command-line rules (no persistent volumes, revocable resources or
// dynamic reservations; one type per name); errors name the offending entry.
func Parse(text, defaultRole string) (Resources, error) {
	if defaultRole == "" {
		defaultRole = "*"
	}
	if err := ValidateRole(defaultRole); err != nil {
		return Resources{}, fmt.Errorf("default role: %w", err)
	}
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "[") && json.Valid([]byte(t)) {
		rs, err := decodeJSONArray([]byte(t))
		if err != nil {
			return Resources{}, err
		}
		for _, r := range rs {
			if r.Role == nil && len(r.Reservations) == 0 {
				r.Role = proto.String(defaultRole)
			}
		}
		return fromCommandLine(rs)
	}
	rs, err := parseText(text, defaultRole)
	if err != nil {
		return Resources{}, err
	}
	return fromCommandLine(rs)
}

func fromCommandLine(rs []*mesos.Resource) (Resources, error) {
	if err := Validate(rs); err != nil {
		return Resources{}, err
	}
	if err := validateCommandLine(rs); err != nil {
		return Resources{}, err
	}
	return FromProto(rs)
}

// MustParse is Parse with the default role "*" that panics on error; for
// tests and constants.
func MustParse(text string) Resources {
	r, err := Parse(text, "*")
	if err != nil {
		panic(fmt.Sprintf("resources.MustParse(%q): %v", text, err))
	}
	return r
}

// ParseJSON parses a JSON array of Resource objects in Mesos's JSON mapping
// (either reservation format) and validates it. JSON null is empty.
func ParseJSON(data []byte) (Resources, error) {
	rs, err := decodeJSONArray(data)
	if err != nil {
		return Resources{}, err
	}
	return FromProto(rs)
}

func decodeJSONArray(data []byte) ([]*mesos.Resource, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("resources JSON: expecting an array of Resource objects: %w", err)
	}
	rs := make([]*mesos.Resource, len(raw))
	for i, m := range raw {
		if bytes.Equal(bytes.TrimSpace(m), []byte("null")) {
			return nil, fmt.Errorf("resources[%d]: null is not a Resource", i)
		}
		r := &mesos.Resource{}
		if err := codec.UnmarshalJSON(m, r); err != nil {
			return nil, fmt.Errorf("resources[%d]: %w", i, err)
		}
		rs[i] = r
	}
	return rs, nil
}

// parseText parses the ';'-separated text syntax into protos (pre-refinement
// role field set when reserved).
func parseText(text, defaultRole string) ([]*mesos.Resource, error) {
	var out []*mesos.Resource
	for tok := range strings.SplitSeq(text, ";") {
		if strings.TrimSpace(tok) == "" {
			continue
		}
		r, err := parseEntry(tok, defaultRole)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseEntry(tok, defaultRole string) (*mesos.Resource, error) {
	entry := strings.TrimSpace(tok)
	head, value, ok := strings.Cut(entry, ":")
	if !ok || strings.Contains(value, ":") {
		return nil, fmt.Errorf("resource %q: expecting exactly one ':' between name and value", entry)
	}
	name, role := strings.TrimSpace(head), defaultRole
	if open := strings.IndexByte(head, '('); open >= 0 {
		closing := strings.IndexByte(head, ')')
		if closing < open {
			return nil, fmt.Errorf("resource %q: mismatched parentheses", entry)
		}
		if strings.TrimSpace(head[closing+1:]) != "" || strings.IndexByte(head[open+1:closing], '(') >= 0 {
			return nil, fmt.Errorf("resource %q: unexpected text after the role", entry)
		}
		name = strings.TrimSpace(head[:open])
		role = strings.TrimSpace(head[open+1 : closing])
	} else if strings.IndexByte(head, ')') >= 0 {
		return nil, fmt.Errorf("resource %q: mismatched parentheses", entry)
	}
	if name == "" {
		return nil, fmt.Errorf("resource %q: empty name", entry)
	}
	if err := ValidateRole(role); err != nil {
		return nil, fmt.Errorf("resource %q: %w", entry, err)
	}
	r := &mesos.Resource{Name: proto.String(name)}
	if role != "*" {
		r.Role = proto.String(role)
	}
	if err := parseValue(r, strings.TrimSpace(value)); err != nil {
		return nil, fmt.Errorf("resource %q: %w", entry, err)
	}
	return r, nil
}

// parseValue fills r's type and value from the text of a value.
func parseValue(r *mesos.Resource, v string) error {
	switch {
	case v == "":
		return fmt.Errorf("empty value")
	case v[0] == '[':
		if v[len(v)-1] != ']' {
			return fmt.Errorf("ranges value %q must end with ']'", v)
		}
		var rs []*mesos.Value_Range
		for part := range strings.SplitSeq(v[1:len(v)-1], ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			b, e, ok := strings.Cut(part, "-")
			if !ok {
				return fmt.Errorf("range %q: expecting 'begin-end'", part)
			}
			bn, err1 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
			en, err2 := strconv.ParseUint(strings.TrimSpace(e), 10, 64)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("range %q: expecting non-negative integers 'begin-end'", part)
			}
			if bn > en {
				return fmt.Errorf("range %q: begin > end", part)
			}
			rs = append(rs, &mesos.Value_Range{Begin: proto.Uint64(bn), End: proto.Uint64(en)})
		}
		r.Type = mesos.Value_RANGES.Enum()
		r.Ranges = &mesos.Value_Ranges{Range: coalesceProtoRanges(rs)}
	case v[0] == '{':
		if v[len(v)-1] != '}' {
			return fmt.Errorf("set value %q must end with '}'", v)
		}
		var items []string
		for part := range strings.SplitSeq(v[1:len(v)-1], ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if strings.ContainsAny(part, "{}[]") {
				return fmt.Errorf("set item %q contains a bracket", part)
			}
			items = append(items, part)
		}
		r.Type = mesos.Value_SET.Enum()
		r.Set = &mesos.Value_Set{Item: items}
	default:
		if strings.ContainsAny(v, "[]{},") {
			return fmt.Errorf("value %q is not a scalar, ranges ([b-e,...]) or set ({a,b,...})", v)
		}
		f, err := parseScalar(v)
		if err != nil {
			return err
		}
		r.Type = mesos.Value_SCALAR.Enum()
		r.Scalar = &mesos.Value_Scalar{Value: proto.Float64(f)}
	}
	return nil
}

// parseScalar accepts decimal floating point only (no hex, no inf/nan).
func parseScalar(v string) (float64, error) {
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, fmt.Errorf("value %q is not a number (text values are not supported for resources)", v)
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("value %q is not a finite number", v)
	}
	return f, nil
}

// coalesceProtoRanges merges overlapping and adjacent ranges, as Mesos's
// text parser does ("[1-5,3-10]" is "[1-10]").
func coalesceProtoRanges(rs []*mesos.Value_Range) []*mesos.Value_Range {
	s := make([]span, len(rs))
	for i, x := range rs {
		s[i] = span{x.GetBegin(), x.GetEnd()}
	}
	s = normalizeSpans(s)
	out := make([]*mesos.Value_Range, len(s))
	for i, x := range s {
		out[i] = &mesos.Value_Range{Begin: proto.Uint64(x.b), End: proto.Uint64(x.e)}
	}
	return out
}
