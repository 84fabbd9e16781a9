package exectoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"hash"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	t0      = time.Unix(1_800_000_000, 0)
	testKey = mustKey([]byte("0123456789abcdef0123456789abcdef"))
	otherK  = mustKey([]byte("fedcba9876543210fedcba9876543210"))
	alice   = Principal{FrameworkID: "fw-1", ExecutorID: "exec-a", ContainerID: "c-1"}
)

func mustKey(b []byte) Key {
	k, err := NewKey(b)
	if err != nil {
		panic(err)
	}
	return k
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// forge builds a token by hand: header and payload JSON, signed with key
// under the named HMAC (or not signed at all when h is nil).
func forge(header, payload string, h func() hash.Hash, key []byte) string {
	signing := b64(header) + "." + b64(payload)
	if h == nil {
		return signing + "."
	}
	m := hmac.New(h, key)
	m.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

const (
	hs256   = `{"alg":"HS256","typ":"JWT"}`
	goodPay = `{"fid":"fw-1","eid":"exec-a","cid":"c-1","iat":1800000000,"exp":1800003600}`
)

func TestMintVerifyRoundTrip(t *testing.T) {
	tok, err := Mint(testKey, alice, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(testKey, tok, alice, t0.Add(59*time.Minute)); err != nil {
		t.Fatalf("Verify of a fresh token: %v", err)
	}
	got, err := Parse(testKey, tok, t0)
	if err != nil || got != alice {
		t.Fatalf("Parse = %v, %v; want %v", got, err, alice)
	}
	// The hand-built token with the same claims verifies too: forge is a
	// faithful encoder, so the refusals below are refused for their one flaw.
	if err := Verify(testKey, forge(hs256, goodPay, sha256.New, testKey.b), alice, t0); err != nil {
		t.Fatalf("hand-built valid token refused: %v", err)
	}
}

func TestVerifyRefusals(t *testing.T) {
	valid, err := Mint(testKey, alice, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(valid, ".")
	flip := func(s string) string { // change the last base64 character
		c := byte('A')
		if s[len(s)-1] == 'A' {
			c = 'B'
		}
		return s[:len(s)-1] + string(c)
	}
	flipFirst := func(s string) string {
		c := byte('A')
		if s[0] == 'A' {
			c = 'B'
		}
		return string(c) + s[1:]
	}
	mint := func(p Principal) string {
		tok, err := Mint(testKey, p, t0, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tests := []struct {
		name  string
		token string
		now   time.Time
		want  error
	}{
		{"empty", "", t0, ErrInvalid},
		{"one segment", parts[0], t0, ErrInvalid},
		{"two segments", parts[0] + "." + parts[1], t0, ErrInvalid},
		{"four segments", valid + "." + parts[2], t0, ErrInvalid},
		{"empty signature", parts[0] + "." + parts[1] + ".", t0, ErrInvalid},
		{"bad base64 header", "!!!." + parts[1] + "." + parts[2], t0, ErrInvalid},
		{"bad base64 payload", parts[0] + ".*%$." + parts[2], t0, ErrInvalid},
		{"bad base64 signature", parts[0] + "." + parts[1] + ".@@@@", t0, ErrInvalid},
		{"header not JSON", b64("nope") + "." + parts[1] + "." + parts[2], t0, ErrInvalid},
		{"payload not JSON", forge(hs256, "nope", sha256.New, testKey.b), t0, ErrInvalid},
		{"signature with non-canonical base64 tail", parts[0] + "." + parts[1] + "." + flip(parts[2]), t0, ErrInvalid},
		{"tampered signature", parts[0] + "." + parts[1] + "." + flipFirst(parts[2]), t0, ErrInvalid},
		{"header with base64 padding", parts[0] + "=." + parts[1] + "." + parts[2], t0, ErrInvalid},
		{"tampered payload (claims swapped, old signature)",
			parts[0] + "." + b64(`{"fid":"fw-1","eid":"exec-b","cid":"c-1","iat":1800000000,"exp":1800003600}`) + "." + parts[2], t0, ErrInvalid},
		{"alg none, no signature", forge(`{"alg":"none","typ":"JWT"}`, goodPay, nil, nil), t0, ErrInvalid},
		{"alg none, valid HS256 signature kept", forge(`{"alg":"none","typ":"JWT"}`, goodPay, sha256.New, testKey.b), t0, ErrInvalid},
		{"alg NONE", forge(`{"alg":"NONE"}`, goodPay, nil, nil), t0, ErrInvalid},
		{"alg HS512 with our key", forge(`{"alg":"HS512","typ":"JWT"}`, goodPay, sha512.New, testKey.b), t0, ErrInvalid},
		{"alg HS384 with our key", forge(`{"alg":"HS384","typ":"JWT"}`, goodPay, sha512.New384, testKey.b), t0, ErrInvalid},
		{"alg RS256 header, HMAC body", forge(`{"alg":"RS256","typ":"JWT"}`, goodPay, sha256.New, testKey.b), t0, ErrInvalid},
		{"alg missing", forge(`{"typ":"JWT"}`, goodPay, sha256.New, testKey.b), t0, ErrInvalid},
		{"wrong key", forge(hs256, goodPay, sha256.New, otherK.b), t0, ErrInvalid},
		{"wrong key via Mint", func() string {
			tok, err := Mint(otherK, alice, t0, t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}(), t0, ErrInvalid},
		{"expired", valid, t0.Add(time.Hour + time.Second), ErrInvalid},
		{"no exp claim", forge(hs256, `{"fid":"fw-1","eid":"exec-a","cid":"c-1"}`, sha256.New, testKey.b), t0, ErrInvalid},
		{"exp not a number", forge(hs256, `{"fid":"fw-1","eid":"exec-a","cid":"c-1","exp":"soon"}`, sha256.New, testKey.b), t0, ErrInvalid},
		{"issued in the future", forge(hs256, `{"fid":"fw-1","eid":"exec-a","cid":"c-1","iat":1900000000,"exp":1900003600}`, sha256.New, testKey.b), t0, ErrInvalid},
		{"missing cid", forge(hs256, `{"fid":"fw-1","eid":"exec-a","exp":1800003600}`, sha256.New, testKey.b), t0, ErrInvalid},
		{"missing fid", forge(hs256, `{"eid":"exec-a","cid":"c-1","exp":1800003600}`, sha256.New, testKey.b), t0, ErrInvalid},
		{"claims of the wrong type", forge(hs256, `{"fid":1,"eid":"exec-a","cid":"c-1","exp":1800003600}`, sha256.New, testKey.b), t0, ErrInvalid},
		{"foreign executor", mint(Principal{"fw-1", "exec-b", "c-1"}), t0, ErrForeign},
		{"foreign framework", mint(Principal{"fw-2", "exec-a", "c-1"}), t0, ErrForeign},
		{"foreign container (old run of the same executor)", mint(Principal{"fw-1", "exec-a", "c-0"}), t0, ErrForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(testKey, tt.token, alice, tt.now)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
			if tt.want == ErrInvalid && errors.Is(err, ErrForeign) {
				t.Fatalf("Verify = %v: invalid token reported as foreign", err)
			}
		})
	}
}

func TestVerifyWithZeroKeyRefuses(t *testing.T) {
	tok, err := Mint(testKey, alice, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(Key{}, tok, alice, t0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Verify with no key = %v, want ErrInvalid", err)
	}
}

func TestMintRefusals(t *testing.T) {
	tests := []struct {
		name   string
		key    Key
		p      Principal
		expiry time.Time
	}{
		{"no key", Key{}, alice, t0.Add(time.Hour)},
		{"no framework", testKey, Principal{"", "e", "c"}, t0.Add(time.Hour)},
		{"no executor", testKey, Principal{"f", "", "c"}, t0.Add(time.Hour)},
		{"no container", testKey, Principal{"f", "e", ""}, t0.Add(time.Hour)},
		{"expiry now", testKey, alice, t0},
		{"expiry past", testKey, alice, t0.Add(-time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tok, err := Mint(tt.key, tt.p, t0, tt.expiry); err == nil {
				t.Fatalf("Mint = %q, want an error", tok)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("k", MinKeyLen)
	tests := []struct {
		name    string
		path    string
		wantErr string // substring; "" means success
	}{
		{"missing file", filepath.Join(dir, "absent"), "--executor_secret_key"},
		{"empty file", write("empty", ""), "empty"},
		{"only a newline", write("nl", "\n"), "empty"},
		{"too short", write("short", "secret\n"), "at least 32"},
		{"31 bytes", write("k31", long[:MinKeyLen-1]), "at least 32"},
		{"32 bytes", write("k32", long), ""},
		{"32 bytes and newline", write("k32nl", long+"\n"), ""},
		{"32 bytes and CRLF", write("k32crlf", long+"\r\n"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := LoadKey(tt.path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("LoadKey: %v", err)
				}
				if string(k.b) != long {
					t.Fatalf("key = %q, want %q", k.b, long)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LoadKey = %v, want error containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "secret\n") {
				t.Fatalf("error %q shows the key", err)
			}
		})
	}
	// The trailing newline is not part of the key: both files sign alike.
	k1, _ := LoadKey(filepath.Join(dir, "k32"))
	k2, _ := LoadKey(filepath.Join(dir, "k32nl"))
	tok, err := Mint(k1, alice, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(k2, tok, alice, t0); err != nil {
		t.Fatalf("key with newline does not verify key without: %v", err)
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	for _, s := range []string{testKey.String(), testKey.GoString()} {
		if strings.Contains(s, "0123") {
			t.Fatalf("key printed: %q", s)
		}
	}
}

func TestBearer(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
		want    string
		wantErr bool
	}{
		{"none", nil, "", true},
		{"bearer", []string{"Bearer abc.def.ghi"}, "abc.def.ghi", false},
		{"scheme case-insensitive", []string{"bearer abc"}, "abc", false},
		{"extra spaces", []string{"  Bearer   abc  "}, "abc", false},
		{"basic", []string{"Basic dXNlcjpwYXNz"}, "", true},
		{"scheme only", []string{"Bearer"}, "", true},
		{"empty token", []string{"Bearer   "}, "", true},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", true},
		{"no scheme", []string{"abc.def.ghi"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodPost, "http://agent/api/v1/executor", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, err := Bearer(r)
			if tt.wantErr {
				if !errors.Is(err, ErrNoToken) {
					t.Fatalf("Bearer = %q, %v; want ErrNoToken", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Bearer = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestEnvVarIsMesos(t *testing.T) {
	if EnvVar != "MESOS_EXECUTOR_AUTHENTICATION_TOKEN" {
		t.Fatalf("EnvVar = %q", EnvVar)
	}
}
