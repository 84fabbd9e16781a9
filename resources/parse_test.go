package resources

import (
	"strings"
	"testing"

	"mezzo/api/mesos"
)

func TestParseGood(t *testing.T) {
	tests := []struct {
		in, role string
		want     string // String() of the result
	}{
		{"cpus:4", "*", "cpus:4"},
		{"cpus:1.5;mem:1024", "", "cpus:1.5; mem:1024"},
		{" cpus : 2 ; mem : 512 ;", "*", "cpus:2; mem:512"},
		{"cpus:1;;mem:2", "*", "cpus:1; mem:2"},
		{"", "*", ""},
		{"cpus(web):2", "*", "cpus(web):2"},
		{"cpus( web ):2", "*", "cpus(web):2"},
		{"cpus(*):2", "*", "cpus:2"},
		{"cpus:2", "web", "cpus(web):2"},
		{"cpus(*):2", "web", "cpus:2"},
		{"cpus(eng/web):2", "*", "cpus(eng/web):2"},
		{"cpus:1;cpus:2", "*", "cpus:3"},
		{"cpus:1;cpus(a):2", "*", "cpus:1; cpus(a):2"},
		{"cpus:0.1;cpus:0.2", "*", "cpus:0.3"},
		{"cpus:0.0005", "*", "cpus:0.001"},
		{"cpus:1e2", "*", "cpus:100"},
		{"cpus:0", "*", ""},
		{"ports:[31000-32000]", "*", "ports:[31000-32000]"},
		{"ports:[31000-32000,40000-40010]", "*", "ports:[31000-32000, 40000-40010]"},
		{"ports:[ 40000-40010 , 31000-32000 ]", "*", "ports:[31000-32000, 40000-40010]"},
		{"ports:[1-5,6-10]", "*", "ports:[1-10]"},
		{"ports:[1-5,3-10]", "*", "ports:[1-10]"},
		{"ports:[0-18446744073709551615]", "*", "ports:[0-18446744073709551615]"},
		{"ports:[]", "*", ""},
		{"ports:[1-2];ports:[3-4]", "*", "ports:[1-4]"},
		{"disks:{a,b}", "*", "disks:{a, b}"},
		{"disks:{ b , a }", "*", "disks:{a, b}"},
		{"disks:{a};disks:{b}", "*", "disks:{a, b}"},
		{"disks:{}", "*", ""},
		{"cpus:4;mem(web):1024;ports:[31000-32000];disks:{a,b}", "*",
			"cpus:4; disks:{a, b}; mem(web):1024; ports:[31000-32000]"},
		// JSON array in place of text, as Mesos's --resources accepts.
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":2}}]`, "*", "cpus:2"},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":2}}]`, "web", "cpus(web):2"},
		{` [{"name":"cpus","type":"SCALAR","scalar":{"value":2},"role":"*"}]`, "web", "cpus:2"},
		{`[{"name":"ports","type":"RANGES","ranges":{"range":[{"begin":1,"end":3}]}}]`, "*", "ports:[1-3]"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			r, err := Parse(tc.in, tc.role)
			if err != nil {
				t.Fatalf("Parse(%q, %q): %v", tc.in, tc.role, err)
			}
			if got := r.String(); got != tc.want {
				t.Fatalf("Parse(%q, %q) = %q, want %q", tc.in, tc.role, got, tc.want)
			}
			back, err := Parse(r.String(), "*")
			if err != nil || !back.Equal(r) {
				t.Fatalf("round trip of %q: %v, %v", r.String(), back, err)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		in, role string
		want     string // substring of the error
	}{
		{"cpus", "*", "expecting exactly one ':'"},
		{"cpus:1:2", "*", "expecting exactly one ':'"},
		{":1", "*", "empty name"},
		{"cpus:", "*", "empty value"},
		{"cpus:-1", "*", "negative"},
		{"cpus:abc", "*", `value "abc" is not a number`},
		{"cpus:nan", "*", "not a number"},
		{"cpus:inf", "*", "not a number"},
		{"cpus:1e400", "*", "not a finite number"},
		{"cpus:1e20", "*", "exceeds the maximum"},
		{"cpus:0x10", "*", "not a number"},
		{"cpus(web:1", "*", "mismatched parentheses"},
		{"cpus)web(:1", "*", "mismatched parentheses"},
		{"cpusweb):1", "*", "mismatched parentheses"},
		{"cpus(a)(b):1", "*", "unexpected text after the role"},
		{"cpus(a)x:1", "*", "unexpected text after the role"},
		{"cpus():1", "*", "empty role name"},
		{"cpus(.):1", "*", "'.'"},
		{"cpus(..):1", "*", "'..'"},
		{"cpus(-a):1", "*", "starts with a dash"},
		{"cpus(a b):1", "*", "whitespace"},
		{"cpus(a\tb):1", "*", "whitespace"},
		{"cpus(/a):1", "*", "cannot start with a slash"},
		{"cpus(a/):1", "*", "cannot end with a slash"},
		{"cpus(a//b):1", "*", "adjacent slashes"},
		{"cpus(a/*):1", "*", "'*' as a component"},
		{"cpus(a/./b):1", "*", "'.'"},
		{"cpus:1", "-x", "default role"},
		{"ports:[1-2", "*", "must end with ']'"},
		{"ports:[2-1]", "*", "begin > end"},
		{"ports:[a-b]", "*", "non-negative integers"},
		{"ports:[-1-2]", "*", "non-negative integers"},
		{"ports:[5]", "*", "expecting 'begin-end'"},
		{"ports:[1-18446744073709551616]", "*", "non-negative integers"},
		{"disks:{a", "*", "must end with '}'"},
		{"disks:{a,a}", "*", "duplicated element"},
		{"disks:{a,{b}}", "*", "bracket"},
		{"cpus:1,2", "*", "is not a scalar, ranges"},
		{"cpus:0.0004", "*", "rounds to 0"},
		{"cpus:1;cpus:[1-2]", "*", "same name but different types"},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"revocable":{}}]`, "*", "revocable resources cannot be specified"},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"role":"a","reservation":{"principal":"p"}}]`, "*", "dynamic reservations cannot be specified"},
		{`[{"name":"disk","type":"SCALAR","scalar":{"value":1},"role":"a","disk":{"persistence":{"id":"x"}}}]`, "*", "persistent volumes cannot be specified"},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"reservation":{"principal":"p"}}]`, "web", "dynamic reservations cannot be specified"},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":-1}}]`, "*", `resources[0] "cpus": scalar value -1 is negative`},
		{`[{"name":"cpus","type":"SCALAR"}]`, "*", `resources[0] "cpus": invalid scalar resource`},
		{`[{"type":"SCALAR","scalar":{"value":1}}]`, "*", "resources[0]"},
		{`[null]`, "*", "resources[0]: null"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			r, err := Parse(tc.in, tc.role)
			if err == nil {
				t.Fatalf("Parse(%q, %q) = %v, want error containing %q", tc.in, tc.role, r, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q, %q) error %q, want it to contain %q", tc.in, tc.role, err, tc.want)
			}
		})
	}
}

