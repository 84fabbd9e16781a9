package docker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key, in PEM, for a server (127.0.0.1)
// or a client.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// certDir writes a DOCKER_CERT_PATH directory: ca.pem, cert.pem, key.pem.
func certDir(t *testing.T, caPEM, certPEM, keyPEM []byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range map[string][]byte{"ca.pem": caPEM, "cert.pem": certPEM, "key.pem": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A tcp:// engine behind TLS that requires a client certificate (as
// dockerd --tlsverify): the containerizer connects with DOCKER_CERT_PATH's
// certificate and verifies the engine's against its ca.pem when
// DOCKER_TLS_VERIFY is set. Without the certificates, or against an engine
// whose certificate another CA signed, it fails clearly. (Not parallel:
// the TLS settings are environment variables.)
func TestTLSEngine(t *testing.T) {
	ca := newTestCA(t, "mezzo test CA")
	srvCert, srvKey := ca.issue(t, "engine", true)
	cliCert, cliKey := ca.issue(t, "agent", false)
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	fake := &fakeEngine{min: "1.44", max: "1.47"}
	var clientCN string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			clientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		fake.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()
	socket := "tcp://" + srv.Listener.Addr().String()
	good := certDir(t, ca.pem, cliCert, cliKey)

	recoverWith := func(certPath, verify string) error {
		t.Setenv("DOCKER_CERT_PATH", certPath)
		t.Setenv("DOCKER_TLS_VERIFY", verify)
		d, err := New(Config{Socket: socket, Owner: "o", RemoveDelay: -1})
		if err != nil {
			return err
		}
		defer d.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = d.Recover(ctx)
		return err
	}

	if err := recoverWith(good, "1"); err != nil {
		t.Fatalf("TLS engine: %v", err)
	}
	if clientCN != "agent" {
		t.Errorf("the engine saw client certificate %q", clientCN)
	}
	if !strings.Contains(fake.recorded()[len(fake.recorded())-1].path, "/v1.47/containers/json") {
		t.Errorf("calls %+v", fake.recorded())
	}

	for _, tc := range []struct {
		name, certPath, verify, want string
	}{
		{"verify without certificates", "", "1", "DOCKER_TLS_VERIFY is set but DOCKER_CERT_PATH is not"},
		{"plain text to a TLS engine", "", "", "docker engine at " + socket},
		{"engine signed by another CA", func() string {
			other := newTestCA(t, "another CA")
			return certDir(t, other.pem, cliCert, cliKey)
		}(), "1", "certificate signed by unknown authority"},
		{"missing certificate files", t.TempDir(), "1", "DOCKER_CERT_PATH"},
	} {
		err := recoverWith(tc.certPath, tc.verify)
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}

	// DOCKER_HOST names the engine when --docker_socket is empty; the TLS
	// settings do not apply to a unix socket.
	t.Setenv("DOCKER_HOST", socket)
	t.Setenv("DOCKER_CERT_PATH", good)
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	d, err := New(Config{Owner: "o", RemoveDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Recover(context.Background()); err != nil {
		t.Errorf("DOCKER_HOST: %v", err)
	}
	d.Close()
	f2 := &fakeEngine{min: "1.12", max: "1.41"}
	sock := f2.serveUnix(t)
	d, err = New(Config{Socket: sock, Owner: "o", RemoveDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Recover(context.Background()); err != nil {
		t.Errorf("unix socket with TLS settings in the environment: %v", err)
	}
	d.Close()
	t.Setenv("DOCKER_HOST", "ssh://host")
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), `DOCKER_HOST "ssh://host"`) {
		t.Errorf("ssh:// host: %v", err)
	}
}
