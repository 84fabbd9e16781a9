package statusupdate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"mezzo/api/protocol"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

// Checkpoint file layout: <MetaDir>/<framework>/<task>/task.updates, the two
// IDs escaped by escapeName. The file is a sequence of records:
//
//	uint32 big-endian payload length | uint32 big-endian CRC-32C of payload | payload
//
// payload is one kind byte followed by the body: recordUpdate + a serialized
// protocol.AgentCall_StatusUpdate, or recordAck + the 16-byte uuid. A record
// is written with one write(2) and fsync'd, so a crash leaves at most one
// torn record at the tail, which the length and CRC detect.
const (
	updatesFile     = "task.updates"
	recordUpdate    = 'U'
	recordAck       = 'A'
	headerSize      = 8
	maxRecordLength = 16 << 20 // larger lengths are corruption, not updates
)

// crcTable is built on first use, not at package init: every process of
// the binary (each `mezzo executor` too) would pay for it otherwise.
var crcTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// escapeName turns an ID into a single safe path element: bytes outside
// [A-Za-z0-9._-] become %XX, and "", "." and ".." are fully escaped.
func escapeName(id string) string {
	if id == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		safe := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if c == '.' && (id == "." || id == "..") {
			safe = false
		}
		if safe {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func (m *Manager) frameworkDir(framework string) string {
	return filepath.Join(m.opts.MetaDir, escapeName(framework))
}

func (m *Manager) streamPath(k streamKey) string {
	return filepath.Join(m.frameworkDir(k.framework), escapeName(k.task), updatesFile)
}

func encodeRecord(kind byte, body []byte) []byte {
	rec := make([]byte, headerSize, headerSize+1+len(body))
	rec = append(rec, kind)
	rec = append(rec, body...)
	payload := rec[headerSize:]
	binary.BigEndian.PutUint32(rec[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(rec[4:8], crc32.Checksum(payload, crcTable()))
	return rec
}

func encodeUpdate(u *protocol.AgentCall_StatusUpdate) ([]byte, error) {
	body, err := proto.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("encoding status update: %w", err)
	}
	return encodeRecord(recordUpdate, body), nil
}

func encodeAck(id uuid.UUID) []byte { return encodeRecord(recordAck, id[:]) }

// appendRecord durably appends rec to path, creating the file and its
// directories if needed. On a failed write the file is cut back to its
// previous size so that a later append does not follow a torn record.
func appendRecord(path string, rec []byte) error {
	dir := filepath.Dir(path)
	created := false
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("checkpointing status update: %w", err)
		}
		created = true
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("checkpointing status update: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("checkpointing status update to %s: %w", path, err)
	}
	if _, err := f.Write(rec); err != nil {
		_ = f.Truncate(st.Size())
		f.Close()
		return fmt.Errorf("checkpointing status update to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Truncate(st.Size())
		f.Close()
		return fmt.Errorf("checkpointing status update to %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("checkpointing status update to %s: %w", path, err)
	}
	if created {
		// Make the new directory entries durable: the file itself, and the
		// task directory in the framework directory.
		if err := syncDir(dir); err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpointing status update: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("checkpointing status update: fsync %s: %w", dir, err)
	}
	return nil
}

// record is one decoded checkpoint record.
type record struct {
	kind   byte
	update *protocol.AgentCall_StatusUpdate // kind == recordUpdate
	ack    uuid.UUID                        // kind == recordAck
	end    int64                            // file offset just past this record
}

// CorruptError reports a checkpoint file whose records stop being valid at
// Offset: a torn tail left by a crash, or corruption. Records before Offset
// were recovered.
type CorruptError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("status update checkpoint %s: bad record at offset %d: %s", e.File, e.Offset, e.Reason)
}

// decodeRecords parses data. It returns the records of the valid prefix, the
// length of that prefix, and a *CorruptError (naming file) if data has bytes
// after it.
func decodeRecords(file string, data []byte) ([]record, int64, error) {
	var out []record
	off := 0
	bad := func(reason string) ([]record, int64, error) {
		return out, int64(off), &CorruptError{File: file, Offset: int64(off), Reason: reason}
	}
	for off < len(data) {
		rest := data[off:]
		if len(rest) < headerSize {
			return bad(fmt.Sprintf("torn record header (%d of %d bytes)", len(rest), headerSize))
		}
		n := binary.BigEndian.Uint32(rest[0:4])
		sum := binary.BigEndian.Uint32(rest[4:8])
		if n == 0 || n > maxRecordLength {
			return bad(fmt.Sprintf("invalid record length %d", n))
		}
		if uint64(len(rest)-headerSize) < uint64(n) {
			return bad(fmt.Sprintf("torn record (%d of %d payload bytes)", len(rest)-headerSize, n))
		}
		payload := rest[headerSize : headerSize+int(n)]
		if crc32.Checksum(payload, crcTable()) != sum {
			return bad("checksum mismatch")
		}
		var r record
		r.kind = payload[0]
		switch r.kind {
		case recordUpdate:
			u := &protocol.AgentCall_StatusUpdate{}
			if err := proto.Unmarshal(payload[1:], u); err != nil {
				return bad(fmt.Sprintf("undecodable status update: %v", err))
			}
			r.update = u
		case recordAck:
			id, err := uuid.FromBytes(payload[1:])
			if err != nil {
				return bad(fmt.Sprintf("acknowledgement uuid: %v", err))
			}
			r.ack = id
		default:
			return bad(fmt.Sprintf("unknown record kind %q", r.kind))
		}
		off += headerSize + int(n)
		r.end = int64(off)
		out = append(out, r)
	}
	return out, int64(off), nil
}

// readRecords reads and decodes a checkpoint file.
func readRecords(path string) ([]record, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return decodeRecords(path, data)
}
