package tlsconfig

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var now = time.Now()

func throwaway(t *testing.T, dir string) Files {
	t.Helper()
	f, err := Throwaway(dir, []string{"127.0.0.1", "localhost"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func load(t *testing.T, f Files) *Source {
	t.Helper()
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve starts an HTTPS server on s answering "ok", and returns its
// host:port.
func serve(t *testing.T, s *Source, peers Peers) (string, *httptest.Server) {
	t.Helper()
	cfg, err := s.Server(peers)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			io.WriteString(w, "ok with a client certificate")
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), srv
}

func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b), nil
}

func TestHandshakes(t *testing.T) {
	a := throwaway(t, filepath.Join(t.TempDir(), "a"))
	b := throwaway(t, filepath.Join(t.TempDir(), "b"))
	server := load(t, a)
	addr, _ := serve(t, server, PeersAsConfigured)

	trusting := &http.Client{Transport: load(t, Files{CA: a.CA}).Transport()}
	if got, err := get(trusting, "http://"+addr+"/"); err != nil || got != "200 OK ok" {
		t.Fatalf("client trusting the CA, http:// upgraded: %q %v", got, err)
	}
	wrongCA := &http.Client{Transport: load(t, Files{CA: b.CA}).Transport()}
	if _, err := get(wrongCA, "http://"+addr+"/"); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("client trusting another CA: %v", err)
	}
	if got, err := get(&http.Client{}, "http://"+addr+"/"); err != nil || !strings.Contains(got, "400") || !strings.Contains(got, "HTTP request to an HTTPS server") {
		t.Fatalf("plaintext client: %q %v", got, err)
	}
	byName := &http.Client{Transport: load(t, Files{CA: a.CA}).Transport()}
	if _, err := get(byName, "http://"+strings.Replace(addr, "127.0.0.1", "127.0.0.2", 1)+"/"); err == nil {
		t.Fatal("a name the certificate does not hold was accepted")
	}
}

