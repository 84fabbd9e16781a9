package resources

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
)

// The operation properties run random sequences of operations on an
// agent's flag resources and check each step against the naive oracle of
// property_test.go, where an operation is obviously a move of quantity from
// one identity to another. The oracle's stacks: "*" and "a" (static) come
// from the flags, "db" (dynamic on "*") and "a/b" (dynamic refinement of
// "a") are made by RESERVE.

// reserveTo is where RESERVE takes a stack, unreserveTo the inverse.
var (
	reserveTo   = map[string]string{"*": "db", "a": "a/b"}
	unreserveTo = map[string]string{"db": "*", "a/b": "a"}
)

// genFlagTotal draws an agent's resources as its flags give them.
func genFlagTotal(t *rapid.T) Resources {
	// Always some disk, so that volumes get made.
	ps := []*mesos.Resource{sc("disk", float64(rapid.Int64Range(1, 5000).Draw(t, "disk"))/1000, rsv(stack("*")...))}
	for i := range rapid.IntRange(0, 6).Draw(t, "entries") {
		st := rapid.SampledFrom([]string{"*", "a"}).Draw(t, "stack")
		var p *mesos.Resource
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			p = sc("disk", float64(rapid.Int64Range(1, 5000).Draw(t, "disk"))/1000)
		case 1:
			p = sc(rapid.SampledFrom([]string{"cpus", "mem"}).Draw(t, "name"),
				float64(rapid.Int64Range(1, 5000).Draw(t, "scalar"))/1000)
			if rapid.Bool().Draw(t, "revocable") {
				revocableOpt(p)
			}
		case 2:
			b := uint64(10 * i)
			p = rng("ports", b, b+uint64(rapid.IntRange(0, 8).Draw(t, "width")))
		case 3:
			p = sc("gpus", float64(rapid.IntRange(1, 4).Draw(t, "gpus")))
		}
		p.Reservations = stack(st)
		ps = append(ps, p)
	}
	r, err := FromProto(ps)
	if err != nil {
		t.Fatalf("FromProto(%v): %v", ps, err)
	}
	return r
}

// part draws a non-empty part of the oracle entry k and returns it as a
// resource together with its model.
func part(t *rapid.T, k okey, v *oval) (*mesos.Resource, *oval) {
	w := &oval{ints: map[uint64]bool{}, items: map[string]bool{}}
	var p *mesos.Resource
	switch {
	case len(v.ints) > 0:
		ints := slices.Sorted(maps.Keys(v.ints))
		pick := rapid.SliceOfNDistinct(rapid.SampledFrom(ints), 1, len(ints), rapid.ID).Draw(t, "ints")
		ranges := &mesos.Value_Ranges{}
		for _, i := range pick {
			w.ints[i] = true
			ranges.Range = append(ranges.Range, &mesos.Value_Range{Begin: proto.Uint64(i), End: proto.Uint64(i)})
		}
		p = &mesos.Resource{Name: proto.String(k.name), Type: mesos.Value_RANGES.Enum(), Ranges: ranges}
	default:
		w.scalar = rapid.Int64Range(1, v.scalar).Draw(t, "amount")
		p = sc(k.name, fromFixed(w.scalar))
	}
	p.Reservations = stack(k.stack)
	if k.rev {
		revocableOpt(p)
	}
	return p, w
}

func volumeProto(st, id string, size int64) *mesos.Resource {
	return sc("disk", fromFixed(size), rsv(stack(st)...), pv(id))
}

// keysWhere returns the oracle's keys matching keep, sorted for
// reproducible draws.
func keysWhere(o oracle, keep func(okey, *oval) bool) []okey {
	var ks []okey
	for k, v := range o {
		if keep(k, v) {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b okey) int { return strings.Compare(fmt.Sprintf("%+v", a), fmt.Sprintf("%+v", b)) })
	return ks
}

// only is the oracle holding just v of k.
func only(k okey, v *oval) oracle { o := oracle{}; o.add(k, v); return o }

