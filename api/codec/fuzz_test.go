package codec_test

import (
	"bytes"
	"testing"

	"mezzo/api/codec"
	"mezzo/api/schedulerpb"
)

// FuzzUnmarshalJSON feeds arbitrary bytes to the JSON decoder as a scheduler
// Call. It must never panic; whatever it accepts must encode to compact JSON
// that decodes again, and encoding is a fixed point after one round.
func FuzzUnmarshalJSON(f *testing.F) {
	seeds := []string{
		`{"type":"SUBSCRIBE","subscribe":{"framework_info":{"user":"u","name":"n","capabilities":[{"type":"RESERVATION_REFINEMENT"}]}}}`,
		`{"framework_id":{"value":"f"},"type":"DECLINE","decline":{"offer_ids":null,"filters":{"refuse_seconds":"Infinity"}}}`,
		`{"framework_id":{"value":"f"},"type":"ACKNOWLEDGE","acknowledge":{"agent_id":{"value":"a"},"task_id":{"value":"t"},"uuid":"MDEyMzQ1Njc4OWFiY2RlZg=="}}`,
		`{"framework_id":{"value":"f"},"type":"ACCEPT","accept":{"offer_ids":[{"value":"o"}],"operations":[{"type":"LAUNCH","launch":{"task_infos":[{"name":"t","task_id":{"value":"t"},"agent_id":{"value":"a"},"resources":[{"name":"ports","type":"RANGES","ranges":{"range":[{"begin":"31000","end":32000}]},"reservations":null}],"command":{"value":"true"}}]}}]}}`,
		`{"type":"SUBSCRIBE","subscribe":{"framework_info":{"user":"u","name":"n","offer_filters":{"*":{"min_allocatable_resources":{"quantities":[{"quantities":{"cpus":{"value":1}}}]}}}},"offer_constraints":{"role_constraints":{"*":{"groups":[{"attribute_constraints":[{"selector":{"attribute_name":"rack"},"predicate":{"exists":{}}}]}]}}}}}`,
		`{"type":7,"kill":{"task_id":{"value":"t"},"kill_policy":{"grace_period":{"nanoseconds":1e9}}}}`,
		`null`, `[]`, `{"type":"REVIVE","revive":{"roles":"web"}}`, `{"framework_id":null}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c schedulerpb.Call
		if err := codec.UnmarshalJSON(data, &c); err != nil {
			return
		}
		out, err := codec.MarshalJSON(&c)
		if err != nil {
			t.Fatalf("marshal after successful decode: %v", err)
		}
		if bytes.ContainsAny(out, "\n\r") {
			t.Fatalf("encoded JSON contains a newline: %q", out)
		}
		var again schedulerpb.Call
		if err := codec.UnmarshalJSON(out, &again); err != nil {
			t.Fatalf("re-decoding our own output %s: %v", out, err)
		}
		out2, _ := codec.MarshalJSON(&again)
		if !bytes.Equal(out, out2) {
			t.Fatalf("encoding is not stable:\n1: %s\n2: %s", out, out2)
		}
	})
}
