package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
)

// fuzzBuiltinStates are the corpus states whose value serializers
// FuzzBuiltinValues decodes: Flink's composite serializers (a 2.x POJO of
// NullableSerializer-wrapped List, Map and Set; Either, Row, List, Map,
// enum and array values; a POJO of basic fields; a Tuple0, a Tuple5, and a
// coGroup's TaggedUnion elements, named "operator/state" where the name
// alone is not one state).
var fuzzBuiltinStates = map[string][]string{
	"2.3.0/windows-hashmap-canonical":     {"tuple0", "tuple5", "cogroup/window-contents"},
	"2.3.0/collections-hashmap-canonical": {"basket"},
	"2.3.0/orders-hashmap-canonical":      {"order"},
	"2.3.0/types-hashmap-canonical":       {"either", "row", "list", "map", "enum", "ints", "strings", "pojo", "tuple3"},
}

// FuzzBuiltinValues mutates real values of Flink's composite serializers
// and decodes them with the serializer snapshots Flink wrote: nothing may
// panic or allocate without bound, and whatever decodes must encode from
// its JSON to bytes that decode to the same JSON. (Bytes equal the input
// on every real value, TestCorpusValuesRoundTrip; mutated ones may hold a
// map's entries out of key order, a row kind, or a lone UTF-16 surrogate,
// which the JSON does not keep.) The first byte picks the serializer.
func FuzzBuiltinValues(f *testing.F) {
	fuzzCorpusValues(f, fuzzBuiltinStates)
}

// fuzzCorpusValues seeds f with real values of the named states of
// checked-in corpus entries and checks what their mutations decode to as
// FuzzBuiltinValues says.
func fuzzCorpusValues(f *testing.F, entries map[string][]string) {
	var codecs []typeser.Codec
	ctx := context.Background()
	for entry, states := range entries {
		dir, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", entry, "snapshot", "*"))
		if len(dir) != 1 {
			f.Fatalf("%s: want one snapshot, found %v", entry, dir)
		}
		r, err := testReg.Open(ctx, dir[0], snapshot.OpenOptions{TempDir: f.TempDir()})
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range states {
			op, st := keyedStateNamed(r.Snapshot(), name)
			if st == nil {
				f.Fatalf("%s: no state %q", entry, name)
			}
			c, err := serializers.CodecFactory(st.ValueType)
			if err != nil {
				f.Fatal(err)
			}
			i := len(codecs)
			codecs = append(codecs, c.(typeser.Codec))
			seeds := 0
			for _, sub := range op.Subtasks {
				for e, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
					if err != nil {
						f.Fatal(err)
					}
					if e.State == name && seeds < 4 {
						f.Add(append([]byte{byte(i)}, e.Value...))
						seeds++
					}
				}
			}
		}
		r.Close()
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		checkDecodedEncodes(t, codecs[int(in[0])%len(codecs)], in[1:])
	})
}

// checkDecodedEncodes fails t where b decodes but its JSON does not
// encode to bytes that decode to the same JSON.
func checkDecodedEncodes(t *testing.T, c typeser.Codec, b []byte) {
	v, err := c.Decode(b)
	if err != nil {
		return
	}
	text, err := json.Marshal(v)
	if err != nil {
		return // NaN and infinities have no JSON
	}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var back any
	if err := d.Decode(&back); err != nil {
		t.Fatal(err)
	}
	out, err := c.Encode(back)
	if err != nil {
		t.Fatalf("%s decodes from %x but does not encode: %v", text, b, err)
	}
	again, err := c.Decode(out)
	if err != nil {
		t.Fatalf("%s encodes to %x, which does not decode: %v", text, out, err)
	}
	if text2, _ := json.Marshal(again); !bytes.Equal(text, text2) {
		t.Fatalf("%x decodes to %s, encodes to %x, which decodes to %s", b, text, out, text2)
	}
}

// keyedStateNamed finds a keyed state by name in any operator.
func keyedStateNamed(s *snapshot.Snapshot, name string) (*snapshot.Operator, *snapshot.KeyedState) {
	opName, state, ok := strings.Cut(name, "/")
	if !ok {
		opName, state = "", name
	}
	for _, op := range s.Operators {
		if st, ok := op.KeyedStateByName(state); ok && (opName == "" || op.Label() == opName) {
			return op, st
		}
	}
	return nil, nil
}
