package replog

import (
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The Raft traffic among masters over TLS: hashicorp/raft's
// NetworkTransport takes its connections from a StreamLayer, and this one
// is a TLS listener and a TLS dialler. The handshake verifies both ends
// (the listener's configuration requires the peer's certificate), so a
// process that can reach the Raft port but holds no certificate of the
// cluster's CA cannot take part in elections or write the registry. A
// peer speaking plain TCP fails the handshake ("first record does not
// look like a TLS handshake" in the log) and is dropped.

// tlsStream is a raft.StreamLayer over TLS.
type tlsStream struct {
	ln     net.Listener // a TLS listener
	adv    net.Addr
	client *tls.Config
}

var _ raft.StreamLayer = (*tlsStream)(nil)

func (s *tlsStream) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *tlsStream) Close() error              { return s.ln.Close() }
func (s *tlsStream) Addr() net.Addr            { return s.adv }

// Dial connects to a peer's Raft address and completes the handshake
// within timeout, verifying the peer's certificate against the address's
// host.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(string(address))
	if err != nil {
		return nil, err
	}
	cfg := s.client.Clone()
	cfg.ServerName = host
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
	return d.Dial("tcp", string(address))
}

// newTLSTransport listens on bind over TLS and returns Raft's network
// transport on it, advertising adv.
func newTLSTransport(bind string, adv net.Addr, server, client *tls.Config, logger hclog.Logger) (raft.Transport, error) {
	if adv == nil {
		return nil, errors.New("replog: TLS transport needs an advertised address")
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	stream := &tlsStream{ln: tls.NewListener(ln, server), adv: adv, client: client}
	return raft.NewNetworkTransportWithLogger(stream, 3, 10*time.Second, logger), nil
}
