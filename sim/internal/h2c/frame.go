package h2c

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
)

// The HTTP/2 wire format (RFC 9113), as much of it as a client needs.
// golang.org/x/net/http2 has a Framer, but that package pulls in
// dependencies this module does not have; the format is small.

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

const frameHeaderLen = 9

type frameType uint8

const (
	frameData         frameType = 0x0
	frameHeaders      frameType = 0x1
	framePriority     frameType = 0x2
	frameRSTStream    frameType = 0x3
	frameSettings     frameType = 0x4
	framePushPromise  frameType = 0x5
	framePing         frameType = 0x6
	frameGoAway       frameType = 0x7
	frameWindowUpdate frameType = 0x8
	frameContinuation frameType = 0x9
)

// Frame flags; the same bit means different things for different types.
const (
	flagEndStream  = 0x1 // DATA, HEADERS
	flagAck        = 0x1 // SETTINGS, PING
	flagEndHeaders = 0x4 // HEADERS, CONTINUATION
	flagPadded     = 0x8 // DATA, HEADERS
	flagPriority   = 0x20
)

type settingID uint16

const (
	settingHeaderTableSize      settingID = 0x1
	settingEnablePush           settingID = 0x2
	settingMaxConcurrentStreams settingID = 0x3
	settingInitialWindowSize    settingID = 0x4
	settingMaxFrameSize         settingID = 0x5
	settingMaxHeaderListSize    settingID = 0x6
)

type setting struct {
	id  settingID
	val uint32
}

// errCode is an HTTP/2 error code, as carried by RST_STREAM and GOAWAY.
type errCode uint32

const (
	errCodeNo            errCode = 0x0
	errCodeProtocol      errCode = 0x1
	errCodeInternal      errCode = 0x2
	errCodeFlowControl   errCode = 0x3
	errCodeStreamClosed  errCode = 0x5
	errCodeFrameSize     errCode = 0x6
	errCodeRefusedStream errCode = 0x7
	errCodeCancel        errCode = 0x8
	errCodeCompression   errCode = 0x9
)

var errCodeNames = [...]string{
	"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
	"SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM",
	"CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
	"INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
}

func (c errCode) String() string {
	if int(c) < len(errCodeNames) {
		return errCodeNames[c]
	}
	return "unknown error code 0x" + strconv.FormatUint(uint64(c), 16)
}

// connError is a connection error: the connection must be closed.
type connError struct {
	code   errCode
	reason string
}

func (e connError) Error() string {
	return fmt.Sprintf("h2c: connection error %v: %s", e.code, e.reason)
}

// frameHeader is the fixed 9-byte header of every frame.
type frameHeader struct {
	length   int
	typ      frameType
	flags    uint8
	streamID uint32
}

func (h frameHeader) has(flag uint8) bool { return h.flags&flag != 0 }

// frameReader reads frames, reusing one payload buffer.
type frameReader struct {
	r       io.Reader
	hdr     [frameHeaderLen]byte
	payload []byte
}

// readFrame reads the next frame. Its payload is valid until the next call.
func (fr *frameReader) readFrame() (frameHeader, []byte, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return frameHeader{}, nil, err
	}
	h := frameHeader{
		length:   int(fr.hdr[0])<<16 | int(fr.hdr[1])<<8 | int(fr.hdr[2]),
		typ:      frameType(fr.hdr[3]),
		flags:    fr.hdr[4],
		streamID: binary.BigEndian.Uint32(fr.hdr[5:]) & (1<<31 - 1),
	}
	if h.length > defaultMaxFrameSize {
		// We advertise no larger SETTINGS_MAX_FRAME_SIZE.
		return h, nil, connError{errCodeFrameSize, fmt.Sprintf("%d-byte frame", h.length)}
	}
	if cap(fr.payload) < h.length {
		fr.payload = make([]byte, defaultMaxFrameSize)
	}
	p := fr.payload[:h.length]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, err
	}
	return h, p, nil
}

// unpad removes the padding of a DATA or HEADERS frame.
func unpad(h frameHeader, p []byte) ([]byte, error) {
	if !h.has(flagPadded) {
		return p, nil
	}
	if len(p) == 0 || int(p[0]) > len(p)-1 {
		return nil, connError{errCodeProtocol, "bad padding"}
	}
	return p[1 : len(p)-int(p[0])], nil
}

// appendFrameHeader appends a frame header to b.
func appendFrameHeader(b []byte, length int, typ frameType, flags uint8, id uint32) []byte {
	return append(b,
		byte(length>>16), byte(length>>8), byte(length),
		byte(typ), flags,
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