func TestParseStaticReservation(t *testing.T) {
	r := MustParse("cpus(web):2")
	ps := r.Proto()
	if len(ps) != 1 {
		t.Fatalf("got %d resources", len(ps))
	}
	p := ps[0]
	if p.Role != nil || p.Reservation != nil {
		t.Fatalf("Proto() must be post-refinement: %v", p)
	}
	if len(p.Reservations) != 1 || p.Reservations[0].GetType() != mesos.Resource_ReservationInfo_STATIC ||
		p.Reservations[0].GetRole() != "web" {
		t.Fatalf("want one STATIC reservation for web, got %v", p.Reservations)
	}
}

func TestParseJSON(t *testing.T) {
	good := []struct{ in, want string }{
		{`[]`, ""},
		{`null`, ""},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":0.1}},{"name":"cpus","type":"SCALAR","scalar":{"value":0.2}}]`, "cpus:0.3"},
		{`[{"name":"mem","type":"SCALAR","scalar":{"value":64},"role":"web"}]`, "mem(web):64"},
		{`[{"name":"mem","type":"SCALAR","scalar":{"value":64},"reservations":[{"type":"STATIC","role":"web"}]}]`, "mem(web):64"},
		{`[{"name":"mem","type":"SCALAR","scalar":{"value":64},"reservations":null,"unknown":1}]`, "mem:64"},
		{`[{"name":"d","type":"SET","set":{"item":["x","y"]}}]`, "d:{x, y}"},
	}
	for _, tc := range good {
		r, err := ParseJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("ParseJSON(%s): %v", tc.in, err)
			continue
		}
		if r.String() != tc.want {
			t.Errorf("ParseJSON(%s) = %q, want %q", tc.in, r.String(), tc.want)
		}
	}
	bad := []struct{ in, want string }{
		{`{}`, "expecting an array"},
		{`[1]`, "resources[0]"},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"role":"web","reservations":[{"type":"STATIC","role":"db"}]}]`, `does not match`},
		{`[{"name":"p","type":"RANGES","ranges":{"range":[{"begin":5,"end":1}]}}]`, "begin > end"},
		{`[{"name":"p","type":"RANGES","ranges":{"range":[{"begin":1,"end":5},{"begin":3,"end":9}]}}]`, "overlapping"},
		{`[{"name":"t","type":"TEXT","text":{"value":"x"}}]`, "unsupported resource type"},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":"NaN"}}]`, "not a finite number"},
		{`[{"name":"cpus","type":"SCALAR","scalar":{"value":"Infinity"}}]`, "not a finite number"},
	}
	for _, tc := range bad {
		_, err := ParseJSON([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseJSON(%s) error %v, want it to contain %q", tc.in, err, tc.want)
		}
	}
}
