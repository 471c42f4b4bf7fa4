package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

// TestFlinkVersionRestoresInFlink is the table of --flink-version against
// real Flink, one version per release line (STATEUTIL_FLINK_VERSIONS;
// make test-flink-matrix runs the newest of every line the harness
// knows): the _metadata version Flink V writes is the one stateutil
// writes for its line; what stateutil writes for it from the checked-in
// 1.20.5 and 2.3.0 savepoints, Flink V restores with the job's state;
// the next _metadata version it refuses; and a savepoint of the other
// major version with Kryo state, or a POJO with a List field, stateutil
// refuses to write (exit 4).
func TestFlinkVersionRestoresInFlink(t *testing.T) {
	eachFlinkVersion(t, flinkVersionCells)
}

func flinkVersionCells(t *testing.T, v string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	line, err := flink.ReleaseOf(v)
	if err != nil {
		t.Fatal(err)
	}
	fc := &flinkCase{t: t, v: v, ctx: ctx, dir: t.TempDir(), records: 200}
	es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	source := func(t *testing.T, name string, major int) flinkharness.Entry {
		for _, e := range es {
			if e.Name == name && strings.HasPrefix(e.Manifest.FlinkVersion, fmt.Sprintf("%d.", major)) {
				return e
			}
		}
		t.Fatalf("testdata/flink has no %s of Flink %d.x", name, major)
		return flinkharness.Entry{}
	}
	metadataVersion := func(t *testing.T, dir string) int {
		data, err := os.ReadFile(filepath.Join(dir, "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := metadata.ParseMetadata(data, dir)
		if err != nil {
			t.Fatal(err)
		}
		return m.Version
	}

	t.Run("writes", func(t *testing.T) {
		snap, _, err := flinkharness.Snapshot(ctx, v, flinkharness.SnapshotOptions{Job: "basic", Backend: "hashmap", Kind: "canonical",
			Records: fc.records, Dir: filepath.Join(fc.dir, "flink-wrote")})
		if err != nil {
			t.Fatal(err)
		}
		if got := metadataVersion(t, snap); got != line.Metadata {
			t.Errorf("Flink %s wrote _metadata version %d; stateutil writes %d for Flink %s", v, got, line.Metadata, line.Line)
		}
	})
	for _, major := range []int{1, 2} {
		for _, job := range []string{"basic", "types"} {
			src := source(t, job+"-hashmap-canonical", major)
			name := fmt.Sprintf("%s-of-%s", job, src.Manifest.FlinkVersion)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fc := *fc
				fc.t = t
				dst := filepath.Join(fc.dir, name)
				args := []string{"convert", src.SnapshotDir(), "--to", "flink", "--flink-version", line.Line, "--output", dst}
				if job == "types" && major != line.Major {
					// Kryo 2 (1.x) and Kryo 5 (2.x) values: refused, nothing written.
					code, _, errOut := run(t, args...)
					if code != ExitUnsupported || !strings.Contains(errOut, `keyed state "kryo"`) || !strings.Contains(errOut, "KryoSerializerSnapshot") {
						t.Errorf("stateutil %s: exit %d, %s; want exit %d naming the Kryo state", strings.Join(args, " "), code, errOut, ExitUnsupported)
					}
					if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s was written", dst)
					}
					return
				}
				fc.stateutil(args...)
				if got := metadataVersion(t, dst); got != line.Metadata {
					t.Errorf("_metadata version %d written for Flink %s; want %d", got, line.Line, line.Metadata)
				}
				fc.restore(name, job, dst, dumpOf(t, src.File("dump.jsonl")), flinkharness.RestoreOptions{Parallelism: 2})
			})
		}
	}
	t.Run("pojo-list-field-to-the-other-major", func(t *testing.T) {
		// Written unchecked, Flink 1.20.5 refuses the 2.3.0 one: "For heap
		// backends, the new state serializer (PojoSerializer) must not be
		// incompatible with the old state serializer".
		snap, _, err := flinkharness.Snapshot(ctx, v, flinkharness.SnapshotOptions{Job: "orders", Backend: "hashmap", Kind: "canonical",
			Records: 40, Dir: filepath.Join(fc.dir, "orders")})
		if err != nil {
			t.Fatal(err)
		}
		var other flink.Release
		for _, r := range flink.Releases {
			if r.Major != line.Major {
				other = r
			}
		}
		dst := filepath.Join(fc.dir, "orders-for-"+other.Line)
		code, _, errOut := run(t, "convert", snap, "--to", "flink", "--flink-version", other.Line, "--output", dst)
		if code != ExitUnsupported || !strings.Contains(errOut, `keyed state "order" has a POJO field`) {
			t.Errorf("convert for Flink %s: exit %d, %s; want exit %d naming the POJO field", other.Line, code, errOut, ExitUnsupported)
		}
		if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written", dst)
		}
	})
	// The newest line has no next version to refuse.
	var next *flink.Release
	for i, r := range flink.Releases {
		if r.Metadata > line.Metadata {
			next = &flink.Releases[i]
			break
		}
	}
	if next == nil {
		return
	}
	t.Run("refuses-the-next-version", func(t *testing.T) {
		src := source(t, "basic-hashmap-canonical", next.Major)
		dst := filepath.Join(fc.dir, "for-"+next.Line)
		fc.stateutil("convert", src.SnapshotDir(), "--to", "flink", "--flink-version", next.Line, "--output", dst)
		_, err := flinkharness.RestoreDump(ctx, v, flinkharness.RestoreOptions{Job: "basic", Snapshot: dst, Backend: "hashmap",
			Records: fc.records, Dump: filepath.Join(fc.dir, "next.jsonl")})
		var he *flinkharness.Error
		want := fmt.Sprintf("Unrecognized checkpoint version number: %d", next.Metadata)
		if !errors.As(err, &he) || !strings.Contains(he.Message, want) {
			t.Errorf("Flink %s restored a savepoint of _metadata version %d, or refused it otherwise than %q: %v", v, next.Metadata, want, err)
		}
	})
}
