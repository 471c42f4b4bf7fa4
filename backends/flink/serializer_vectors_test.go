package flink

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/vectorfile"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
)

// readSerializerVectors reads testdata/flink-serializer-vectors
// (scripts/flink-serializer-vectors.sh).
func readSerializerVectors(t testing.TB) []vectorfile.Vector {
	t.Helper()
	return vectorfile.Vectors(t, filepath.Join(flinkharness.RepoRoot(), "testdata", "flink-serializer-vectors"), "scripts/flink-serializer-vectors.sh")
}

// vectorSnapshot parses a vector's snapshot with the format's table,
// exactly: every byte accounted for, nothing in its tree skipped unparsed.
func vectorSnapshot(t testing.TB, v vectorfile.Vector) *typeser.SerializerSnapshot {
	t.Helper()
	raw := vectorfile.Unhex(t, v.Snapshot)
	r := wire.NewReader(raw, v.Name, 0)
	s := (&typeser.SnapReader{R: r, Table: serializers}).SnapshotProxy(func(q int) bool { return q == len(raw) })
	if r.Err != nil || r.Remaining() != 0 || s == nil {
		t.Fatalf("%s %s: snapshot: %v, %d bytes left", v.Version, v.Name, r.Err, r.Remaining())
	}
	var walk func(s *typeser.SerializerSnapshot)
	walk = func(s *typeser.SerializerSnapshot) {
		if s.Opaque {
			t.Fatalf("%s %s: snapshot %s parsed by skipping", v.Version, v.Name, s.Class)
		}
		// What the coverage table says of the class is what its values do
		// here: decoded, and encoded but where the table says decoded only.
		if sup := serializers.Support(s.Class); !sup.Decoded || !sup.Encoded && !decodedOnly[sup.Kind] {
			t.Errorf("%s %s: coverage of %s: %+v", v.Version, v.Name, s.Class, sup)
		}
		for _, n := range s.Nested {
			walk(n)
		}
	}
	walk(s)
	return s
}

