package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/backends/flink"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
)

// TestFlinkWriterRestoresInFlink is real Flink as the witness of the flink
// writer: every savepoint stateutil writes is restored by Flink (and read
// by its State Processor API), and the state Flink then holds must equal
// the state the original job dumped when Flink took the source snapshot.
// Sources are the checked-in snapshots of testdata/flink (no JVM needed
// to make them) and one snapshot Flink takes at max parallelism 4096.
//
// It runs a few dozen JVMs (7-15 minutes on a loaded 2-core machine), so
// only where STATEUTIL_REQUIRE_FLINK=1 asks for real Flink (make test);
// the Flink versions run side by side.
func TestFlinkWriterRestoresInFlink(t *testing.T) {
	eachFlinkVersion(t, flinkWriterMatrix)
}

// eachFlinkVersion runs cells for every Flink version of the harness, side
// by side, where STATEUTIL_REQUIRE_FLINK=1 asks for real Flink. The test
// runs beside the package's other parallel tests (t.Parallel): its JVMs
// then overlap their waits.
func eachFlinkVersion(t *testing.T, cells func(t *testing.T, v string)) {
	t.Parallel()
	flinkharness.Require(t)
	if !flinkharness.Required() {
		t.Skip("the real-Flink restore matrix runs with STATEUTIL_REQUIRE_FLINK=1")
	}
	for _, v := range flinkharness.Versions() {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			cells(t, v)
		})
	}
}

type flinkCase struct {
	t       *testing.T
	v       string
	ctx     context.Context
	dir     string
	records int64
}

// newFlinkCase is a matrix cell of Flink v with half an hour to run, and
// out, which names a file in its directory.
func newFlinkCase(t *testing.T, v string) (fc *flinkCase, out func(name string) string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	fc = &flinkCase{t: t, v: v, ctx: ctx, dir: t.TempDir(), records: 200}
	return fc, func(name string) string { return filepath.Join(fc.dir, name) }
}

// entry is a checked-in corpus entry of testdata/flink.
func (fc *flinkCase) entry(name string) flinkharness.Entry {
	fc.t.Helper()
	es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", "flink"))
	if err != nil {
		fc.t.Fatal(err)
	}
	for _, e := range es {
		if e.Name == name && e.Manifest.FlinkVersion == fc.v {
			return e
		}
	}
	fc.t.Skipf("testdata/flink has no %s of Flink %s", name, fc.v)
	return flinkharness.Entry{}
}

