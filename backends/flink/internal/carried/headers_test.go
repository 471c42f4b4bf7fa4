package carried

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

var table = typeser.NewTable()

// The keyed header written from what the reader carries is the header
// Flink wrote, byte for byte, for every keyed state file of the checked-in
// canonical savepoints that Flink wrote in the current layout with at most
// one option per state (Flink writes options in its hash map's order,
// the writer in name order).
func TestKeyedHeaderIsFlinks(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", "*", "*-hashmap-canonical", "snapshot", "savepoint-*", "*"))
	compared := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := statefile.ParseKeyedHeader(table, data, f, 0, -1)
		if err != nil || h.Version != keyedHeaderVersion || h.Compression {
			continue // an operator state file, or an older layout
		}
		var metas []Meta
		plain := true
		for _, m := range h.States {
			metas = AddMeta(metas, m)
			plain = plain && len(m.Options) <= 1
		}
		if !plain {
			continue
		}
		got, err := EncodeKeyedHeader(h.KeySerializer.Raw, metas)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !bytes.HasPrefix(data, got) || int64(len(got)) != h.Size {
			t.Fatalf("%s: the header written (%d bytes) is not the %d bytes Flink wrote", f, len(got), h.Size)
		}
		compared++
	}
	if compared < 16 { // the keyed state files of testdata/flink's canonical savepoints
		t.Fatalf("%d headers compared: the corpus is missing", compared)
	}
}

// Headers Flink could not read are refused, not written.
func TestHeadersRefused(t *testing.T) {
	if _, err := EncodeKeyedHeader(nil, nil); err == nil {
		t.Error("a keyed header without a key serializer was written")
	}
	legacy := []Meta{{Name: "s", Serializers: []Serializer{{Key: "VALUE_SERIALIZER"}}}}
	if _, err := EncodeKeyedHeader([]byte{0, 0, 0, 1}, legacy); err == nil {
		t.Error("a state whose serializer has the Flink 1.3-1.6 layout was written")
	}
	if _, err := EncodeOperatorHeader(6, make([]Meta, 0x8000), nil); err == nil {
		t.Error("an operator header of 32768 states was written")
	}
}
