package flink

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
)

// avroCorpusValues returns every Avro value of the checked-in corpus with
// its type, by entry.
func avroCorpusValues(t testing.TB) map[string][]avroCorpusValue {
	entries, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]avroCorpusValue{}
	for _, e := range entries {
		eachEntry(t, e, func(op *snapshot.Operator, en snapshot.Entry) {
			st, _ := op.KeyedStateByName(en.State)
			if st != nil && st.ValueType.Name == typeser.TypePrefix+"avro" {
				name := e.Manifest.FlinkVersion + "/" + e.Name
				out[name] = append(out[name], avroCorpusValue{st.ValueType, bytes.Clone(en.Value)}) // entries reuse their buffers
			}
		})
	}
	return out
}

type avroCorpusValue struct {
	Typ snapshot.Type
	B   []byte
}

// TestAvroCorpusRoundTrip encodes every Avro value of the corpus from the
// JSON it decodes to and wants Flink's own bytes back.
func TestAvroCorpusRoundTrip(t *testing.T) {
	values := avroCorpusValues(t)
	for _, want := range []string{"1.20.5/types-hashmap-canonical", "2.3.0/types-hashmap-native", "1.20.5/avro-hashmap-canonical", "2.3.0/avro-hashmap-canonical"} {
		if len(values[want]) == 0 {
			t.Errorf("%s: no Avro values", want)
		}
	}
	n := 0
	for entry, vs := range values {
		for _, v := range vs {
			c, err := testReg.Codecs.Codec(v.Typ)
			if err != nil {
				t.Fatal(err)
			}
			decoded := testReg.Codecs.Decode(v.Typ, v.B)
			j := asJSON(t, decoded)
			got, err := c.(snapshot.Encoder).Encode(j)
			if err != nil || !bytes.Equal(got, v.B) {
				t.Fatalf("%s: %v encodes to %x, %v; Flink wrote %x", entry, j, got, err, v.B)
			}
			n++
		}
	}
	t.Logf("%d Avro values in %d entries encode to Flink's bytes", n, len(values))
}
