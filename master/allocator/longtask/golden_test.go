package longtask

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/transcript"
	"mezzo/resources"
)

var update = flag.Bool("update", false, "rewrite golden transcripts in testdata")

// A golden transcript, as the allocator's (master/allocator/golden_test.go):
// commands, each followed by the ledger's answers on lines starting with
// "> "; go test -run Golden -update rewrites them.
//
//	fraction F                       a new ledger bounding long tasks to F
//	agent ID RES                     an agent's total (SetAgent)
//	remove-agent ID
//	offer OFFER AGENT RES            an offer of RES: its long part
//	unoffer OFFER                    the offer declined or rescinded
//	accept AGENT OFFER,... [long=RES]... [short=RES]...
//	                                 an ACCEPT launching tasks, in order
//	end AGENT RES                    a long task holding RES ended
//	overrun AGENT RES                a short task outlived its declaration
//	books AGENT                      bound, used, offered, headroom
//	declare [label=V] [max=DURATION] a task's declaration (default short 10m)
type harness struct {
	l      *Ledger
	offers map[string]struct {
		agent string
		part  Quantities
	}
	out []string
}

func (h *harness) say(format string, args ...any) {
	h.out = append(h.out, "> "+fmt.Sprintf(format, args...))
}

func (h *harness) exec(line string) error {
	f := strings.Fields(line)
	cmd, args := f[0], f[1:]
	res := func(s string) resources.Resources { return resources.MustParse(s) }
	if cmd != "fraction" && cmd != "declare" && h.l == nil {
		return fmt.Errorf("%s before fraction", cmd)
	}
	switch cmd {
	case "fraction":
		x, err := strconv.ParseFloat(args[0], 64)
		if err != nil {
			return err
		}
		l, err := New(x)
		if err != nil {
			h.say("error: %v", err)
			return nil
		}
		h.l = l
	case "agent":
		h.l.SetAgent(args[0], res(args[1]))
	case "remove-agent":
		h.l.RemoveAgent(args[0])
	case "offer":
		part := h.l.Offer(args[1], res(args[2]))
		h.offers[args[0]] = struct {
			agent string
			part  Quantities
		}{args[1], part}
		h.say("long part %s", show(part))
	case "unoffer":
		o := h.offers[args[0]]
		delete(h.offers, args[0])
		h.l.Unoffer(o.agent, o.part)
	case "accept":
		var parts []Quantities
		for _, id := range strings.Split(args[1], ",") {
			o, ok := h.offers[id]
			if !ok || o.agent != args[0] {
				return fmt.Errorf("accept: no offer %s on %s", id, args[0])
			}
			parts = append(parts, o.part)
			delete(h.offers, id)
		}
		b := h.l.Accept(args[0], parts...)
		for _, t := range args[2:] {
			kind, r, _ := strings.Cut(t, "=")
			switch kind {
			case "long":
				if err := b.Launch(res(r)); err != nil {
					h.say("TASK_ERROR: %v", err)
				} else {
					h.say("long %s runs", r)
				}
			case "short":
				h.say("short %s runs", r)
			default:
				return fmt.Errorf("accept: %q is not long=RES or short=RES", t)
			}
		}
	case "end":
		h.l.Release(args[0], res(args[1]))
	case "overrun":
		h.l.Hold(args[0], res(args[1]))
	case "books":
		if h.l.Bound(args[0]) == nil {
			h.say("unknown agent")
			return nil
		}
		h.say("bound %s; used %s; offered %s; headroom %s", show(h.l.Bound(args[0])), show(h.l.Used(args[0])),
			show(h.l.Offered(args[0])), show(h.l.Headroom(args[0])))
	case "declare":
		var labels *mesos.Labels
		var max *mesos.DurationInfo
		for _, a := range args {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "label":
				labels = &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String(Label), Value: proto.String(v)}}}
			case "max":
				d, err := time.ParseDuration(v)
				if err != nil {
					return err
				}
				max = &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(d))}
			}
		}
		long, within, err := Declare(labels, max, 10*time.Minute)
		switch {
		case err != nil:
			h.say("TASK_ERROR: %v", err)
		case long:
			h.say("long")
		default:
			h.say("short, within %s", within)
		}
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}

func show(q Quantities) string {
	if len(q) == 0 {
		return "none"
	}
	return q.String()
}

func TestGolden(t *testing.T) {
	transcript.Run(t, "testdata/*.txt", *update, func(*testing.T) transcript.Exec {
		h := &harness{offers: map[string]struct {
			agent string
			part  Quantities
		}{}}
		return func(line string) ([]string, error) {
			h.out = nil
			err := h.exec(line)
			return h.out, err
		}
	})
}
