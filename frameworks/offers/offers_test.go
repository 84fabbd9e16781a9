package offers

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/resources"
)

func revocable(text string) []*mesos.Resource {
	out := resources.MustParse(text).Proto()
	for _, r := range out {
		r.Revocable = &mesos.Resource_RevocableInfo{}
	}
	return out
}

func res(t *testing.T, ps ...[]*mesos.Resource) resources.Resources {
	t.Helper()
	var all []*mesos.Resource
	for _, p := range ps {
		all = append(all, p...)
	}
	r, err := resources.FromProto(all)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseNeed(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "cpus:1;mem:256", want: "cpus:1;mem:256"},
		{in: " cpus:0.5 ; mem:128;ports:2 ", want: "cpus:0.5;mem:128;ports:2"},
		{in: "cpus:1;cpus:1", want: "cpus:2"},
		{in: "", err: "no resources"},
		{in: "cpus", err: "name:quantity"},
		{in: "cpus(web):1", err: "unreserved"},
		{in: "cpus:-1", err: "positive"},
		{in: "cpus:0", err: "positive"},
		{in: "mem:lots", err: "positive"},
		{in: "ports:1.5", err: "whole"},
	} {
		n, err := ParseNeed(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseNeed(%q) = %v, %v; want error with %q", c.in, n, err, c.err)
			}
			continue
		}
		if err != nil || n.String() != c.want {
			t.Errorf("ParseNeed(%q) = %q, %v; want %q", c.in, n, err, c.want)
		}
	}
}

func TestTake(t *testing.T) {
	need, _ := ParseNeed("cpus:2;mem:256;ports:2")
	for _, c := range []struct {
		name  string
		avail resources.Resources
		rev   Revocability
		want  string // taken, as resources text; "" for not ok
	}{
		{"unreserved", res(t, resources.MustParse("cpus:4;mem:1024;ports:[31000-31005]").Proto()), NoRevocable,
			"cpus:2;mem:256;ports:[31000-31001]"},
		{"reserved first", res(t, resources.MustParse("cpus(web):1;cpus:4;mem(web):128;mem:1024;ports:[31000-31005]").Proto()), NoRevocable,
			"cpus(web):1;cpus:1;mem(web):128;mem:128;ports:[31000-31001]"},
		{"too few cpus", res(t, resources.MustParse("cpus:1;mem:1024;ports:[31000-31005]").Proto()), NoRevocable, ""},
		{"too few ports", res(t, resources.MustParse("cpus:4;mem:1024;ports:[31000-31000]").Proto()), NoRevocable, ""},
		{"ports across ranges", res(t, resources.MustParse("cpus:4;mem:1024;ports:[31000-31000,31007-31009]").Proto()), NoRevocable,
			"cpus:2;mem:256;ports:[31000-31000,31007-31007]"},
		{"revocable ignored", res(t, resources.MustParse("cpus:1;mem:1024;ports:[31000-31005]").Proto(), revocable("cpus:4")), NoRevocable, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, rest, ok := Take(c.avail, need, c.rev)
			if c.want == "" {
				if ok || !rest.Equal(c.avail) {
					t.Fatalf("Take = %s, %v; want not ok and avail unchanged", got, ok)
				}
				return
			}
			if !ok || !got.Equal(resources.MustParse(c.want)) {
				t.Fatalf("Take = %s, %v; want %s", got, ok, c.want)
			}
			if !rest.Add(got).Equal(c.avail) {
				t.Fatalf("rest %s + taken %s != avail %s", rest, got, c.avail)
			}
		})
	}
	// Revocable first: cpus come from the revocable estimate, mem (not
	// offered as revocable) from the regular resources.
	avail := res(t, resources.MustParse("cpus:4;mem:1024").Proto(), revocable("cpus:3"))
	n2, _ := ParseNeed("cpus:2;mem:256")
	got, _, ok := Take(avail, n2, PreferRevocable)
	if !ok || got.Revocable().Scalar("cpus") != 2 || got.NonRevocable().Scalar("mem") != 256 || !IsRevocable(got) {
		t.Fatalf("PreferRevocable took %s", got)
	}
	if c := Count(avail, n2, PreferRevocable); c != 3 {
		t.Fatalf("Count = %d, want 3 (7 cpus, 2 each)", c)
	}
	if c := Count(avail, n2, NoRevocable); c != 2 {
		t.Fatalf("Count without revocable = %d, want 2", c)
	}
}