// An HTTP/2 client with prior knowledge (h2c: an agent without TLS flags)
// is told, in its own protocol, that the port speaks TLS.
func TestPlaintextH2ClientIsTold(t *testing.T) {
	a := throwaway(t, t.TempDir())
	cfg, err := load(t, a).Server(PeersAsConfigured)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(tls.NewListener(RefusePlaintextH2(ln), cfg))
	defer srv.Close()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	resp, err := h2c.Post("http://"+ln.Addr().String()+"/internal/v1/agent", "application/x-protobuf", strings.NewReader("x"))
	if err != nil {
		t.Fatalf("h2c client against a TLS port: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), PlaintextMessage) {
		t.Fatalf("h2c client against a TLS port: %s %q", resp.Status, body)
	}
	// TLS clients are not disturbed by the sniffing.
	if got, err := get(&http.Client{Transport: load(t, Files{CA: a.CA}).Transport()}, "http://"+ln.Addr().String()+"/"); err != nil || got != "200 OK ok" {
		t.Fatalf("TLS client behind the sniffer: %q %v", got, err)
	}
}

func TestMutualTLS(t *testing.T) {
	a := throwaway(t, t.TempDir())
	strict := a
	strict.VerifyPeer = true
	addr, _ := serve(t, load(t, strict), PeersAsConfigured)
	anonymous := &http.Client{Transport: load(t, Files{CA: a.CA}).Transport()}
	if _, err := get(anonymous, "http://"+addr+"/"); err == nil || !strings.Contains(err.Error(), "asks for a client certificate and none is configured") {
		t.Fatalf("a client without a certificate against mutual TLS: %v", err)
	}
	withCert := &http.Client{Transport: load(t, a).Transport()}
	if got, err := get(withCert, "http://"+addr+"/"); err != nil || got != "200 OK ok with a client certificate" {
		t.Fatalf("client with a certificate: %q %v", got, err)
	}
	other := throwaway(t, t.TempDir())
	foreign := other
	foreign.CA = a.CA // trusts the server, presents a certificate of another CA
	if _, err := get(&http.Client{Transport: load(t, foreign).Transport()}, "http://"+addr+"/"); err == nil {
		t.Fatal("a client certificate of another CA passed mutual TLS")
	}
	// Optional: verified if given, else the server decides.
	addr2, _ := serve(t, load(t, strict), PeersOptional)
	if got, err := get(anonymous, "http://"+addr2+"/"); err != nil || got != "200 OK ok" {
		t.Fatalf("optional peer, no certificate: %q %v", got, err)
	}
}

// Reload replaces the certificate for new connections; an established
// connection keeps serving.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	a := throwaway(t, dir)
	server := load(t, a)
	addr, _ := serve(t, server, PeersAsConfigured)
	oldCA := load(t, Files{CA: a.CA})
	old := &http.Client{Transport: oldCA.Transport()}
	if _, err := get(old, "http://"+addr+"/"); err != nil {
		t.Fatal(err)
	}
	b := throwaway(t, dir) // new CA and certificate at the same paths
	if err := server.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, err := get(old, "http://"+addr+"/"); err != nil || got != "200 OK ok" {
		t.Fatalf("established connection after reload: %q %v", got, err)
	}
	fresh := &http.Client{Transport: load(t, Files{CA: b.CA}).Transport()}
	if got, err := get(fresh, "http://"+addr+"/"); err != nil || got != "200 OK ok" {
		t.Fatalf("new connection trusting the new CA: %q %v", got, err)
	}
	if _, err := get(&http.Client{Transport: oldCA.Transport()}, "http://"+addr+"/"); err == nil {
		t.Fatal("a new connection trusting only the old CA accepted the new certificate")
	}

	// A failed reload keeps the material in use.
	broken := load(t, a)
	broken.files.Cert = filepath.Join(dir, "missing.pem")
	if err := broken.Reload(); err == nil {
		t.Fatal("reloading a missing certificate succeeded")
	}
	if broken.cur.Load().cert == nil {
		t.Fatal("failed reload dropped the certificate")
	}
}

func TestLoadErrors(t *testing.T) {
	a := throwaway(t, t.TempDir())
	for _, tc := range []struct {
		f   Files
		err string
	}{
		{Files{Cert: a.Cert}, "go together"},
		{Files{CA: a.CA, VerifyPeer: true, Cert: a.Cert}, "go together"},
		{Files{VerifyPeer: true}, "--tls_verify_peer needs --tls_ca_file"},
		{Files{CA: a.Key}, "no PEM certificate"},
		{Files{Cert: a.CA, Key: a.Key}, "--tls_cert_file"},
	} {
		if _, err := Load(tc.f); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.err)
		}
	}
	if _, err := load(t, Files{CA: a.CA}).Server(PeersAsConfigured); err == nil {
		t.Error("a server without a certificate was configured")
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	var f Files
	if err := FromEnv(&f, env(map[string]string{"LIBPROCESS_SSL_CERT_FILE": "/c"})); err != nil || f.Enabled() {
		t.Fatalf("without LIBPROCESS_SSL_ENABLED: %+v %v", f, err)
	}
	f = Files{Cert: "/flag"}
	err := FromEnv(&f, env(map[string]string{"LIBPROCESS_SSL_ENABLED": "true", "LIBPROCESS_SSL_CERT_FILE": "/c",
		"LIBPROCESS_SSL_KEY_FILE": "/k", "LIBPROCESS_SSL_CA_FILE": "/ca", "LIBPROCESS_SSL_REQUIRE_CERT": "1"}))
	if err != nil || f != (Files{Cert: "/flag", Key: "/k", CA: "/ca", VerifyPeer: true}) {
		t.Fatalf("with LIBPROCESS_SSL_*: %+v %v (flags win)", f, err)
	}
	if err := FromEnv(&f, env(map[string]string{"LIBPROCESS_SSL_ENABLED": "maybe"})); err == nil {
		t.Fatal("a bad boolean was accepted")
	}
}
