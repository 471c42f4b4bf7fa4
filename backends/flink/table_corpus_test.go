package flink

import (
	"bytes"
	"context"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/tableruntime"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// tableValue is one key, namespace, map key or value Flink wrote with a
// Table runtime serializer, with its codec.
type tableValue struct {
	where string
	codec snapshot.Codec
	b     []byte
}

// tableKinds lists the Table runtime serializer kinds that values of s
// are decoded by: a RowData's fields go by their logical types, not by
// the serializers its snapshot nests.
func tableKinds(s *typeser.SerializerSnapshot, kinds map[string]bool) {
	if s == nil {
		return
	}
	if tableruntime.Family.Kind(s.Name()) != "" {
		kinds[typeser.KindOf(s)] = true
	}
	if typeser.KindOf(s) == "RowData" {
		return
	}
	for _, n := range s.Nested {
		tableKinds(n, kinds)
	}
}

// tableCorpusValues reads every value of a Table runtime serializer that
// the real-Flink SQL snapshots hold (testdata/flink-witness's SQL jobs,
// testdata/flink's sql, sqltime and rowtypes), with the kinds of
// serializer they cover. Changelog checkpoints are left out: their heap
// part is not read yet.
func tableCorpusValues(t testing.TB) ([]tableValue, map[string]int) {
	t.Helper()
	var entries []flinkharness.Entry
	for _, corpus := range []string{"flink-witness", "flink"} {
		es, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", corpus))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if strings.HasPrefix(e.Manifest.Job, "sql") || e.Manifest.Job == "rowtypes" {
				if !e.Manifest.Changelog {
					entries = append(entries, e)
				}
			}
		}
	}
	var out []tableValue
	kinds := map[string]int{}
	for _, e := range entries {
		eachEntry(t, e, func(op *snapshot.Operator, en snapshot.Entry) {
			st, _ := op.KeyedStateByName(en.State)
			parts := []struct {
				typ snapshot.Type
				b   []byte
			}{{st.KeyType, en.Key}, {st.NamespaceType, en.Namespace}, {st.UserKeyType, en.UserKey}, {st.ValueType, en.Value}}
			for _, p := range parts {
				c, err := testReg.Codecs.Codec(p.typ)
				if err != nil || len(p.b) == 0 {
					continue
				}
				tc, ok := c.(typeser.Codec)
				if !ok {
					continue
				}
				found := map[string]bool{}
				tableKinds(tc.S, found)
				if len(found) == 0 {
					continue
				}
				for k := range found {
					kinds[k]++
				}
				where := e.Manifest.FlinkVersion + "/" + e.Name + " " + en.State
				out = append(out, tableValue{where, c, bytes.Clone(p.b)}) // entries reuse their buffers
			}
		})
	}
	return out, kinds
}

// Every value of a Table runtime serializer in the real-Flink SQL
// snapshots decodes (the witness test holds the JSON against the jobs'
// own dumps) and encodes from its JSON back to the bytes Flink wrote.
func TestTableCorpusRoundTrip(t *testing.T) {
	values, kinds := tableCorpusValues(t)
	for _, want := range []string{"RowData", "External", "StringData", "SortedMap", "ArrayData"} {
		if kinds[want] == 0 {
			t.Errorf("no %s values in the corpus; kinds seen: %v", want, kinds)
		}
	}
	for _, v := range values {
		decoded, err := v.codec.Decode(v.b)
		if err != nil {
			t.Fatalf("%s: Decode(0x%x): %v", v.where, v.b, err)
		}
		j := asJSON(t, decoded)
		got, err := v.codec.(snapshot.Encoder).Encode(j)
		if err != nil || !bytes.Equal(got, v.b) {
			t.Fatalf("%s: %v encodes to 0x%x, %v; Flink wrote 0x%x", v.where, j, got, err, v.b)
		}
	}
	names := make([]string, 0, len(kinds))
	for k, n := range kinds {
		names = append(names, k+":"+strconv.Itoa(n))
	}
	sort.Strings(names)
	t.Logf("%d values encode to Flink's bytes; by serializer kind: %s", len(values), strings.Join(names, " "))
}

// FuzzTableCorpus: any bytes decode without panic under the codecs of the
// real-Flink SQL snapshots' Table runtime serializers, seeded with the
// values Flink wrote; what decodes encodes back.
func FuzzTableCorpus(f *testing.F) {
	values, _ := tableCorpusValues(f)
	for i := 0; i < len(values); i += 1 + len(values)/64 {
		f.Add(uint16(i), values[i].b)
	}
	f.Fuzz(func(t *testing.T, which uint16, b []byte) {
		formattest.CodecRoundTrip(t, values[int(which)%len(values)].codec, b)
	})
}

// eachEntry calls fn with every keyed entry of a corpus entry's snapshot.
func eachEntry(t testing.TB, e flinkharness.Entry, fn func(op *snapshot.Operator, en snapshot.Entry)) {
	t.Helper()
	ctx := context.Background()
	old, nw := e.PathMap()
	r, err := testReg.Open(ctx, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("%s: %v", e.Dir, err)
	}
	defer r.Close()
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for en, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
				if err != nil {
					t.Fatalf("%s: %v", e.Dir, err)
				}
				fn(op, en)
			}
		}
	}
}
