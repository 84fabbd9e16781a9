package recordio_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"mezzo/api/recordio"
)

func TestWriterFraming(t *testing.T) {
	var buf bytes.Buffer
	w := recordio.NewWriter(&buf)
	for _, r := range []string{`{"type":"HEARTBEAT"}`, "x", strings.Repeat("a", 12)} {
		if err := w.Write([]byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	want := "20\n{\"type\":\"HEARTBEAT\"}1\nx12\naaaaaaaaaaaa"
	if buf.String() != want {
		t.Errorf("framed %q, want %q", buf.String(), want)
	}
	if err := w.Write(nil); err == nil {
		t.Error("empty record accepted")
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string
		wantErr error  // final error (io.EOF for a clean end)
		errText string // or a substring of it
	}{
		{"clean", "3\nabc2\nde", 0, []string{"abc", "de"}, io.EOF, ""},
		{"zero-length records skipped", "0\n3\nabc0\n", 0, []string{"abc"}, io.EOF, ""},
		{"empty stream", "", 0, nil, io.EOF, ""},
		{"truncated body", "5\nab", 0, nil, io.ErrUnexpectedEOF, ""},
		{"truncated header", "12", 0, nil, io.ErrUnexpectedEOF, ""},
		{"too large", "11\nhello world", 10, nil, recordio.ErrRecordTooLarge, ""},
		{"bad header byte", "1x\na", 0, nil, nil, "invalid byte"},
		{"empty header", "\nabc", 0, nil, nil, "empty length header"},
		{"header too long", "12345678901\n", 0, nil, nil, "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := recordio.NewReader(strings.NewReader(tt.in), tt.max)
			var got []string
			var err error
			for {
				var rec []byte
				rec, err = r.Next()
				if err != nil {
					break
				}
				got = append(got, string(rec))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("records %q, want %q", got, tt.want)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if tt.errText != "" && (err == nil || !strings.Contains(err.Error(), tt.errText)) {
				t.Errorf("error %v, want one containing %q", err, tt.errText)
			}
		})
	}
}

// TestRoundTripProperty: any sequence of non-empty records written by a
// Writer is read back identically, whatever the bytes (newlines, digits).
func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := rapid.SliceOf(rapid.SliceOfN(rapid.Byte(), 1, 300)).Draw(t, "records")
		var buf bytes.Buffer
		w := recordio.NewWriter(&buf)
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		rd := recordio.NewReader(&buf, 0)
		for i, want := range recs {
			got, err := rd.Next()
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("record %d = %q, want %q", i, got, want)
			}
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("after last record: %v, want EOF", err)
		}
	})
}

// FuzzReader: the reader never panics, never returns a record over the
// limit or an empty record, and what it returns re-frames to a prefix of
// the input (modulo skipped zero-length records).
func FuzzReader(f *testing.F) {
	for _, s := range []string{"3\nabc", "0\n1\na", "5\nab", "99999999999\n", "1x\n", "\n", "2\n\n\n1\n9"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 1 << 16
		r := recordio.NewReader(bytes.NewReader(data), max)
		total := 0
		for i := 0; i < len(data)+1; i++ {
			rec, err := r.Next()
			if err != nil {
				return
			}
			if len(rec) == 0 || len(rec) > max {
				t.Fatalf("bad record length %d", len(rec))
			}
			total += len(rec)
			if total > len(data) {
				t.Fatalf("read %d record bytes from %d input bytes", total, len(data))
			}
		}
		t.Fatal("reader did not terminate")
	})
}
