package registrar

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// Log entries and snapshots are compressed with DEFLATE (pure Go, no cgo):
// agent infos repeat the same resource names, roles and ID prefixes, so a
// batch of admissions shrinks several times, which keeps the registry's
// footprint on disk small (the target: 5 MB at 50,000 agents).

// Entry formats: the first byte of every log entry.
const (
	entryPlain   byte = 1 // a protobuf Batch
	entryDeflate byte = 2 // a raw DEFLATE stream of a protobuf Batch
)

// compressMin is the batch size from which entries are compressed; smaller
// batches do not shrink enough to pay for it.
const compressMin = 512

// snapshotMagic starts every snapshot: "MZRG", format version 1; then the
// size of the encoded Registry (8 bytes, little endian) and a raw DEFLATE
// stream of it. The size lets a restore allocate once.
var snapshotMagic = []byte{'M', 'Z', 'R', 'G', 1}

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

var flateReaders sync.Pool

func deflate(dst *bytes.Buffer, src []byte) {
	w := flateWriters.Get().(*flate.Writer)
	w.Reset(dst)
	w.Write(src) // writes to a bytes.Buffer do not fail
	w.Close()
	flateWriters.Put(w)
}

// Decompression limits, so a corrupt or hostile entry cannot exhaust memory.
const (
	maxEntrySize    = 256 << 20 // a full batch is a few megabytes
	maxSnapshotSize = 8 << 30
)

var errTooLarge = errors.New("decompressed data exceeds the size limit")

func inflate(src io.Reader, limit int64) ([]byte, error) {
	var r io.ReadCloser
	if v := flateReaders.Get(); v != nil {
		r = v.(io.ReadCloser)
		r.(flate.Resetter).Reset(src, nil)
	} else {
		r = flate.NewReader(src)
	}
	out, err := io.ReadAll(io.LimitReader(r, limit+1))
	flateReaders.Put(r)
	if err == nil && int64(len(out)) > limit {
		return nil, errTooLarge
	}
	return out, err
}

// appendOp appends one encoded Operation to an encoded Batch: a Batch is
// its repeated field 1, so batches are built by concatenation without
// re-encoding the operations (each encoded on its caller's goroutine).
func appendOp(batch, op []byte) []byte {
	batch = protowire.AppendTag(batch, 1, protowire.BytesType)
	return protowire.AppendBytes(batch, op)
}

// encodeEntry frames an encoded Batch as a log entry.
func encodeEntry(batch []byte) []byte {
	if len(batch) < compressMin {
		return append([]byte{entryPlain}, batch...)
	}
	var buf bytes.Buffer
	buf.Grow(len(batch)/3 + 16)
	buf.WriteByte(entryDeflate)
	deflate(&buf, batch)
	return buf.Bytes()
}

// decodeEntry parses a log entry.
func decodeEntry(entry []byte) ([]op, error) {
	if len(entry) == 0 {
		return nil, errors.New("registry log entry is empty")
	}
	raw := entry[1:]
	switch entry[0] {
	case entryPlain:
	case entryDeflate:
		var err error
		if raw, err = inflate(bytes.NewReader(raw), maxEntrySize); err != nil {
			return nil, fmt.Errorf("registry log entry: decompress: %w", err)
		}
	default:
		return nil, fmt.Errorf("registry log entry: unknown format %d", entry[0])
	}
	ops, err := parseBatch(raw)
	if err != nil {
		return nil, fmt.Errorf("registry log entry: %w", err)
	}
	return ops, nil
}

// writeSnapshot writes s in the snapshot format.
func writeSnapshot(w io.Writer, s *state) error {
	raw := encodeRegistry(s, false)
	head := binary.LittleEndian.AppendUint64(append([]byte(nil), snapshotMagic...), uint64(len(raw)))
	if _, err := w.Write(head); err != nil {
		return err
	}
	fw := flateWriters.Get().(*flate.Writer)
	defer flateWriters.Put(fw)
	fw.Reset(w)
	if _, err := fw.Write(raw); err != nil {
		return err
	}
	return fw.Close()
}

// readSnapshot parses a snapshot written by writeSnapshot.
func readSnapshot(rd io.Reader) (*state, error) {
	head := make([]byte, len(snapshotMagic)+8)
	if _, err := io.ReadFull(rd, head); err != nil {
		return nil, fmt.Errorf("registry snapshot: header: %w", err)
	}
	if !bytes.Equal(head[:len(snapshotMagic)], snapshotMagic) {
		return nil, fmt.Errorf("registry snapshot: bad header %q (want %q)", head[:len(snapshotMagic)], snapshotMagic)
	}
	size := binary.LittleEndian.Uint64(head[len(snapshotMagic):])
	if size > maxSnapshotSize {
		return nil, fmt.Errorf("registry snapshot: size %d exceeds the limit %d", size, maxSnapshotSize)
	}
	var r io.ReadCloser
	if v := flateReaders.Get(); v != nil {
		r = v.(io.ReadCloser)
		r.(flate.Resetter).Reset(rd, nil)
	} else {
		r = flate.NewReader(rd)
	}
	defer flateReaders.Put(r)
	// Grow while reading rather than trusting size for the allocation: a
	// corrupt header must not allocate gigabytes.
	var buf bytes.Buffer
	buf.Grow(int(min(size, 64<<20)))
	n, err := io.Copy(&buf, io.LimitReader(r, int64(size)+1))
	if err != nil {
		return nil, fmt.Errorf("registry snapshot: decompress: %w", err)
	}
	if uint64(n) != size {
		return nil, fmt.Errorf("registry snapshot: %d bytes, header says %d", n, size)
	}
	s, err := decodeRegistry(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("registry snapshot: %w", err)
	}
	return s, nil
}
