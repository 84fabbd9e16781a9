package docker

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type entry struct {
	stream byte
	ts     time.Time
	text   string
}

// encodeFrames writes entries as the engine does with timestamps=1.
func encodeFrames(es []entry) []byte {
	var buf bytes.Buffer
	for _, e := range es {
		p := e.ts.UTC().Format(time.RFC3339Nano) + " " + e.text
		var hdr [8]byte
		hdr[0] = e.stream
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(p)))
		buf.Write(hdr[:])
		buf.WriteString(p)
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

func TestFrameReaderErrors(t *testing.T) {
	good := encodeFrames([]entry{{streamStdout, time.Unix(1, 0), "x"}})
	for name, in := range map[string][]byte{
		"truncated header":  good[:5],
		"truncated payload": good[:len(good)-1],
		"unknown stream":    append([]byte{7}, good[1:]...),
		"huge frame":        {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
	} {
		fr := &frameReader{r: bytes.NewReader(in)}
		if _, _, err := fr.next(); err == nil || err.Error() == "EOF" {
			t.Errorf("%s: error %v", name, err)
		}
	}
	sink := &logSink{now: time.Now}
	if err := sink.copyFrom(bytes.NewReader(encodeFrames([]entry{{streamStdout, time.Time{}, ""}})[:8+3]), time.Time{}); err == nil {
		t.Error("truncated stream accepted")
	}
	bad := []byte{1, 0, 0, 0, 0, 0, 0, 5, 'n', 'o', 't', 's', 'p'}
	if err := sink.copyFrom(bytes.NewReader(bad), time.Time{}); err == nil || !strings.Contains(err.Error(), "timestamp") {
		t.Errorf("entry without timestamp: %v", err)
	}
}

// The frame reader never panics and reads back what was framed.
func FuzzFrameReader(f *testing.F) {
	f.Add(encodeFrames([]entry{{streamStdout, time.Unix(5, 7), "hello\n"}, {streamStderr, time.Unix(6, 0), ""}}))
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := &frameReader{r: bytes.NewReader(data)}
		total := 0
		for {
			stream, p, err := fr.next()
			if err != nil {
				break
			}
			if stream > streamStderr {
				t.Fatalf("stream %d", stream)
			}
			total += 8 + len(p)
			_, _, _ = splitTimestamp(p)
		}
		if total > len(data) {
			t.Fatalf("read %d bytes from %d", total, len(data))
		}
	})
}
