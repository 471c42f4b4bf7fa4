package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

// sharedFlinkFixture is a snapshot of ../shared/fixtures/flink (written by
// Flink 1.3-1.17), or a skip when the fixtures are absent.
func sharedFlinkFixture(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "fixtures", "flink", name)
	if _, err := os.Stat(filepath.Join(dir, "_metadata")); err != nil {
		t.Skipf("Flink fixture %s not found: %v", name, err)
	}
	return dir
}

// Where the flink writer cannot write what a Flink snapshot holds, it
// refuses with one message naming the operator, the state and the
// serializer, and writes nothing: never a savepoint that silently lacks
// state.
func TestFlinkWriterHonestLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		args func(t *testing.T) []string
		code int
		want []string
	}{
		{"key hash not derivable", func(t *testing.T) []string {
			return []string{"rescale", sharedFlinkFixture(t, "stateful-scala-udf-migration-itcase-flink1.15-rocksdb-savepoint"), "--max-parallelism", "256"}
		}, ExitUsage, []string{`operator "d1392353922252257afa15351a98bae9"`, `keyed state "caseClassState"`, "kryo(org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot)", "Java hashCode"}},
		{"raw state split by parallelism", func(t *testing.T) []string {
			return []string{"rescale", sharedFlinkFixture(t, "new-stateful-udf-migration-itcase-flink1.9-rocksdb-savepoint"), "--parallelism", "2"}
		}, ExitUsage, []string{`operator "d5c8b168c6cbfe8c507a10f88b325243"`, "raw (user-serialized) state", "--operator d5c8b168c6cbfe8c507a10f88b325243=4"}},
		{"raw keyed state split by max parallelism", func(t *testing.T) []string {
			return []string{"rescale", sharedFlinkFixture(t, "new-stateful-udf-migration-itcase-flink1.9-rocksdb-savepoint"), "--max-parallelism", "256"}
		}, ExitUsage, []string{`operator "d5c8b168c6cbfe8c507a10f88b325243"`, "raw (user-serialized) state", "into other key groups", "keep max parallelism 4"}},
		{"changelog without a key serializer", func(t *testing.T) []string {
			return []string{"convert", sharedFlinkFixture(t, "new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint"), "--to", "flink"}
		}, ExitUnsupported, []string{`operator "d5c8b168c6cbfe8c507a10f88b325243" subtask 1, keyed state "state-name" cannot be read`, "needs the key serializer, which the snapshot does not record"}},
		{"undecodable", func(t *testing.T) []string {
			return []string{"convert", sharedFlinkFixture(t, "stateful-scala-udf-migration-itcase-flink1.10-jobmanager-savepoint"), "--to", "flink"}
		}, ExitUnsupported, []string{`operator "d1392353922252257afa15351a98bae9"`, "cannot be read", "--skip-unreadable"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			code, out, errOut := run(t, append(c.args(t), "--output", dst)...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("message lacks %q:\n%s", w, errOut)
				}
			}
			if _, err := os.Stat(dst); !os.IsNotExist(err) {
				t.Errorf("%s was written (%v)", dst, err)
			}
		})
	}
}

// A state file cut short is named with the offset where it ends, and
// nothing is written.
func TestFlinkWriterRefusesTruncatedState(t *testing.T) {
	es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, e := range es {
		if e.Name == "types-hashmap-canonical" && e.Manifest.FlinkVersion == "2.3.0" {
			src = e.SnapshotDir()
		}
	}
	if src == "" {
		t.Fatal("testdata/flink has no 2.3.0 types-hashmap-canonical")
	}
	dir := t.TempDir()
	copied := filepath.Join(dir, "sp")
	if err := exec.Command("cp", "-r", src, copied).Run(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(copied, "*"))
	var victim string
	var size int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && filepath.Base(f) != "_metadata" && st.Size() > size {
			victim, size = f, st.Size()
		}
	}
	if err := os.Truncate(victim, size/2); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "out")
	code, _, errOut := run(t, "rescale", copied, "--max-parallelism", "256", "--output", dst)
	if code != ExitCorrupt || !strings.Contains(errOut, filepath.Base(victim)) {
		t.Errorf("exit %d, %q; want exit %d naming %s", code, errOut, ExitCorrupt, filepath.Base(victim))
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("%s was written (%v)", dst, err)
	}
}