// drawOp draws an applicable operation on the state modelled by o, and
// returns it with the oracle after it and the inverse operation (nil for
// none). ok is false when nothing applicable exists for the drawn kind.
func drawOp(t *rapid.T, o oracle) (op, inverse *mesos.Offer_Operation, after oracle, ok bool) {
	kind := rapid.SampledFrom([]string{"reserve", "unreserve", "create", "destroy", "grow", "shrink"}).Draw(t, "op")
	switch kind {
	case "reserve", "unreserve":
		to := reserveTo
		if kind == "unreserve" {
			to = unreserveTo
		}
		ks := keysWhere(o, func(k okey, _ *oval) bool { _, ok := to[k.stack]; return ok && k.vol == "" })
		if len(ks) == 0 {
			return nil, nil, nil, false
		}
		k := rapid.SampledFrom(ks).Draw(t, "entry")
		src, w := part(t, k, o[k])
		nk := k
		nk.stack = to[k.stack]
		after = o.minus(only(k, w)).plus(only(nk, w))
		if kind == "reserve" {
			dst := proto.Clone(src).(*mesos.Resource)
			dst.Reservations = stack(nk.stack)
			return reserveOp(dst), unreserveOp(dst), after, true
		}
		return unreserveOp(src), reserveOp(src), after, true
	case "create", "grow":
		ks := keysWhere(o, func(k okey, v *oval) bool {
			return k.name == "disk" && k.vol == "" && (k.stack == "db" || k.stack == "a/b") && v.scalar > 0
		})
		if len(ks) == 0 {
			return nil, nil, nil, false
		}
		k := rapid.SampledFrom(ks).Draw(t, "disk")
		size := rapid.Int64Range(1, o[k].scalar).Draw(t, "size")
		disk := &oval{scalar: size, ints: map[uint64]bool{}, items: map[string]bool{}}
		if kind == "create" {
			id := rapid.SampledFrom([]string{"v1", "v2", "v3"}).Draw(t, "id")
			vol := volumeProto(k.stack, id, size)
			vk := okey{name: "disk", stack: k.stack, vol: id, size: size}
			after = o.minus(only(k, disk)).plus(only(vk, &oval{count: 1}))
			return createOp(vol), destroyOp(vol), after, true
		}
		vks := keysWhere(o, func(v okey, _ *oval) bool { return v.vol != "" && v.stack == k.stack })
		if len(vks) == 0 {
			return nil, nil, nil, false
		}
		vk := rapid.SampledFrom(vks).Draw(t, "volume")
		grown := vk
		grown.size += size
		after = o.minus(only(k, disk)).minus(only(vk, &oval{count: 1})).plus(only(grown, &oval{count: 1}))
		return growOp(volumeProto(vk.stack, vk.vol, vk.size), sc("disk", fromFixed(size), rsv(stack(k.stack)...))),
			shrinkOp(volumeProto(grown.stack, grown.vol, grown.size), fromFixed(size)), after, true
	case "destroy", "shrink":
		vks := keysWhere(o, func(v okey, _ *oval) bool { return v.vol != "" })
		if len(vks) == 0 {
			return nil, nil, nil, false
		}
		vk := rapid.SampledFrom(vks).Draw(t, "volume")
		vol := volumeProto(vk.stack, vk.vol, vk.size)
		dk := okey{name: "disk", stack: vk.stack}
		if kind == "destroy" {
			after = o.minus(only(vk, &oval{count: 1})).plus(only(dk, &oval{scalar: vk.size}))
			return destroyOp(vol), createOp(vol), after, true
		}
		if vk.size < 2 {
			return nil, nil, nil, false
		}
		sub := rapid.Int64Range(1, vk.size-1).Draw(t, "subtract")
		shrunk := vk
		shrunk.size -= sub
		after = o.minus(only(vk, &oval{count: 1})).plus(only(shrunk, &oval{count: 1})).plus(only(dk, &oval{scalar: sub}))
		return shrinkOp(vol, fromFixed(sub)),
			growOp(volumeProto(shrunk.stack, shrunk.vol, shrunk.size), sc("disk", fromFixed(sub), rsv(stack(vk.stack)...))),
			after, true
	}
	return nil, nil, nil, false
}

