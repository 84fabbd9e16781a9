package exectoken

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzVerify feeds arbitrary strings to the verifier. Whatever the input,
// Verify must not panic, must fail with ErrInvalid or ErrForeign, and may
// accept a token only if it is exactly one the key signed for alice (the
// fuzzer cannot produce an HMAC it does not know, so every acceptance must
// re-verify and parse back to alice).
func FuzzVerify(f *testing.F) {
	valid, err := Mint(testKey, alice, t0, t0.Add(time.Hour))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add("")
	f.Add("..")
	f.Add(forge(`{"alg":"none"}`, goodPay, nil, nil))
	f.Add(forge(hs256, goodPay, sha256.New, otherK.b))
	f.Add(forge(hs256, `{"fid":"fw-1","eid":"exec-b","cid":"c-1","exp":1800003600}`, sha256.New, testKey.b))
	f.Add(strings.Replace(valid, ".", "..", 1))
	f.Fuzz(func(t *testing.T, token string) {
		err := Verify(testKey, token, alice, t0)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrForeign) {
				t.Fatalf("Verify(%q) = %v: neither ErrInvalid nor ErrForeign", token, err)
			}
			return
		}
		p, err := Parse(testKey, token, t0)
		if err != nil || p != alice {
			t.Fatalf("Verify accepted %q but Parse = %v, %v", token, p, err)
		}
		if err := Verify(otherK, token, alice, t0); err == nil {
			t.Fatalf("token %q verifies under two keys", token)
		}
	})
}