// sameJSON compares JSON values, numbers by their text or else by the
// double they read as (Java spells 1e10 1.0E10).
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok || x == y {
			return ok
		}
		fx, err1 := x.Float64()
		fy, err2 := y.Float64()
		return err1 == nil && err2 == nil && fx == fy
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, has := y[k]; !has || !sameJSON(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// decodedOnly are the kinds whose values show as JSON that cannot be
// written back (the coverage table's "decoded only"): given as
// {"@class", "@bytes"}, they are written back as those bytes.
var decodedOnly = map[string]bool{"JavaSerialization": true, "Variant": true}

// jsonOf is JSON text as Go values, numbers kept as written.
func jsonOf(t testing.TB, text []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return out
}

// Every value real Flink wrote decodes to the JSON worked out on Flink's
// side, encodes back to Flink's bytes, spans exactly its bytes, and does
// the same through the state's type (carried into another format); each
// of its prefixes is damage at an offset, never a panic or a value.
func TestFlinkSerializerVectors(t *testing.T) {
	seen := map[string]map[string]bool{}
	for _, v := range readSerializerVectors(t) {
		if seen[v.Name] == nil {
			seen[v.Name] = map[string]bool{}
		}
		seen[v.Name][v.Version] = true
		s := vectorSnapshot(t, v)
		c := typeser.Codec{S: s}
		typed, err := serializers.CodecFactory(typeser.TypeOf(s))
		if err != nil {
			t.Fatalf("%s %s: type %s: %v", v.Version, v.Name, typeser.TypeOf(s).Name, err)
		}
		for i, val := range v.Values {
			where := fmt.Sprintf("%s %s value %d", v.Version, v.Name, i)
			b := vectorfile.Unhex(t, val.Bytes)
			if n, ok, err := typeser.Span(s, b); err != nil || !ok || n != len(b) {
				t.Errorf("%s: spans %d of %d bytes, %v, %v", where, n, len(b), ok, err)
			}
			got, err := c.Decode(b)
			if err != nil {
				t.Errorf("%s: Decode(0x%x): %v", where, b, err)
				continue
			}
			text, _ := json.Marshal(got)
			if !sameJSON(jsonOf(t, text), jsonOf(t, val.JSON)) {
				t.Errorf("%s: decodes to %s, Flink's side says %s", where, text, val.JSON)
			}
			for name, enc := range map[string]snapshot.Encoder{"codec": c, "type": typed.(snapshot.Encoder)} {
				in := jsonOf(t, val.JSON)
				if decodedOnly[typeser.KindOf(s)] {
					if back, err := enc.Encode(in); !errors.Is(err, typeser.ErrNoEncoder) {
						t.Errorf("%s: %s by %s encodes to 0x%x, %v; want no encoder", where, val.JSON, name, back, err)
					}
					in = map[string]any{"@class": s.Name(), "@bytes": "0x" + hex.EncodeToString(b)}
				}
				if back, err := enc.Encode(in); err != nil || !bytes.Equal(back, b) {
					t.Errorf("%s: %s by %s encodes to 0x%x, %v; Flink wrote 0x%x", where, in, name, back, err, b)
				}
			}
			if again, err := typed.Decode(b); err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("%s: by type %s: %v, %v", where, typeser.TypeOf(s).Name, again, err)
			}
			for n := range b {
				_, err := c.Decode(b[:n])
				var ce *snapshot.CorruptError
				if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > int64(n) {
					t.Errorf("%s: its first %d bytes: %v, want damage at an offset", where, n, err)
				}
			}
		}
	}
	// Each serializer is witnessed by the releases that have it: Flink
	// 1.20 and 2.3; 2.3 alone for 2.x's TTL serializers and BITMAP (2.3),
	// 2.1 and 2.3 for VARIANT (2.1); 1.15 and 1.20 for the Scala API (1.x
	// only), 1.15 and 1.16 for the legacy config snapshots (gone from 1.17
	// on).
	for name, versions := range seen {
		want := []string{"1.20.5", "2.3.0"}
		switch {
		case strings.HasPrefix(name, "legacy-"):
			want = []string{"1.15.4", "1.16.3"}
		case strings.HasPrefix(name, "scala-"):
			want = []string{"1.15.4", "1.20.5"}
		case strings.HasPrefix(name, "ttl-v2-") || strings.HasPrefix(name, "ttlaware-") || strings.HasPrefix(name, "bitmap"):
			want = []string{"2.3.0"}
		case strings.HasPrefix(name, "variant"):
			want = []string{"2.1.3", "2.3.0"}
		}
		for _, v := range want {
			if !versions[v] {
				t.Errorf("%s: vectors of %v, none of %s", name, versions, v)
			}
		}
	}
}

// FuzzSerializerVectors mutates the values real Flink wrote in
// testdata/flink-serializer-vectors and decodes them with their
// serializers' snapshots: nothing may panic or allocate without bound;
// what decodes must encode from its JSON to bytes that decode to the same
// JSON, and span as many bytes as it decodes from. The first byte picks
// the serializer.
func FuzzSerializerVectors(f *testing.F) {
	var codecs []typeser.Codec
	for _, v := range readSerializerVectors(f) {
		i := len(codecs)
		codecs = append(codecs, typeser.Codec{S: vectorSnapshot(f, v)})
		for _, val := range v.Values {
			f.Add(append([]byte{byte(i)}, vectorfile.Unhex(f, val.Bytes)...))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		c := codecs[int(in[0])%len(codecs)]
		b := in[1:]
		_, err := c.Decode(b)
		if n, ok, serr := typeser.Span(c.S, b); err == nil && (serr != nil || !ok || n != len(b)) {
			t.Fatalf("%x decodes, but spans %d bytes, %v, %v", b, n, ok, serr)
		}
		if !decodedOnly[typeser.KindOf(c.S)] {
			checkDecodedEncodes(t, c, b)
		}
	})
}
