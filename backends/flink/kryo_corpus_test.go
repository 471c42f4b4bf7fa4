package flink

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// TestKryoPojoFieldOfTheCorpus decodes the orders job's POJO, whose
// List<String> field Flink 1.x writes with Kryo, and writes every value
// back from its JSON text to the same bytes.
func TestKryoPojoFieldOfTheCorpus(t *testing.T) {
	codec, values := ordersValues(t, "1.20.5")
	enc := codec.(snapshot.Encoder)
	for _, b := range values {
		v, err := codec.Decode(b)
		if err != nil {
			t.Fatalf("Decode(0x%x): %v", b, err)
		}
		order, _ := v.(map[string]any)
		tags, ok := order["tags"].([]any)
		if !ok || len(tags) != 2 {
			t.Fatalf("Decode(0x%x) = %v, want tags as a list of two", b, v)
		}
		text, _ := json.Marshal(v)
		d := json.NewDecoder(bytes.NewReader(text))
		d.UseNumber()
		var back any
		if err := d.Decode(&back); err != nil {
			t.Fatal(err)
		}
		if got, err := enc.Encode(back); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("Encode(%s) = 0x%x (%v), want 0x%x", text, got, err, b)
		}
	}
}
