package sim

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"mezzo/api/recordio"
)

// FuzzRecordReader: the small-buffer reader yields exactly the records
// (and the clean or unclean end) of api/recordio's reader, the oracle.
func FuzzRecordReader(f *testing.F) {
	for _, seed := range []string{
		"", "3\nabc", "3\nabc0\n2\nde", "5\nab", "x\n", "\n", "12345678901\n", "4\nabcd4\nefgh",
		"1000\n" + string(bytes.Repeat([]byte("z"), 1000)), "70\nshort",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 600
		ours := newRecordReader(bytes.NewReader(data), max)
		oracle := recordio.NewReader(bytes.NewReader(data), max)
		for i := 0; ; i++ {
			got, gerr := ours.Next()
			want, werr := oracle.Next()
			if (gerr == nil) != (werr == nil) || errors.Is(gerr, io.EOF) != errors.Is(werr, io.EOF) ||
				errors.Is(gerr, io.ErrUnexpectedEOF) != errors.Is(werr, io.ErrUnexpectedEOF) {
				t.Fatalf("record %d: error %v, oracle %v", i, gerr, werr)
			}
			if gerr != nil {
				return
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("record %d: %q, oracle %q", i, got, want)
			}
		}
	})
}

func TestShardTimersFireInOrder(t *testing.T) {
	fc := newTestClock()
	sh := newShard(fc)
	go sh.run()
	defer func() { close(sh.stop); <-sh.done }()
	got := make(chan int, 10)
	ready := make(chan struct{})
	sh.post(func() {
		sh.after(3e9, func() { got <- 3 })
		sh.after(1e9, func() { got <- 1 })
		stopped := sh.after(2e9, func() { got <- 2 })
		sh.after(1e9, func() { got <- 11 }) // same deadline: FIFO
		stopped.Stop()
		stopped.Stop() // idempotent
		close(ready)
	})
	<-ready
	var order []int
	deadline := time.Now().Add(5 * time.Second)
	for len(order) < 3 {
		select {
		case v := <-got:
			order = append(order, v)
			continue
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fired %v, want [1 11 3]", order)
		}
		fc.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond) // poll interval, bounded by the deadline
	}
	if order[0] != 1 || order[1] != 11 || order[2] != 3 {
		t.Fatalf("fired %v, want [1 11 3]", order)
	}
}