// TestPropertyApply: every applicable operation does what the oracle says,
// never creates or loses a scalar, is undone by its inverse, and what it
// leaves to checkpoint rebuilds the same total from the agent's flags.
func TestPropertyApply(t *testing.T) {
	applied := map[mesos.Offer_Operation_Type]int{}
	rapid.Check(t, func(t *rapid.T) {
		flags := genFlagTotal(t)
		cur := flags
		model := toOracle(t, cur)
		for range rapid.IntRange(1, 24).Draw(t, "steps") {
			op, inverse, after, ok := drawOp(t, model)
			if !ok {
				continue
			}
			applied[op.GetType()]++
			next, err := cur.Apply(op)
			if err != nil {
				t.Fatalf("Apply(%v) on %v: %v", op, cur, err)
			}
			checkModel(t, "after "+op.GetType().String(), next, after)
			if got, want := next.Quantities(), cur.Quantities(); !maps.Equal(got, want) {
				t.Fatalf("%s changed the quantities: %v → %v", op.GetType(), want, got)
			}
			if inverse != nil {
				back, err := next.Apply(inverse)
				if err != nil || !back.Equal(cur) {
					t.Fatalf("inverse %v of %v: got %v, %v; want %v", inverse.GetType(), op.GetType(), back, err, cur)
				}
			}
			rebuilt, err := ApplyCheckpointed(flags, next.Checkpointed())
			if err != nil || !rebuilt.Equal(next) {
				t.Fatalf("ApplyCheckpointed(%v, %v) = %v, %v; want %v", flags, next.Checkpointed(), rebuilt, err, next)
			}
			consumed, converted, err := Conversion(op)
			if err != nil || !cur.Subtract(consumed).Add(converted).Equal(next) {
				t.Fatalf("Conversion(%v) = %v → %v, %v disagrees with Apply", op, consumed, converted, err)
			}
			cur, model = next, after
		}
	})
	// Guard the generator: every kind of operation must have been exercised
	// (each is drawn a few dozen times in a default run).
	for _, k := range []mesos.Offer_Operation_Type{mesos.Offer_Operation_RESERVE, mesos.Offer_Operation_UNRESERVE,
		mesos.Offer_Operation_CREATE, mesos.Offer_Operation_DESTROY, mesos.Offer_Operation_GROW_VOLUME,
		mesos.Offer_Operation_SHRINK_VOLUME} {
		if applied[k] == 0 {
			t.Errorf("the generator never applied %s (applied: %v)", k, applied)
		}
	}
}

// TestPropertyApplyUnavailable: an operation asking for more than there is
// fails with a NotAvailableError and changes nothing.
func TestPropertyApplyUnavailable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cur := genFlagTotal(t)
		model := toOracle(t, cur)
		ks := keysWhere(model, func(k okey, v *oval) bool { return v.scalar > 0 && k.stack == "*" })
		if len(ks) == 0 {
			return
		}
		k := rapid.SampledFrom(ks).Draw(t, "entry")
		extra := rapid.Int64Range(1, 1000).Draw(t, "extra")
		p := sc(k.name, fromFixed(model[k].scalar+extra), dyn("db"))
		if k.rev {
			revocableOpt(p)
		}
		op := rapid.SampledFrom([]*mesos.Offer_Operation{reserveOp(p), unreserveOp(p)}).Draw(t, "op")
		got, err := cur.Apply(op)
		var na *NotAvailableError
		if !errors.As(err, &na) || !got.Equal(cur) {
			t.Fatalf("Apply(%v) = %v, %v; want a NotAvailableError and %v", op, got, err, cur)
		}
	})
}