func (fc *flinkCase) stateutil(args ...string) string {
	fc.t.Helper()
	code, out, errOut := run(fc.t, args...)
	if code != 0 {
		fc.t.Fatalf("stateutil %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func dumpOf(t *testing.T, path string) []flinkharness.Line {
	t.Helper()
	lines, err := flinkharness.ReadDump(path)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// restore has Flink restore snap and compares its dump with want.
func (fc *flinkCase) restore(name, job, snap string, want []flinkharness.Line, o flinkharness.RestoreOptions) {
	fc.t.Helper()
	o.Job, o.Snapshot, o.Records = job, snap, fc.records
	o.Dump = filepath.Join(fc.dir, name+".restore.jsonl")
	if o.Backend == "" {
		o.Backend = "hashmap"
	}
	if _, err := flinkharness.RestoreDump(fc.ctx, fc.v, o); err != nil {
		fc.t.Errorf("%s: Flink %s did not restore %s: %v", name, fc.v, snap, err)
		return
	}
	if d := flinkharness.EqualDumps(want, dumpOf(fc.t, o.Dump)); d != "" {
		fc.t.Errorf("%s: Flink %s restored other state than the original job held:\n%s", name, fc.v, d)
	}
}

// spa reads snap with the State Processor API and compares.
func (fc *flinkCase) spa(name, job, snap string, want []flinkharness.Line) {
	fc.t.Helper()
	fc.spaWith(name, snap, want, flinkharness.SPAOptions{Job: job})
}

func (fc *flinkCase) spaWith(name, snap string, want []flinkharness.Line, o flinkharness.SPAOptions) {
	fc.t.Helper()
	dump := filepath.Join(fc.dir, name+".spa.jsonl")
	o.Snapshot, o.Dump, o.Records = snap, dump, fc.records
	if _, err := flinkharness.SPADump(fc.ctx, fc.v, o); err != nil {
		fc.t.Errorf("%s: the State Processor API of Flink %s did not read %s: %v", name, fc.v, snap, err)
		return
	}
	if d := flinkharness.EqualDumps(want, dumpOf(fc.t, dump)); d != "" {
		fc.t.Errorf("%s: the State Processor API of Flink %s read other state:\n%s", name, fc.v, d)
	}
}

// renamed is lines with operator from named to.
func renamed(t *testing.T, lines []flinkharness.Line, from, to string) []flinkharness.Line {
	return withField(t, lines, func(l flinkharness.Line) bool { return l.Operator == from }, "operator", to)
}

// withField is lines with field set to to (as JSON) in those that match.
func withField(t *testing.T, lines []flinkharness.Line, match func(flinkharness.Line) bool, field string, to any) []flinkharness.Line {
	t.Helper()
	out := make([]flinkharness.Line, len(lines))
	for i, l := range lines {
		if match(l) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l.Raw), &m); err != nil {
				t.Fatal(err)
			}
			m[field], _ = json.Marshal(to)
			raw, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			l.Raw = string(raw)
		}
		out[i] = l
	}
	return out
}

func without(lines []flinkharness.Line, operator string) []flinkharness.Line {
	return dropLines(lines, func(l flinkharness.Line) bool { return l.Operator == operator })
}

// dropLines is lines without those drop says.
func dropLines(lines []flinkharness.Line, drop func(flinkharness.Line) bool) []flinkharness.Line {
	var out []flinkharness.Line
	for _, l := range lines {
		if !drop(l) {
			out = append(out, l)
		}
	}
	return out
}

