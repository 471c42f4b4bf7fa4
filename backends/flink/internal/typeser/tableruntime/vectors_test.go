package tableruntime

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/vectorfile"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// vectorsDir holds the Table runtime serializers' byte vectors, one file
// per Flink version, written by real Flink (scripts/flink-table-vectors.sh).
const vectorsDir = "../../../../../testdata/flink-table-vectors"

// readVectors reads every vectors file, by Flink version.
func readVectors(t testing.TB) []vectorfile.Vector {
	t.Helper()
	return vectorfile.Vectors(t, vectorsDir, "scripts/flink-table-vectors.sh")
}

// snapshotOf parses a vector's snapshot exactly: every byte accounted for
// and nothing in its tree skipped unparsed.
func snapshotOf(t testing.TB, v vectorfile.Vector) *typeser.SerializerSnapshot {
	t.Helper()
	raw := vectorfile.Unhex(t, v.Snapshot)
	r := wire.NewReader(raw, v.Name, 0)
	s := (&typeser.SnapReader{R: r, Table: testTable}).SnapshotProxy(func(q int) bool { return q == len(raw) })
	if r.Err != nil || r.Remaining() != 0 {
		t.Fatalf("%s %s: snapshot: %v, %d bytes left", v.Version, v.Name, r.Err, r.Remaining())
	}
	// The family's snapshots are parsed by their layouts (flink-core's
	// composites with an outer part are skipped to their nested part).
	var opaque func(s *typeser.SerializerSnapshot) bool
	opaque = func(s *typeser.SerializerSnapshot) bool {
		if s.Opaque && Family.Kind(s.Name()) != "" {
			return true
		}
		for _, n := range s.Nested {
			if n != nil && opaque(n) {
				return true
			}
		}
		return false
	}
	if opaque(s) {
		t.Fatalf("%s %s: snapshot %s, or one it nests, parsed by skipping", v.Version, v.Name, s.Class)
	}
	if Family.Kind(s.Name()) == "" && typeser.KindOf(s) != "TimeWindow" && typeser.KindOf(s) != "GlobalWindow" {
		t.Fatalf("%s %s: %s is no serializer of the family", v.Version, v.Name, s.Name())
	}
	return s
}

// canonical is JSON text with numbers kept as written.
func canonical(t testing.TB, text []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every Table runtime serializer, as each Flink version writes it: the
// snapshot parses exactly; each value decodes to the JSON worked out on
// Flink's side from the Java value, and encodes back to Flink's bytes; a
// value whose serializer records too little (a BinaryRowData without its
// field types) is walked to its end and is not decoded, never damage.
func TestFlinkTableVectors(t *testing.T) {
	vectors := readVectors(t)
	seen := map[string]map[string]bool{}
	for _, v := range vectors {
		s := snapshotOf(t, v)
		c := typeser.Codec{S: s}
		if seen[v.Name] == nil {
			seen[v.Name] = map[string]bool{}
		}
		seen[v.Name][v.Version] = true
		for i, val := range v.Values {
			b := vectorfile.Unhex(t, val.Bytes)
			where := v.Version + " " + v.Name + " value " + string(rune('0'+i))
			if n, ok, err := typeser.Span(s, b); err != nil || !ok || n != len(b) {
				t.Errorf("%s: walked %d of %d bytes, %v, %v", where, n, len(b), ok, err)
			}
			got, err := c.Decode(b)
			if val.NotDecoded {
				if !errors.Is(err, snapshot.ErrNotDecoded) {
					t.Errorf("%s: got %v, %v; want not decoded", where, got, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: Decode(0x%x): %v", where, b, err)
				continue
			}
			text, _ := json.Marshal(got)
			if want := canonical(t, val.JSON); !reflect.DeepEqual(canonical(t, text), want) {
				t.Errorf("%s: decoded %s, Flink's side says %s", where, text, val.JSON)
			}
			back, err := c.Encode(canonical(t, text))
			if err != nil || !bytes.Equal(back, b) {
				t.Errorf("%s: encodes to 0x%x, %v; Flink wrote 0x%x", where, back, err, b)
			}
			// Carried by its type (a Flink type name and the snapshot's
			// bytes), it decodes the same.
			tc, err := testTable.CodecFactory(typeser.TypeOf(s))
			if err != nil {
				t.Errorf("%s: codec of type %s: %v", where, typeser.TypeOf(s).Name, err)
			} else if again, err := tc.Decode(b); err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("%s: by type %s: %v, %v", where, typeser.TypeOf(s).Name, again, err)
			}
		}
	}
	for name, versions := range seen {
		if !versions["2.3.0"] || (!strings.HasPrefix(name, "sqn-") && name != "sortedlong" && name != "globalwindow" && len(versions) < 2) {
			t.Errorf("%s: vectors of Flink %v only", name, versions)
		}
	}
}

// FuzzTableVectors: any bytes decode without panic under the serializers
// of the vectors, seeded with Flink's values; what decodes encodes back.
func FuzzTableVectors(f *testing.F) {
	var codecs []typeser.Codec
	for _, v := range readVectors(f) {
		if v.Version != "2.3.0" {
			continue
		}
		codecs = append(codecs, typeser.Codec{S: snapshotOf(f, v)})
		for _, val := range v.Values {
			f.Add(uint8(len(codecs)-1), vectorfile.Unhex(f, val.Bytes))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		formattest.CodecRoundTrip(t, codecs[int(which)%len(codecs)], b)
	})
}
