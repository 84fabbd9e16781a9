package tlsconfig

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// A client that speaks plaintext to a TLS port should learn why it is
// refused. Go's HTTP server already answers an HTTP/1 request on a TLS
// connection with "400 Client sent an HTTP request to an HTTPS server";
// an HTTP/2 client with prior knowledge (a mezzo agent without TLS
// flags: h2c) would only see the connection close. RefusePlaintextH2
// recognises the h2c preface and answers in HTTP/2: a 400 whose body says
// what to do, then GOAWAY.

// PlaintextMessage is what an h2c client is told.
const PlaintextMessage = "this port speaks TLS only: use https (mezzo: --tls_ca_file and, with --tls_verify_peer, a certificate)"

var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// errPlaintext ends the connection of a plaintext h2c client.
var errPlaintext = errors.New("tls: plaintext HTTP/2 client on a TLS port")

// RefusePlaintextH2 wraps the raw listener under a TLS listener.
func RefusePlaintextH2(ln net.Listener) net.Listener { return sniffListener{ln} }

type sniffListener struct{ net.Listener }

func (l sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, r: bufio.NewReader(c)}, nil
}

// sniffConn looks at the first bytes a client sends: a TLS record passes
// through untouched (bufio keeps what it peeked), the h2c preface gets
// the GOAWAY.
type sniffConn struct {
	net.Conn
	r    *bufio.Reader
	once sync.Once
	err  error
}

func (c *sniffConn) Read(p []byte) (int, error) {
	c.once.Do(c.sniff)
	if c.err != nil {
		return 0, c.err
	}
	return c.r.Read(p)
}

func (c *sniffConn) sniff() {
	first, err := c.r.Peek(1)
	if err != nil || first[0] == 0x16 { // 0x16: a TLS handshake record
		return
	}
	head, _ := c.r.Peek(len(h2Preface))
	if !bytes.Equal(head, h2Preface) {
		return // HTTP/1 and the rest: the TLS layer and Go's server answer
	}
	// Answer the client's first request (its first HEADERS frame, which
	// must have arrived: a frame on a stream the client has not opened
	// yet is a protocol error to it) with a 400 whose body says why
	// (HPACK 0x8c is ":status: 400" from the static table), then GOAWAY;
	// Go's client returns the 400 as the request's answer.
	c.Conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.Conn.SetReadDeadline(time.Time{})
	c.err = errPlaintext
	c.r.Discard(len(h2Preface))
	var stream uint32
	for stream == 0 {
		var hdr [9]byte
		if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		if _, err := c.r.Discard(n); err != nil {
			return
		}
		if hdr[3] == 0x1 { // HEADERS
			stream = binary.BigEndian.Uint32(hdr[5:]) & 0x7fffffff
		}
	}
	frame := func(typ, flags byte, stream uint32, payload []byte) []byte {
		f := make([]byte, 9, 9+len(payload))
		f[0], f[1], f[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
		f[3], f[4] = typ, flags
		binary.BigEndian.PutUint32(f[5:], stream)
		return append(f, payload...)
	}
	goaway := make([]byte, 8)
	binary.BigEndian.PutUint32(goaway, stream) // last stream: the one answered
	var out []byte
	out = append(out, frame(0x4, 0, 0, nil)...)                                  // SETTINGS
	out = append(out, frame(0x1, 0x4, stream, []byte{0x8c})...)                  // HEADERS, END_HEADERS
	out = append(out, frame(0x0, 0x1, stream, []byte(PlaintextMessage+"\n"))...) // DATA, END_STREAM
	out = append(out, frame(0x7, 0, 0, goaway)...)                               // GOAWAY, NO_ERROR
	c.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	c.Conn.Write(out)
	// Take in what the client still sends for a moment (its request's
	// body), so that it reads the answer rather than a reset connection.
	c.Conn.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, c.r)
}
