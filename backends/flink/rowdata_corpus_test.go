package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// rowDataValues are the RowData keys and map keys of the rowtypes job's
// snapshot of a version (testdata/flink), with their codecs.
func rowDataValues(t testing.TB, version string) (codecs []snapshot.Codec, values [][][]byte) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", version, "rowtypes-hashmap-canonical", "snapshot", "*"))
	if len(dirs) != 1 {
		t.Fatalf("testdata/flink/%s/rowtypes-hashmap-canonical holds %d savepoints, want 1", version, len(dirs))
	}
	ctx := context.Background()
	r, err := testReg.Open(ctx, dirs[0], snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, op := range r.Snapshot().Operators {
		for _, st := range op.KeyedStates {
			kc, err1 := testReg.Codecs.Codec(st.KeyType)
			uc, err2 := testReg.Codecs.Codec(st.UserKeyType)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v, %v", st.Name, err1, err2)
			}
			var keys, userKeys [][]byte
			for i := range op.Subtasks {
				for e, err := range r.Entries(ctx, op, i, keygroup.Range{Start: 0, End: op.MaxParallelism - 1}) {
					if err != nil {
						t.Fatal(err)
					}
					if e.State == st.Name {
						keys = append(keys, bytes.Clone(e.Key))
						userKeys = append(userKeys, bytes.Clone(e.UserKey))
					}
				}
			}
			codecs = append(codecs, kc, uc)
			values = append(values, keys, userKeys)
		}
	}
	if len(values) != 4 {
		t.Fatalf("%d RowData value sets, want the keys and map keys of left-records and right-records", len(values))
	}
	return codecs, values
}

// asJSON is v as a user gives it back: marshalled, then read with numbers
// kept as their text.
func asJSON(t testing.TB, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every RowData of the witness snapshots, of every logical type the job
// holds, encodes from its JSON to the bytes Flink wrote.
func TestRowDataRoundTripsTheCorpus(t *testing.T) {
	for _, version := range []string{"1.20.5", "2.3.0"} {
		codecs, values := rowDataValues(t, version)
		n := 0
		for i, c := range codecs {
			for _, b := range values[i] {
				v, err := c.Decode(b)
				if err != nil {
					t.Fatalf("%s: Decode(0x%x): %v", version, b, err)
				}
				got, err := c.(snapshot.Encoder).Encode(asJSON(t, v))
				if err != nil || !bytes.Equal(got, b) {
					t.Fatalf("%s: %v encodes to 0x%x, %v; Flink wrote 0x%x", version, v, got, err, b)
				}
				n++
			}
		}
		if n < 400 {
			t.Errorf("%s: %d RowData values, want the 400 entries' keys and map keys", version, n)
		}
	}
}

// FuzzRowData: any bytes decode without panic under the witness's row
// types; what decodes encodes back to the same bytes.
func FuzzRowData(f *testing.F) {
	codecs, values := rowDataValues(f, "2.3.0")
	for i := range values {
		f.Add(uint8(i), values[i][0])
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		formattest.CodecRoundTrip(t, codecs[int(which)%len(codecs)], b)
	})
}
