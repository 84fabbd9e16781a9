package resources

import (
	"strings"
	"testing"

	"mezzo/api/mesos"
)

// textRepresentable reports whether r survives String → Parse: no
// attributes outside the --resources syntax and no separator characters in
// names or set items.
func textRepresentable(r *mesos.Resource) bool {
	if !isTextual(r) {
		return false
	}
	name := r.GetName()
	if name != strings.TrimSpace(name) || strings.ContainsAny(name, ";:()") {
		return false
	}
	for _, res := range r.GetReservations() {
		if strings.ContainsAny(res.GetRole(), ";:()") {
			return false
		}
	}
	for _, s := range r.GetSet().GetItem() {
		if s == "" || s != strings.TrimSpace(s) || strings.ContainsAny(s, ",;:{}[]") {
			return false
		}
	}
	return true
}

// checkInvariants exercises every operation on a successfully parsed value.
func checkInvariants(t *testing.T, r Resources) {
	ps := r.Proto()
	back, err := FromProto(ps)
	if err != nil || !back.Equal(r) {
		t.Fatalf("FromProto(Proto()) = %v, %v; want %v", back, err, r)
	}
	if pre, err := FromProto(ToPreRefinement(ps)); err != nil || !pre.Equal(r) {
		t.Fatalf("FromProto(ToPreRefinement()) = %v, %v; want %v", pre, err, r)
	}
	rr := r.Add(r)
	if !rr.Contains(r) || !r.Contains(r) || !r.Subtract(r).IsEmpty() || !rr.Subtract(r).Contains(r.Subtract(r)) {
		t.Fatalf("basic laws fail for %v", r)
	}
	_ = r.Summary()
	_ = r.Quantities()
	_ = r.AllocatedTo("x").WithoutAllocationInfo()
	_ = r.AllocatableTo("a/b").Unreserved().Revocable()

	all := true
	for _, p := range ps {
		all = all && textRepresentable(p)
	}
	if all {
		s := r.String()
		back, err := Parse(s, "*")
		if err != nil || !back.Equal(r) {
			t.Fatalf("Parse(String()) of %q = %v, %v", s, back, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"cpus:4;mem(web):1024;ports:[31000-32000];disks:{a,b}",
		"cpus(eng/web):0.5; mem:128.125",
		"ports:[1-5,3-10, 20-20]",
		"cpus:0.0005;cpus:1e2",
		"disks:{ b , a }",
		"cpus(a)(b):1",
		"cpus():1",
		"ports:[0-18446744073709551615]",
		`[{"name":"cpus","type":"SCALAR","scalar":{"value":2}}]`,
		`[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"role":"web","reservation":{"principal":"p"}}]`,
		"",
		";;",
	} {
		f.Add(s, "*")
		f.Add(s, "web")
	}
	f.Fuzz(func(t *testing.T, text, role string) {
		r, err := Parse(text, role)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		checkInvariants(t, r)
	})
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`[]`,
		`null`,
		`[{"name":"cpus","type":"SCALAR","scalar":{"value":0.1}},{"name":"cpus","type":"SCALAR","scalar":{"value":0.2}}]`,
		`[{"name":"mem","type":"SCALAR","scalar":{"value":64},"role":"web"}]`,
		`[{"name":"mem","type":"SCALAR","scalar":{"value":64},"role":"web","reservation":{"principal":"p","labels":{"labels":[{"key":"k","value":"v"}]}}}]`,
		`[{"name":"mem","type":"SCALAR","scalar":{"value":64},"reservations":[{"type":"STATIC","role":"a"},{"type":"DYNAMIC","role":"a/b","principal":"p"}]}]`,
		`[{"name":"ports","type":"RANGES","ranges":{"range":[{"begin":5,"end":9},{"begin":1,"end":3}]}}]`,
		`[{"name":"d","type":"SET","set":{"item":["x","y"]}}]`,
		`[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"revocable":{}}]`,
		`[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"allocation_info":{"role":"r"}}]`,
		`[{"name":"disk","type":"SCALAR","scalar":{"value":10},"reservations":[{"type":"DYNAMIC","role":"db","principal":"p"}],"disk":{"persistence":{"id":"v"},"volume":{"container_path":"d","mode":"RW"}},"shared":{}}]`,
		`[{"name":"disk","type":"SCALAR","scalar":{"value":10},"disk":{"source":{"type":"MOUNT","mount":{"root":"/m"}}}}]`,
		`[{"name":"cpus","type":"SCALAR","scalar":{"value":-1}}]`,
		`{"name":"cpus"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseJSON(data)
		if err != nil {
			return
		}
		checkInvariants(t, r)
	})
}
