package codec_test

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"mezzo/api/codec"
	"mezzo/api/schedulerpb"
)

func offersEvent() *schedulerpb.Event {
	ev := &schedulerpb.Event{Type: schedulerpb.Event_OFFERS.Enum(), Offers: &schedulerpb.Event_Offers{}}
	for range 10 {
		ev.Offers.Offers = append(ev.Offers.Offers, referenceOffer())
	}
	return ev
}

func BenchmarkMarshalJSONOffers(b *testing.B) {
	ev := offersEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.MarshalJSON(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalJSONOffers(b *testing.B) {
	data, _ := codec.MarshalJSON(offersEvent())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var ev schedulerpb.Event
		if err := codec.UnmarshalJSON(data, &ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProtojsonOffers is the baseline the Mesos mapping replaced.
func BenchmarkProtojsonOffers(b *testing.B) {
	ev := offersEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (protojson.MarshalOptions{UseProtoNames: true}).Marshal(ev); err != nil {
			b.Fatal(err)
		}
	}
}
