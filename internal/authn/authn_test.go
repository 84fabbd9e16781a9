package authn

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestParseCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Credential
		err      string
	}{
		{name: "json", in: `{"credentials":[{"principal":"a","secret":"s1"},{"principal":"b","secret":"s 2"}]}`,
			want: []Credential{{"a", "s1"}, {"b", "s 2"}}},
		{name: "text", in: "a s1\n\n  b   s2  \n", want: []Credential{{"a", "s1"}, {"b", "s2"}}},
		{name: "text crlf", in: "a s1\r\nb s2\r\n", want: []Credential{{"a", "s1"}, {"b", "s2"}}},
		{name: "empty", in: "", err: "no credential found"},
		{name: "empty json list", in: `{"credentials":[]}`, err: "no credential found"},
		{name: "text three fields", in: "a b c\n", err: "line 1: expecting 'principal secret', found 3 fields"},
		{name: "duplicate", in: "a x\na y\n", err: `principal "a" is listed twice`},
		{name: "json unknown key", in: `{"credentials":[{"principal":"a","secret":"s","extra":1}]}`, err: `unknown field "extra"`},
		{name: "json no secret", in: `{"credentials":[{"principal":"a"}]}`, err: `credentials[0]: principal "a" has an empty 'secret'`},
		{name: "json no principal", in: `{"credentials":[{"secret":"s"}]}`, err: "credentials[0]: 'principal' is empty"},
		{name: "colon in principal", in: "a:b s\n", err: "contains ':'"},
		{name: "json syntax", in: `{"credentials":[{"principal":"a","secret":"hunter2"`, err: "unexpected end of input"},
		{name: "json wrong type", in: `{"credentials":[{"principal":"a","secret":7}]}`, err: `field "credentials.secret" must be a string`},
		{name: "trailing", in: `{"credentials":[{"principal":"a","secret":"s"}]} {}`, err: "trailing data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCredentials([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got[%d] = %#v, want principal %q", i, got[i], tc.want[i].Principal)
				}
			}
		})
	}
}

// No error of the parsers quotes a secret.
func TestParseErrorsHideSecrets(t *testing.T) {
	const secret = "hunter2-very-secret"
	for _, in := range []string{
		`{"credentials":[{"principal":"a","secret":"` + secret + `"`,
		`{"credentials":[{"principal":"a","secret":"` + secret + `","x":"` + secret + `"}]}`,
		"a " + secret + " more\n",
		"a:" + secret + " " + secret + "\n",
		`{"principal":"a","secret":"` + secret + `"} trailing`,
		`{"credentials":[{"principal":"a","secret":"` + secret + "\x00" + `"}]}`,
	} {
		_, err1 := ParseCredentials([]byte(in))
		_, err2 := ParseCredential([]byte(in))
		for _, err := range []error{err1, err2} {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("error quotes the secret: %v", err)
			}
		}
	}
	c := Credential{Principal: "a", Secret: secret}
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
		if strings.Contains(s, secret) {
			t.Errorf("formatting shows the secret: %s", s)
		}
	}
}

func TestParseCredential(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Credential
		err  string
	}{
		{in: `{"principal":"agent","secret":"pw"}`, want: Credential{"agent", "pw"}},
		{in: "agent pw\n", want: Credential{"agent", "pw"}},
		{in: "agent\n", err: "found 1 fields"},
		{in: "a b\nc d\n", err: "found 4 fields"},
		{in: `{"principal":"agent"}`, err: "empty 'secret'"},
	} {
		got, err := ParseCredential([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %v, %v", tc.in, got, err)
		}
	}
}

func TestLoadCredentialsFileURLAndPermissions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "creds")
	if err := os.WriteFile(p, []byte("a s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, warn, err := LoadCredentials("file://" + p)
	if err != nil || len(cs) != 1 {
		t.Fatalf("LoadCredentials: %v %v", cs, err)
	}
	if !strings.Contains(warn, "too open") {
		t.Errorf("no warning for a world-readable file: %q", warn)
	}
	os.Chmod(p, 0o600)
	if _, warn, _ = LoadCredentials(p); warn != "" {
		t.Errorf("warning for a private file: %q", warn)
	}
	if _, _, err := LoadCredentials(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--credentials") {
		t.Errorf("missing file: %v", err)
	}
}

func basic(s string) []string {
	return []string{"Basic " + base64.StdEncoding.EncodeToString([]byte(s))}
}

func TestParseBasic(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		p, s   string
		err    error
	}{
		{"ok", basic("a:b"), "a", "b", nil},
		{"colon in secret", basic("a:b:c"), "a", "b:c", nil},
		{"empty secret", basic("a:"), "a", "", nil},
		{"lower-case scheme", []string{"basic " + base64.StdEncoding.EncodeToString([]byte("a:b"))}, "a", "b", nil},
		{"none", nil, "", "", ErrNoCredentials},
		{"two headers", append(basic("a:b"), basic("c:d")...), "", "", ErrMalformed},
		{"bearer", []string{"Bearer xyz"}, "", "", ErrMalformed},
		{"no payload", []string{"Basic"}, "", "", ErrMalformed},
		{"not base64", []string{"Basic !!!"}, "", "", ErrMalformed},
		{"unpadded", []string{"Basic " + base64.RawStdEncoding.EncodeToString([]byte("a:bc"))}, "", "", ErrMalformed},
		{"no colon", basic("ab"), "", "", ErrMalformed},
		{"empty principal", basic(":b"), "", "", ErrMalformed},
	} {
		p, s, err := ParseBasic(tc.values)
		if !errors.Is(err, tc.err) || p != tc.p || s != tc.s {
			t.Errorf("%s: got (%q, %q, %v), want (%q, %q, %v)", tc.name, p, s, err, tc.p, tc.s, tc.err)
		}
	}
}

