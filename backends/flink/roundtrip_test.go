package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
)

// roundTrip decodes b as t, renders it as JSON text, parses that back and
// encodes it: the bytes must be b again. It reports false, without
// failing, for values whose serializer has no encoder, and an error for
// those that do not decode.
func roundTrip(t testing.TB, tp snapshot.Type, b []byte) (bool, error) {
	c, err := testReg.Codecs.Codec(tp)
	if err != nil {
		return false, err
	}
	enc, ok := c.(snapshot.Encoder)
	if !ok {
		return false, nil
	}
	v, err := c.Decode(b)
	if err != nil {
		return false, err
	}
	text, err := json.Marshal(v)
	if err != nil {
		return true, err
	}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var back any
	if err := d.Decode(&back); err != nil {
		return true, err
	}
	got, err := enc.Encode(back)
	if errors.Is(err, typeser.ErrNoEncoder) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if !bytes.Equal(got, b) {
		t.Errorf("%s: %s encodes to %x, read from %x", tp.Name, text, got, b)
	}
	return true, nil
}

// roundTripCorpus round-trips every value of the corpus under root that
// decodes and whose serializer has an encoder, and logs the counts by
// version, job and state; it returns the counts of those that did.
func roundTripCorpus(t *testing.T, root string) map[string]int {
	entries, err := flinkharness.ReadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	counts := map[string]int{}  // "version/job state": values that round-tripped
	skipped := map[string]int{} // why and type name: values not encoded
	for _, e := range entries {
		old, nw := e.PathMap()
		r, err := testReg.Open(ctx, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		check := func(state, part string, tp snapshot.Type, b []byte) {
			if b == nil {
				return
			}
			ok, err := roundTrip(t, tp, b)
			switch {
			case errors.Is(err, snapshot.ErrNotDecoded):
				skipped["not decoded: "+tp.Name]++
			case err != nil:
				t.Errorf("%s %s: %s: %v", e.Name, state, tp.Name, err)
			case ok:
				counts[e.Manifest.FlinkVersion+"/"+e.Manifest.Job+" "+state+part]++
			default:
				skipped["no encoder: "+tp.Name]++
			}
		}
		for _, op := range r.Snapshot().Operators {
			for _, sub := range op.Subtasks {
				for en, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
					if err != nil {
						t.Fatal(err)
					}
					st, ok := op.KeyedStateByName(en.State)
					if !ok {
						continue
					}
					check(en.State, " key", st.KeyType, en.Key)
					check(en.State, " namespace", st.NamespaceType, en.Namespace)
					check(en.State, " user key", st.UserKeyType, en.UserKey)
					check(en.State, "", st.ValueType, en.Value)
				}
				for el, err := range r.Elements(ctx, op, sub.Index) {
					if err != nil {
						t.Fatal(err)
					}
					if st, ok := op.OperatorStateByName(el.State); ok {
						check(el.State, "", st.ElementType, el.Value)
					}
				}
			}
		}
		r.Close()
	}
	var lines []string
	for k, n := range counts {
		lines = append(lines, k+": "+strconv.Itoa(n))
	}
	for k, n := range skipped {
		lines = append(lines, "skipped: "+k+": "+strconv.Itoa(n))
	}
	sort.Strings(lines)
	t.Logf("round trips in %s:\n%s", root, strings.Join(lines, "\n"))
	return counts
}

// Every value of the checked-in corpus that decodes and whose serializer
// has an encoder encodes, from its JSON, to the bytes it was read from;
// the states whose values are Flink's composite serializers are all
// among them.
func TestCorpusValuesRoundTrip(t *testing.T) {
	counts := roundTripCorpus(t, filepath.Join(flinkharness.RepoRoot(), "testdata", "flink"))
	for _, want := range []string{"2.3.0/orders order", "2.3.0/collections basket", "2.3.0/types either", "2.3.0/types list",
		"2.3.0/types map", "2.3.0/types pojo", "2.3.0/types row", "2.3.0/types enum", "2.3.0/types ints", "2.3.0/types strings", "1.20.5/types either",
		"2.3.0/sql accState", "2.3.0/sql deduplicate-state", "1.20.5/sql left-records user key", "1.20.5/sql distinctAcc_0 user key",
		"2.3.0/sqltime window-aggs", "2.3.0/sqltime watermark", "1.20.5/sqltime deduplicate-state",
		"2.3.0/windows window-contents", "2.3.0/windows window-contents namespace", "1.20.5/windows window-contents namespace",
		"2.3.0/windows count namespace", "2.3.0/windows tuple0", "2.3.0/windows tuple5", "1.20.5/windows tuple0",
		"1.20.5/kryojdk jdks", "1.20.5/kryojdk jdk", "2.3.0/kryojdk jdks", "2.3.0/kryojdk jdk"} {
		if counts[want] == 0 {
			t.Errorf("no value of %s round-tripped", want)
		}
	}
}

// The values of a corpus made by scripts/flink-corpus.sh round-trip too
// (make test makes one slice of the matrix a run).
func TestGeneratedCorpusValuesRoundTrip(t *testing.T) {
	roundTripCorpus(t, generatedCorpus(t))
}
