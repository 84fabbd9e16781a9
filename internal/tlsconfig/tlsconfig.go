// Package tlsconfig builds the TLS configurations of mezzo's listeners and
// clients from Mesos-style files (--tls_cert_file, --tls_key_file,
// --tls_ca_file, --tls_verify_peer, or Mesos's LIBPROCESS_SSL_*
// environment), and reloads them without a restart.
//
// How the processes use it:
//
//  1. Load the Files once (FromEnv first fills what the flags left empty).
//  2. Servers (the master's and the agent's HTTP, Raft between masters)
//     take Source.Server; clients (agents to masters, the master to agents
//     and to its Raft peers, mezzo run, the CLI, executors) take
//     Source.Client, and HTTP clients wrap their transport in HTTPS so
//     that every "http://" URL they build goes over TLS.
//  3. On SIGHUP the process calls Source.Reload: new connections use the
//     new certificate and CA at once; established ones (agents' streams,
//     running tasks' executors) are not touched.
//
// A Source is safe for concurrent use; the configurations it returns read
// its current material at every handshake.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
)

// Files are where a process's certificate, key and trusted CAs live.
type Files struct {
	// Cert and Key are PEM files of this process's certificate (chain) and
	// private key: required to serve TLS, optional for a client (its
	// client certificate, for servers that verify peers).
	Cert, Key string
	// CA is a PEM file of the certificates this process trusts: the
	// servers it connects to must present a chain to one of them, and so
	// must its clients with VerifyPeer. Empty: the system's roots.
	CA string
	// VerifyPeer makes a server require a client certificate that chains
	// to CA (mutual TLS).
	VerifyPeer bool
}

// Enabled reports whether any TLS file is configured: a process with
// none speaks plain HTTP.
func (f Files) Enabled() bool { return f.Cert != "" || f.Key != "" || f.CA != "" }

// FromEnv fills the fields flags left unset from Mesos's environment
// (libprocess's SSL settings), so that a Mesos deployment's variables
// work unchanged: LIBPROCESS_SSL_CERT_FILE, LIBPROCESS_SSL_KEY_FILE,
// LIBPROCESS_SSL_CA_FILE, and LIBPROCESS_SSL_REQUIRE_CERT (or its older
// name LIBPROCESS_SSL_REQUIRE_CLIENT_CERT) for VerifyPeer. They apply only
// when LIBPROCESS_SSL_ENABLED is true, as in Mesos. mezzo clients always
// verify the servers' certificates, so LIBPROCESS_SSL_VERIFY_CERT has
// nothing to turn on.
func FromEnv(f *Files, lookup func(string) (string, bool)) error {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	on, err := boolEnv("LIBPROCESS_SSL_ENABLED", get("LIBPROCESS_SSL_ENABLED"))
	if err != nil || !on {
		return err
	}
	for _, e := range []struct {
		field *string
		name  string
	}{{&f.Cert, "LIBPROCESS_SSL_CERT_FILE"}, {&f.Key, "LIBPROCESS_SSL_KEY_FILE"}, {&f.CA, "LIBPROCESS_SSL_CA_FILE"}} {
		if *e.field == "" {
			*e.field = get(e.name)
		}
	}
	for _, name := range []string{"LIBPROCESS_SSL_REQUIRE_CERT", "LIBPROCESS_SSL_REQUIRE_CLIENT_CERT"} {
		v, err := boolEnv(name, get(name))
		if err != nil {
			return err
		}
		f.VerifyPeer = f.VerifyPeer || v
	}
	return nil
}

func boolEnv(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "", "0", "false", "no":
		return false, nil
	case "1", "true", "yes":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: expecting true or false", name, v)
}

// material is one loaded set of files.
type material struct {
	cert *tls.Certificate // nil: none (a client without a certificate)
	pool *x509.CertPool   // the trusted CAs
}

// Source is a process's TLS material, reloadable.
type Source struct {
	files Files
	cur   atomic.Pointer[material]
}

// Load reads f. The certificate and key must come together; VerifyPeer
// needs a CA to verify peers against.
func Load(f Files) (*Source, error) {
	if (f.Cert == "") != (f.Key == "") {
		return nil, errors.New("--tls_cert_file and --tls_key_file go together: give both or neither")
	}
	if f.VerifyPeer && f.CA == "" {
		return nil, errors.New("--tls_verify_peer needs --tls_ca_file: the CA client certificates must chain to")
	}
	s := &Source{files: f}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Files returns the files s reads.
func (s *Source) Files() Files { return s.files }

// Reload reads the files again; on error the material in use stays.
func (s *Source) Reload() error {
	m := &material{}
	if s.files.Cert != "" {
		c, err := tls.LoadX509KeyPair(s.files.Cert, s.files.Key)
		if err != nil {
			return fmt.Errorf("--tls_cert_file %s / --tls_key_file %s: %w", s.files.Cert, s.files.Key, err)
		}
		m.cert = &c
	}
	if s.files.CA != "" {
		pem, err := os.ReadFile(s.files.CA)
		if err != nil {
			return fmt.Errorf("--tls_ca_file: %w", err)
		}
		m.pool = x509.NewCertPool()
		if !m.pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls_ca_file %s: no PEM certificate in it", s.files.CA)
		}
	} else {
		pool, err := x509.SystemCertPool()
		if err != nil {
			return fmt.Errorf("reading the system's CA certificates (give --tls_ca_file): %w", err)
		}
		m.pool = pool
	}
	s.cur.Store(m)
	return nil
}