// Property, against sums: Take succeeds exactly when the usable resources
// cover the need, takes exactly the need, only usable resources, and
// taken + rest = avail.
func TestTakeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ps []*mesos.Resource
		usable := map[string]int64{}    // regular
		revUsable := map[string]int64{} // revocable, with PreferRevocable
		rev := Revocability(rapid.IntRange(0, 1).Draw(t, "rev"))
		for i := range rapid.IntRange(0, 6).Draw(t, "n") {
			name := rapid.SampledFrom([]string{"cpus", "mem"}).Draw(t, fmt.Sprint("name", i))
			v := rapid.IntRange(1, 4000).Draw(t, fmt.Sprint("v", i))
			r := &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(),
				Scalar: &mesos.Value_Scalar{Value: proto.Float64(float64(v) / 1000)}}
			if rapid.Bool().Draw(t, fmt.Sprint("reserved", i)) {
				r.Reservations = []*mesos.Resource_ReservationInfo{{Type: mesos.Resource_ReservationInfo_STATIC.Enum(), Role: proto.String("r")}}
			} else if rapid.Bool().Draw(t, fmt.Sprint("revocable", i)) {
				r.Revocable = &mesos.Resource_RevocableInfo{}
			}
			if r.Revocable == nil {
				usable[name] += int64(v)
			} else if rev == PreferRevocable {
				revUsable[name] += int64(v)
			}
			ps = append(ps, r)
		}
		avail, err := resources.FromProto(ps)
		if err != nil {
			t.Fatal(err)
		}
		need := Need{Scalars: map[string]float64{}}
		for _, name := range []string{"cpus", "mem"} {
			if q := rapid.IntRange(0, 5000).Draw(t, "need-"+name); q > 0 {
				need.Scalars[name] = float64(q) / 1000
			}
		}
		want := true
		for name, q := range need.Scalars {
			// One kind per name (Mesos refuses a mix).
			if milli(q) > usable[name] && milli(q) > revUsable[name] {
				want = false
			}
		}
		got, rest, ok := Take(avail, need, rev)
		if ok != want {
			t.Fatalf("Take ok = %v, want %v (usable %v, need %v)", ok, want, usable, need)
		}
		if !rest.Add(got).Equal(avail) {
			t.Fatalf("taken %s + rest %s != avail %s", got, rest, avail)
		}
		if !ok {
			return
		}
		for name, q := range need.Scalars {
			if math.Abs(got.Scalar(name)-q) > 1e-9 {
				t.Fatalf("took %g %s, need %g", got.Scalar(name), name, q)
			}
		}
		if rev == NoRevocable && IsRevocable(got) {
			t.Fatalf("took revocable %s", got)
		}
		for name := range need.Scalars {
			part := got.Named(name)
			if !part.Revocable().IsEmpty() && !part.NonRevocable().IsEmpty() {
				t.Fatalf("took both kinds of %s: %s", name, got)
			}
			if rev == PreferRevocable && part.Revocable().IsEmpty() && milli(need.Scalars[name]) <= revUsable[name] {
				t.Fatalf("took regular %s although revocable ones cover it: %s", name, got)
			}
		}
	})
}

func TestAttributeAndPorts(t *testing.T) {
	o := &mesos.Offer{Attributes: []*mesos.Attribute{
		{Name: proto.String("blocks"), Type: mesos.Value_TEXT.Enum(), Text: &mesos.Value_Text{Value: proto.String("b1,b2")}},
		{Name: proto.String("rack"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(3)}},
	}}
	if v, ok := Attribute(o, "blocks"); !ok || v != "b1,b2" {
		t.Fatalf("blocks = %q, %v", v, ok)
	}
	if v, ok := Attribute(o, "rack"); !ok || v != "3" {
		t.Fatalf("rack = %q, %v", v, ok)
	}
	if _, ok := Attribute(o, "zone"); ok {
		t.Fatal("zone found")
	}
	if p := Ports(resources.MustParse("ports:[31005-31006,31000-31000];cpus:1")); fmt.Sprint(p) != "[31000 31005 31006]" {
		t.Fatalf("Ports = %v", p)
	}
}