func TestAuthenticator(t *testing.T) {
	a := NewAuthenticator([]Credential{{"a", "secret-a"}, {"b", "secret-b"}})
	for _, tc := range []struct {
		p, s string
		ok   bool
	}{
		{"a", "secret-a", true},
		{"b", "secret-b", true},
		{"a", "secret-b", false},
		{"a", "secret-a ", false},
		{"a", "", false},
		{"c", "secret-a", false},
		{"", "", false},
	} {
		if got := a.Authenticate(tc.p, tc.s); got != tc.ok {
			t.Errorf("Authenticate(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.ok)
		}
	}
	if _, err := a.Check(basic("a:nope")); !errors.Is(err, ErrWrongCredentials) {
		t.Errorf("wrong secret: %v", err)
	}
	if p, err := a.Check(basic("b:secret-b")); err != nil || p != "b" {
		t.Errorf("right secret: %q %v", p, err)
	}
}

func TestGuard(t *testing.T) {
	var failures atomic.Int64
	var logs bytes.Buffer
	g := &Guard{
		Authenticator: NewAuthenticator([]Credential{{"ops", "pw"}}),
		Required:      map[Realm]bool{MasterReadwrite: true},
		Log:           slog.New(slog.NewTextHandler(&logs, nil)),
		Failures:      &failures,
	}
	for _, tc := range []struct {
		name   string
		realm  Realm
		header []string
		ok     bool
		who    string
	}{
		{"required, none", MasterReadwrite, nil, false, ""},
		{"required, right", MasterReadwrite, basic("ops:pw"), true, "ops"},
		{"required, wrong", MasterReadwrite, basic("ops:guess"), false, ""},
		{"optional, none", MasterReadonly, nil, true, ""},
		{"optional, right", MasterReadonly, basic("ops:pw"), true, "ops"},
		{"optional, wrong", MasterReadonly, basic("ops:guess"), false, ""},
		{"optional, malformed", MasterReadonly, []string{"Basic %%%"}, false, ""},
	} {
		r := httptest.NewRequest("GET", "/x", nil)
		for _, h := range tc.header {
			r.Header.Add("Authorization", h)
		}
		w := httptest.NewRecorder()
		who, ok := g.Check(w, r, tc.realm)
		if ok != tc.ok || who != tc.who {
			t.Errorf("%s: got (%q, %v), want (%q, %v)", tc.name, who, ok, tc.who, tc.ok)
		}
		if !ok {
			if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != `Basic realm="`+string(tc.realm)+`"` {
				t.Errorf("%s: refusal %d %q", tc.name, w.Code, w.Header().Get("WWW-Authenticate"))
			}
		}
	}
	if n := failures.Load(); n != 4 {
		t.Errorf("failures counted %d, want 4", n)
	}
	if strings.Contains(logs.String(), "guess") || !strings.Contains(logs.String(), "principal=ops") {
		t.Errorf("log must name the principal tried and never the secret:\n%s", logs.String())
	}
	// Without credentials configured, an optional realm ignores headers
	// and a required one fails closed.
	open := &Guard{Required: map[Realm]bool{MasterReadwrite: true}}
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header["Authorization"] = basic("x:y")
	if who, ok := open.Check(httptest.NewRecorder(), r, MasterReadonly); !ok || who != "" {
		t.Errorf("no authenticator, optional realm: (%q, %v)", who, ok)
	}
	if _, ok := open.Check(httptest.NewRecorder(), r, MasterReadwrite); ok {
		t.Error("no authenticator, required realm: let in")
	}
}

func TestTransportPresentsCredential(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		if r.URL.Path == "/first" {
			http.Redirect(w, r, "/second", http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	c := &Credential{Principal: "fw", Secret: "pw"}
	hc := &http.Client{Transport: c.Transport(nil)}
	resp, err := hc.Get(srv.URL + "/first")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := c.BasicHeader()
	if len(got) != 2 || got[0] != want || got[1] != want {
		t.Fatalf("headers seen %q, want %q twice", got, want)
	}
	if p, s, err := ParseBasic([]string{want}); err != nil || p != "fw" || s != "pw" {
		t.Fatalf("BasicHeader does not round-trip: %q %q %v", p, s, err)
	}
}

// The cost authentication adds to each request that presents credentials
// (every agent call with --authenticate_agents): docs/benchmarks.md.
func BenchmarkCheck(b *testing.B) {
	creds := make([]Credential, 1000)
	for i := range creds {
		creds[i] = Credential{Principal: fmt.Sprintf("agent-%d", i), Secret: fmt.Sprintf("secret-%d-xxxxxxxxxxxxxxxx", i)}
	}
	a := NewAuthenticator(creds)
	header := []string{creds[500].BasicHeader()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Check(header); err != nil {
			b.Fatal(err)
		}
	}
}
