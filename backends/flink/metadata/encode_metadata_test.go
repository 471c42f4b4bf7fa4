package metadata

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

// realMetadataFiles lists the real Flink `_metadata` files, or skips.
func realMetadataFiles(t *testing.T) []string {
	t.Helper()
	out := flinkharness.RealMetadataFiles()
	if len(out) == 0 {
		t.Skip("no real Flink _metadata files found")
	}
	return out
}

// Every real `_metadata` of version 3+ decodes and encodes back to the
// same bytes: the encoder writes every handle type as Flink does.
func TestEncodeMetadataReproducesFlink(t *testing.T) {
	n := 0
	for _, f := range realMetadataFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseMetadata(data, f)
		if err != nil || m.Version < 3 {
			continue
		}
		enc, err := EncodeMetadata(m, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if m.Version >= 4 {
			enc = enc[:len(enc)-len(javaNull)]
		}
		if !bytes.HasPrefix(data, enc) {
			i := 0
			for i < len(enc) && i < len(data) && enc[i] == data[i] {
				i++
			}
			t.Errorf("%s (v%d): encoding differs from Flink's at byte %d of %d", f, m.Version, i, len(data))
			continue
		}
		if m.Version >= 4 {
			if _, err := ParseMetadata(append(append([]byte{}, enc...), data[len(enc):]...), f); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		} else if len(enc) != len(data) {
			t.Errorf("%s: %d bytes encoded, Flink wrote %d", f, len(enc), len(data))
		}
		n++
	}
	t.Logf("%d real _metadata files re-encoded byte for byte", n)
}

// The CheckpointProperties stateutil writes for a savepoint are the bytes
// Flink 1.20.5 and 2.3.0 wrote for their stop-with-savepoint savepoints,
// and read back as a canonical savepoint.
func TestSavepointPropertiesAreFlinks(t *testing.T) {
	got, err := SavepointProperties("Suspend Savepoint", "SUSPEND", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.20.5", "2.3.0"} {
		ms, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", v, "basic-hashmap-canonical", "snapshot", "*", "_metadata"))
		if len(ms) != 1 {
			t.Fatalf("no checked-in canonical savepoint of %s", v)
		}
		data, err := os.ReadFile(ms[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(data, got) {
			t.Errorf("Flink %s's savepoint does not end in the properties stateutil writes", v)
		}
	}
	for _, c := range []struct{ name, action string }{{"Savepoint", "NONE"}, {"Suspend Savepoint", "SUSPEND"}} {
		b, err := SavepointProperties(c.name, c.action, true)
		if err != nil {
			t.Fatal(err)
		}
		obj, used, classes, strs, err := javaser.Parse(b, "props", 0)
		if err != nil || used != len(b) {
			t.Fatalf("%v: %v (used %d of %d)", c, err, used, len(b))
		}
		p := checkpointPropertiesFrom(obj, classes, strs)
		if p == nil || !p.Savepoint || p.Format != "CANONICAL" || p.TypeName != c.name || p.PostCheckpointAction != c.action || !p.Flags["forced"] {
			t.Errorf("%v read back as %+v", c, p)
		}
	}
}
