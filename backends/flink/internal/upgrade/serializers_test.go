package upgrade

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/kryo"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

var table = typeser.NewTable(kryo.Family)

// corpusSnapshots are the serializer snapshots of the keyed state files of
// the checked-in real-Flink savepoints (canonical ones: a keyed header
// opens each file).
func corpusSnapshots(t *testing.T) []*typeser.SerializerSnapshot {
	var out []*typeser.SerializerSnapshot
	files, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", "*", "*-hashmap-canonical", "snapshot", "savepoint-*", "*"))
	for _, f := range files {
		if filepath.Base(f) == "_metadata" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := statefile.ParseKeyedHeader(table, data, f, 0, -1)
		if err != nil {
			continue // an operator state file
		}
		out = append(out, h.KeySerializer)
		for _, m := range h.States {
			for _, s := range m.Serializers {
				out = append(out, s)
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("%d serializer snapshots in the corpus", len(out))
	}
	return out
}

// TestRewrittenReproducesSnapshots writes every POJO and composite
// serializer snapshot of the corpus again from its nested snapshots'
// bytes, as the upgrade does when one of them changes: the bytes must be
// Flink's, or the rewrite must refuse.
func TestRewrittenReproducesSnapshots(t *testing.T) {
	rebuilt := 0
	var walk func(s *typeser.SerializerSnapshot)
	walk = func(s *typeser.SerializerSnapshot) {
		if s == nil || len(s.Nested) == 0 || len(s.Versioned) == 0 {
			return
		}
		nested := make([][]byte, len(s.Nested))
		for i, n := range s.Nested {
			if n != nil {
				nested[i] = n.Versioned
			}
			walk(n)
		}
		var b []byte
		var err error
		switch {
		case s.Class == pojoSnapshot:
			b, err = pojoRewritten(s, nested)
		case s.Version == compositeVersion && len(s.Outer) > 0 || s.OuterVersion != 0:
			b = composite(s.Class, s.OuterVersion, s.Outer, nested...)
		default:
			return
		}
		if err != nil {
			t.Errorf("%s: %v", s.Class, err)
			return
		}
		if !bytes.Equal(b, s.Versioned) {
			t.Errorf("%s written again:\n%x\nFlink wrote\n%x", s.Class, b, s.Versioned)
		}
		rebuilt++
	}
	for _, s := range corpusSnapshots(t) {
		walk(s)
	}
	t.Logf("%d POJO and composite snapshots written again", rebuilt)
	if rebuilt < 20 {
		t.Fatalf("%d snapshots written again: the corpus should hold more POJOs and composites", rebuilt)
	}
}