// nextProtos are offered by servers: HTTP/2 (agents share connections)
// and HTTP/1.1 (frameworks and tools).
var nextProtos = []string{"h2", "http/1.1"}

// Peers says what a server asks of its clients' certificates.
type Peers int

const (
	// PeersAsConfigured: with Files.VerifyPeer a client must present a
	// certificate chaining to the CA (mutual TLS); without, none is asked.
	PeersAsConfigured Peers = iota
	// PeersOptional: with Files.VerifyPeer a certificate is verified if
	// given and the server decides per request (the agent lets its
	// executors in by their tokens).
	PeersOptional
	// PeersRequired: always mutual TLS, whatever Files.VerifyPeer says
	// (Raft among the masters); needs a CA file.
	PeersRequired
)

// Server is the configuration of a TLS listener with the given policy for
// client certificates. The certificate and CA are read at each handshake,
// so Reload applies to the next connection.
func (s *Source) Server(peers Peers) (*tls.Config, error) {
	if s.cur.Load().cert == nil {
		return nil, errors.New("serving TLS needs --tls_cert_file and --tls_key_file")
	}
	if peers == PeersRequired && s.files.CA == "" {
		return nil, errors.New("mutual TLS needs --tls_ca_file: the CA the peers' certificates chain to")
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: nextProtos,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			c := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: nextProtos, Certificates: []tls.Certificate{*m.cert}}
			switch {
			case peers == PeersRequired, peers == PeersAsConfigured && s.files.VerifyPeer:
				c.ClientCAs, c.ClientAuth = m.pool, tls.RequireAndVerifyClientCert
			case peers == PeersOptional && s.files.VerifyPeer:
				c.ClientCAs, c.ClientAuth = m.pool, tls.VerifyClientCertIfGiven
			}
			return c, nil
		},
	}, nil
}

// Client is the configuration of a TLS client: it verifies the server's
// chain against the current CA and its name against the address dialled
// (an IP address must be in the certificate's IP SANs), and presents the
// current certificate when the server asks for one.
func (s *Source) Client() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The standard verification would use a pool fixed here; this one
		// reads the current pool at each handshake (Reload), and does
		// exactly what the standard one does with it.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server presented no certificate")
			}
			opts := x509.VerifyOptions{DNSName: cs.ServerName, Roots: s.cur.Load().pool, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if c := s.cur.Load().cert; c != nil {
				return c, nil
			}
			return &tls.Certificate{}, nil // none: the server decides
		},
	}
}

// HTTPS wraps an HTTP transport so that every request goes over TLS: a
// request for "http://host/..." is sent as "https://host/...". mezzo's
// clients build URLs from host:port (and masters redirect with
// protocol-relative Locations), and a TLS cluster is TLS everywhere; the
// base transport must carry the Client configuration.
func HTTPS(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return httpsTransport{base: base}
}

type httpsTransport struct {
	base http.RoundTripper
	// hint, when set, says what the failed request's handshake suggests.
	hint func() string
}

func (t httpsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "http" {
		return t.base.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme = "https"
	resp, err := t.base.RoundTrip(r2)
	if err != nil {
		if t.hint != nil {
			if h := t.hint(); h != "" {
				return nil, fmt.Errorf("over TLS (https://%s): %s: %w", r.URL.Host, h, err)
			}
		}
		return nil, fmt.Errorf("over TLS (https://%s): %w", r.URL.Host, err)
	}
	return resp, nil
}

// Transport returns an HTTP transport over TLS with s's client
// configuration (HTTP/2 when the server offers it), wrapped in HTTPS.
//
// A client without a certificate learns that a server with mutual TLS
// refused it only from an alert that, in TLS 1.3, may arrive after its
// first write already failed (a reset, a broken pipe): the transport
// notes when a server asked for a certificate it does not have, and its
// errors then say so.
func (s *Source) Transport() http.RoundTripper {
	var askedNone atomic.Bool
	cfg := s.Client()
	get := cfg.GetClientCertificate
	cfg.GetClientCertificate = func(i *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c, err := get(i)
		if err == nil && len(c.Certificate) == 0 {
			askedNone.Store(true)
		}
		return c, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	t.ForceAttemptHTTP2 = true
	return httpsTransport{base: t, hint: func() string {
		if askedNone.Load() {
			return "the server asks for a client certificate and none is configured (--tls_cert_file, --tls_key_file)"
		}
		return ""
	}}
}

// CloseIdler is what HTTPS's base may offer: closing idle connections
// (http.Client.CloseIdleConnections reaches it through the wrapper).
func (t httpsTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
