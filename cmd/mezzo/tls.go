package main

import (
	"context"
	"crypto/tls"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"mezzo/internal/authn"
	"mezzo/internal/flagenv"
	"mezzo/internal/tlsconfig"
)

// tlsFlags are the TLS flags of a server (master, agent) or a client
// (mezzo run, the CLI); Mesos's LIBPROCESS_SSL_* variables fill what they
// leave empty (tlsconfig.FromEnv).
type tlsFlags struct{ files tlsconfig.Files }

func addTLSFlags(fs *flag.FlagSet, server bool) *tlsFlags {
	f := &tlsFlags{}
	if server {
		fs.StringVar(&f.files.Cert, "tls_cert_file", "", "PEM certificate (chain) to serve TLS with, also presented to the peers this process connects to; with it every listener is TLS only")
		fs.StringVar(&f.files.Key, "tls_key_file", "", "PEM private key of --tls_cert_file")
		fs.StringVar(&f.files.CA, "tls_ca_file", "", "PEM CA certificates trusted for the peers' certificates (default: the system's)")
		fs.BoolVar(&f.files.VerifyPeer, "tls_verify_peer", false, "mutual TLS: clients must present a certificate chaining to --tls_ca_file")
		return f
	}
	fs.StringVar(&f.files.CA, "tls_ca_file", "", "talk TLS to the cluster, trusting the PEM CA certificates in this file")
	fs.StringVar(&f.files.Cert, "tls_cert_file", "", "PEM client certificate to present to a cluster with --tls_verify_peer")
	fs.StringVar(&f.files.Key, "tls_key_file", "", "PEM private key of --tls_cert_file")
	return f
}

// source loads the TLS material; nil when TLS is off.
func (f *tlsFlags) source() (*tlsconfig.Source, error) {
	if f == nil {
		return nil, nil
	}
	files := f.files
	if err := tlsconfig.FromEnv(&files, flagenv.OSLookup); err != nil {
		return nil, err
	}
	if !files.Enabled() {
		return nil, nil
	}
	return tlsconfig.Load(files)
}

// caFile is the CA file the flags name, as executors are told it
// (--tls_ca_file, else LIBPROCESS_SSL_CA_FILE).
func (f *tlsFlags) caFile() string {
	if f == nil {
		return ""
	}
	files := f.files
	tlsconfig.FromEnv(&files, flagenv.OSLookup)
	return files.CA
}

// serveTLS makes srv a TLS server (HTTP/2 by ALPN) on ln with peers as
// its policy for client certificates; with a nil src it changes nothing.
func serveTLS(srv *http.Server, ln net.Listener, src *tlsconfig.Source, peers tlsconfig.Peers) (net.Listener, error) {
	if src == nil {
		return ln, nil
	}
	cfg, err := src.Server(peers)
	if err != nil {
		return nil, err
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	srv.Protocols = &p
	srv.TLSConfig = cfg
	return tls.NewListener(tlsconfig.RefusePlaintextH2(ln), cfg), nil
}

// clientFlags are what mezzo run and the CLI take to reach a secured
// cluster: TLS and a credential.
type clientFlags struct {
	tls        *tlsFlags
	credential string
}

// transport is the HTTP transport of a client with these flags: over TLS
// when a CA or certificate is given, presenting the credential if one is.
func (c *clientFlags) transport() (http.RoundTripper, *authn.Credential, error) {
	cred, err := loadCredential(c.credential, nil)
	if err != nil {
		return nil, nil, err
	}
	src, err := c.tls.source()
	if err != nil {
		return nil, nil, err
	}
	var base http.RoundTripper
	if src != nil {
		base = src.Transport()
	}
	return cred.Transport(base), cred, nil
}

// reloadOnHUP reloads the TLS material of srcs whenever the process gets
// SIGHUP, until ctx ends: new connections get the new certificates, the
// established ones (agents' streams, executors, frameworks) are kept.
func reloadOnHUP(ctx context.Context, log *slog.Logger, srcs ...*tlsconfig.Source) {
	var live []*tlsconfig.Source
	for _, s := range srcs {
		if s != nil {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				for _, s := range live {
					if err := s.Reload(); err != nil {
						log.Error("SIGHUP: TLS files not reloaded; the previous ones stay in use", "err", err)
					} else {
						log.Info("SIGHUP: TLS certificate and CA reloaded", "cert", s.Files().Cert, "ca", s.Files().CA)
					}
				}
			}
		}
	}()
}
