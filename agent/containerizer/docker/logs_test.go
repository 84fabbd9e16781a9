package docker

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
)

const (
	streamStdout = stdcopy.Stdout
	streamStderr = stdcopy.Stderr
)

type entry struct {
	stream stdcopy.StdType
	ts     time.Time
	text   string
}

// frame is one frame of a multiplexed stream: an 8-byte header (the
// stream, three zero bytes, the big-endian payload size) and the payload.
func frame(stream stdcopy.StdType, p []byte) []byte {
	hdr := []byte{byte(stream), 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(p)))
	return append(hdr, p...)
}

// encodeFrames writes entries as the engine does with timestamps=1.
func encodeFrames(es []entry) []byte {
	var buf bytes.Buffer
	for _, e := range es {
		buf.Write(frame(e.stream, []byte(e.ts.UTC().Format(time.RFC3339Nano)+" "+e.text)))
	}
	return buf.Bytes()
}

func TestCopyFromSplitsStreamsAndResumes(t *testing.T) {
	dir := t.TempDir()
	cursor := filepath.Join(dir, "rt", "logs.cursor")
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	es := []entry{
		{streamStdout, t0, "one\n"},
		{streamStderr, t0.Add(time.Millisecond), "err one\n"},
		{streamStdout, t0.Add(2 * time.Millisecond), "two\n"},
		{streamStdout, t0.Add(2 * time.Millisecond), "two again, same instant\n"},
	}
	now := time.Unix(0, 0)
	sink, err := openSink(dir, cursor, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.copyFrom(bytes.NewReader(encodeFrames(es[:2])), time.Time{}); err != nil {
		t.Fatal(err)
	}
	sink.close()
	if got := readCursor(cursor); !got.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("cursor %v", got)
	}
	// A restarted agent re-opens the stream from the cursor; the engine's
	// since is inclusive, so the entry at the cursor comes again.
	sink, err = openSink(dir, cursor, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.copyFrom(bytes.NewReader(encodeFrames(es[1:])), sink.last); err != nil {
		t.Fatal(err)
	}
	sink.close()
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	if got, want := read("stdout"), "one\ntwo\ntwo again, same instant\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := read("stderr"), "err one\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// A stream the engine cannot have sent, or an engine error in the stream,
// is an error (the follower re-opens the stream from its cursor); an
// entry cut short by the end of the stream is not written.
func TestCopyFromErrors(t *testing.T) {
	good := encodeFrames([]entry{{streamStdout, time.Unix(1, 0), "x"}})
	for name, tc := range map[string]struct {
		in   []byte
		want string
	}{
		"unknown stream":         {append([]byte{7}, good[1:]...), "unrecognized stream"},
		"entry without a stamp":  {[]byte{1, 0, 0, 0, 0, 0, 0, 5, 'n', 'o', 't', 's', 'p'}, "timestamp"},
		"bad timestamp":          {frame(streamStdout, []byte("yesterday x")), "timestamp"},
		"an error in the stream": {frame(stdcopy.Systemerr, []byte("engine trouble")), "engine trouble"},
	} {
		dir := t.TempDir()
		sink, err := openSink(dir, "", time.Now)
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.copyFrom(bytes.NewReader(tc.in), time.Time{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
		sink.close()
	}
	dir := t.TempDir()
	sink, err := openSink(dir, "", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.copyFrom(bytes.NewReader(good[:len(good)-1]), time.Time{}); err != nil {
		t.Errorf("truncated stream: %v", err)
	}
	sink.close()
	if b, _ := os.ReadFile(filepath.Join(dir, "stdout")); len(b) != 0 {
		t.Errorf("a truncated entry was written: %q", b)
	}
}

// An entry, whatever its bytes, never panics the writer, which writes at
// most the entry.
func FuzzEntryWriter(f *testing.F) {
	f.Add([]byte("2025-01-02T03:04:05.000000006Z hello\n"))
	f.Add([]byte("x"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		dir := t.TempDir()
		sink, err := openSink(dir, "", time.Now)
		if err != nil {
			t.Fatal(err)
		}
		n, err := (&entryWriter{sink: sink, out: sink.stdout}).Write(p)
		sink.close()
		if err == nil && n != len(p) {
			t.Fatalf("wrote %d of %d without an error", n, len(p))
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "stdout")); len(b) > len(p) {
			t.Fatalf("wrote %d bytes from %d", len(b), len(p))
		}
	})
}
