package authn

import (
	"strings"
	"testing"
)

// The parsers of attacker-supplied and operator-supplied input never
// panic, and what they accept satisfies their invariants.

func FuzzParseBasic(f *testing.F) {
	for _, s := range []string{"Basic YTpi", "basic YTpi", "Basic ", "Bearer x", "Basic Og==", "Basic YQ==", "Basic %%%", "Basic YTpiOmM="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		p, s, err := ParseBasic([]string{h})
		if err != nil {
			if p != "" || s != "" {
				t.Fatalf("error %v with a result (%q, %q)", err, p, s)
			}
			return
		}
		if p == "" || strings.Contains(p, ":") {
			t.Fatalf("accepted principal %q", p)
		}
		// What parses re-encodes to a header that parses the same.
		p2, s2, err := ParseBasic([]string{Credential{Principal: p, Secret: s}.BasicHeader()})
		if err != nil || p2 != p || s2 != s {
			t.Fatalf("round trip of (%q, %q): (%q, %q, %v)", p, s, p2, s2, err)
		}
	})
}

func FuzzParseCredentials(f *testing.F) {
	for _, s := range []string{
		`{"credentials":[{"principal":"a","secret":"b"}]}`,
		"a b\nc d\n",
		`{"credentials":[]}`,
		"",
		`{"principal":"a","secret":"b"}`,
		"a:b c",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := ParseCredentials(data)
		if err == nil {
			seen := map[string]bool{}
			for _, c := range cs {
				if c.validate("fuzz") != nil || seen[c.Principal] {
					t.Fatalf("accepted an invalid or duplicate credential for %q", c.Principal)
				}
				seen[c.Principal] = true
			}
			a := NewAuthenticator(cs)
			for _, c := range cs {
				if !a.Authenticate(c.Principal, c.Secret) || a.Authenticate(c.Principal, c.Secret+"x") {
					t.Fatalf("authenticator disagrees with the credentials of %q", c.Principal)
				}
			}
		}
		if c, err := ParseCredential(data); err == nil && c.validate("fuzz") != nil {
			t.Fatalf("ParseCredential accepted an invalid credential for %q", c.Principal)
		}
	})
}