func flinkWriterMatrix(t *testing.T, v string) {
	fc, out := newFlinkCase(t, v)

	basic := fc.entry("basic-hashmap-canonical")
	basicDump := dumpOf(t, basic.File("dump.jsonl"))

	t.Run("maxp-128-to-256", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		dst := out("m256")
		fc.stateutil("rescale", basic.SnapshotDir(), "--max-parallelism", "256", "--parallelism", "3", "--output", dst)
		fc.restore("m256-unset", "basic", dst, basicDump, flinkharness.RestoreOptions{Backend: "rocksdb", Parallelism: 3})
		fc.restore("m256-set", "basic", dst, basicDump, flinkharness.RestoreOptions{MaxParallelism: 256, Parallelism: 2})
		fc.spa("m256", "basic", dst, basicDump)
	})
	t.Run("sharded-commit", func(t *testing.T) {
		// Shards write the state files, the commit _metadata; Flink
		// restores it with stateutil's checksum manifest beside it.
		t.Parallel()
		fc := *fc
		fc.t = t
		dst, plan := out("sharded"), out("sharded-plan.json")
		fc.stateutil("rescale", basic.SnapshotDir(), "--parallelism", "3", "--output", dst, "--plan-only", plan, "--shards", "2")
		fc.stateutil("shard", plan, "--shard", "1/2")
		fc.stateutil("shard", plan, "--shard", "2/2")
		fc.stateutil("commit", plan)
		if _, err := os.Stat(filepath.Join(dst, flink.ChecksumsFile)); err != nil {
			t.Fatalf("the committed savepoint has no checksum manifest: %v", err)
		}
		fc.stateutil("verify", dst)
		fc.restore("sharded", "basic", dst, basicDump, flinkharness.RestoreOptions{Parallelism: 3})
	})
	t.Run("changelog-checkpoint", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		cl := fc.entry("basic-hashmap-checkpoint-changelog")
		old, nw := cl.PathMap()
		dst := out("changelog")
		fc.stateutil("convert", cl.SnapshotDir(), "--path-map", old+"="+nw, "--to", "flink", "--output", dst)
		fc.restore("changelog", "basic", dst, dumpOf(t, cl.File("dump.jsonl")), flinkharness.RestoreOptions{Parallelism: 2})
	})
	t.Run("maxp-128-to-4096", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		dst := out("m4096")
		fc.stateutil("rescale", basic.SnapshotDir(), "--max-parallelism", "4096", "--parallelism", "2", "--operator", "keyed=4", "--output", dst)
		fc.restore("m4096", "basic", dst, basicDump, flinkharness.RestoreOptions{Parallelism: 4})
		fc.spa("m4096", "basic", dst, basicDump)
	})
	t.Run("maxp-4096-to-128", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		snap, dump, err := flinkharness.Snapshot(fc.ctx, v, flinkharness.SnapshotOptions{Job: "longkeys", Backend: "rocksdb", Kind: "canonical",
			MaxParallelism: 4096, Records: fc.records, Dir: out("longkeys-4096")})
		if err != nil {
			t.Fatal(err)
		}
		want := dumpOf(t, dump)
		dst := out("m128")
		fc.stateutil("rescale", snap, "--max-parallelism", "128", "--parallelism", "3", "--output", dst)
		fc.restore("m128", "longkeys", dst, want, flinkharness.RestoreOptions{MaxParallelism: 128, Parallelism: 3})
		fc.spa("m128", "longkeys", dst, want)
	})
	t.Run("maxp-256-to-200", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		tuple := fc.entry("tuplekeys-hashmap-canonical")
		want := dumpOf(t, tuple.File("dump.jsonl"))
		mid, dst := out("t256"), out("t200")
		fc.stateutil("rescale", tuple.SnapshotDir(), "--max-parallelism", "256", "--parallelism", "3", "--output", mid)
		fc.stateutil("rescale", mid, "--max-parallelism", "200", "--parallelism", "4", "--output", dst)
		fc.restore("t200", "tuplekeys", dst, want, flinkharness.RestoreOptions{Backend: "rocksdb", Parallelism: 4})
		fc.spa("t200", "tuplekeys", dst, want)
	})
	t.Run("rowdata-keys-128-to-256", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		snap, dump, err := flinkharness.Snapshot(fc.ctx, v, flinkharness.SnapshotOptions{Job: "rowdata", Backend: "hashmap", Kind: "canonical",
			Records: fc.records, Dir: out("rowdata")})
		if err != nil {
			t.Fatal(err)
		}
		// verify hashes every key: BinaryRowData keys must lie where Flink put them.
		fc.stateutil("verify", snap)
		dst := out("rowdata-256")
		fc.stateutil("rescale", snap, "--max-parallelism", "256", "--parallelism", "3", "--output", dst)
		fc.restore("rowdata-256", "rowdata", dst, dumpOf(t, dump), flinkharness.RestoreOptions{Parallelism: 3})
		fc.spa("rowdata-256", "rowdata", dst, dumpOf(t, dump))
	})
	t.Run("native-rocksdb-to-canonical", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		native := fc.entry("basic-rocksdb-native")
		dst := out("canonical")
		fc.stateutil("convert", native.SnapshotDir(), "--to", "flink", "--output", dst)
		want := dumpOf(t, native.File("dump.jsonl"))
		fc.restore("canonical", "basic", dst, want, flinkharness.RestoreOptions{Backend: "hashmap", Parallelism: 3})
		fc.spa("canonical", "basic", dst, want)
	})
	t.Run("checkpoint-to-moved-savepoint", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		chk := fc.entry("basic-rocksdb-checkpoint-incremental")
		// The checkpoint moves first (its _metadata names absolute paths
		// where Flink wrote it), then the savepoint made of it.
		moved := out("moved-checkpoint")
		if err := exec.Command("cp", "-r", filepath.Join(chk.Dir, "snapshot"), moved).Run(); err != nil {
			t.Fatal(err)
		}
		src := filepath.Join(moved, filepath.FromSlash(chk.Manifest.SnapshotSubpath))
		first, final := out("savepoint-first"), out("elsewhere/savepoint-moved")
		fc.stateutil("convert", src, "--path-map", chk.Manifest.OriginalDir+"="+moved, "--to", "flink", "--output", first)
		if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(first, final); err != nil {
			t.Fatal(err)
		}
		insp := fc.stateutil("inspect", final)
		if !strings.Contains(insp, "(savepoint)") {
			t.Errorf("the converted checkpoint is not a savepoint:\n%s", insp)
		}
		fc.restore("moved", "basic", final, dumpOf(t, chk.File("dump.jsonl")), flinkharness.RestoreOptions{Parallelism: 2})
		fc.spa("moved", "basic", final, dumpOf(t, chk.File("dump.jsonl")))
	})
	t.Run("operator-rename", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		const newUID = "keyed-renamed-by-stateutil-v2"
		dst := out("renamed")
		fc.stateutil("operator", "rename", basic.SnapshotDir(), "--operator", "keyed", "--to", newUID, "--output", dst)
		// Flink finds the keyed state under the id of the new uid: a job
		// whose keyed operator is still "keyed" cannot map it, one whose
		// operator has the new uid restores all of it.
		_, err := flinkharness.RestoreDump(fc.ctx, v, flinkharness.RestoreOptions{Job: "basic", Snapshot: dst, Backend: "hashmap",
			Records: fc.records, Dump: out("renamed.jsonl")})
		var he *flinkharness.Error
		if id := keygroup.OperatorIDOfUID(newUID); !errors.As(err, &he) || !strings.Contains(he.Message, id) {
			t.Errorf("Flink restored %s into a job without uid %s, or refused without naming id %s: %v", dst, newUID, id, err)
		}
		want := renamed(t, basicDump, "keyed", newUID)
		fc.restore("renamed", "basic", dst, want, flinkharness.RestoreOptions{Parallelism: 2, RenameUID: "keyed=" + newUID})
		fc.spaWith("renamed", dst, want, flinkharness.SPAOptions{Job: "basic", RenameUID: "keyed=" + newUID})
	})
	t.Run("drop-expired-ttl", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		dst := out("unexpired")
		fc.stateutil("convert", basic.SnapshotDir(), "--to", "flink", "--drop-expired-ttl-at", "2100-01-01T00:00:00Z", "--ttl", "last=24h", "--output", dst)
		var want []flinkharness.Line
		for _, l := range basicDump {
			if l.Operator != "keyed" || l.State != "last" {
				want = append(want, l)
			}
		}
		if len(want) == len(basicDump) {
			t.Fatal("the job's dump has no TTL'd state last")
		}
		// What Flink restores of a TTL'd state depends on its TTL as the
		// job reading it back declares it: that no expired entry was
		// written, the savepoint itself shows.
		if got := fc.stateutil("dump", dst, "--operator", "keyed", "--state", "last"); got != "" {
			t.Errorf("expired entries of state last were written:\n%s", got)
		}
		fc.restore("unexpired", "basic", dst, want, flinkharness.RestoreOptions{Parallelism: 2})
		fc.spa("unexpired", "basic", dst, want)
	})
	t.Run("operator-remove", func(t *testing.T) {
		t.Parallel()
		fc := *fc
		fc.t = t
		dst := out("removed")
		fc.stateutil("operator", "remove", basic.SnapshotDir(), "--operator", "broadcast", "--output", dst)
		fc.restore("removed", "basic", dst, without(basicDump, "broadcast"), flinkharness.RestoreOptions{AllowNonRestored: true})
		fc.spaWith("removed", dst, without(basicDump, "broadcast"), flinkharness.SPAOptions{Job: "basic", WithoutOperator: "broadcast"})
	})
}
