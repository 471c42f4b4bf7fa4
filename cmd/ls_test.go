package cmd

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/catalog"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// lsTree builds a checkpoint root and a savepoint root under dir, every
// file and directory modified at one fixed time: a Flink job of two
// incremental checkpoints sharing their files (the corpus's checkpoint as
// chk-1 and its copy as chk-2), a job of memory checkpoints with one in
// progress (a chk-N without _metadata), and a Flink savepoint. It returns
// the --path-map the Flink checkpoints' absolute paths need.
func lsTree(t *testing.T, dir string) string {
	t.Helper()
	es, err := flinkharness.ReadCorpus("../testdata/flink")
	if err != nil {
		t.Fatal(err)
	}
	copies := map[string]string{}
	var pathMap string
	for _, e := range es {
		switch {
		case e.Manifest.FlinkVersion == "2.3.0" && e.Name == "basic-rocksdb-checkpoint-incremental":
			copies[filepath.Join(e.Dir, "snapshot")] = filepath.Join(dir, "checkpoints")
			chk := filepath.Join(dir, "checkpoints", filepath.FromSlash(e.Manifest.SnapshotSubpath))
			copies[e.SnapshotDir()] = filepath.Join(filepath.Dir(chk), "chk-2")
			old, _ := e.PathMap()
			pathMap = old + "=" + filepath.Join(dir, "checkpoints")
		case e.Manifest.FlinkVersion == "2.3.0" && e.Name == "basic-hashmap-canonical":
			copies[e.SnapshotDir()] = filepath.Join(dir, "savepoints", filepath.Base(e.SnapshotDir()))
		}
	}
	if len(copies) != 3 {
		t.Fatalf("corpus entries missing: %v", copies)
	}
	for from, to := range copies {
		formattest.CopyTree(t, from, to)
	}
	for _, p := range []string{"checkpoints/own-job/chk-3.dump", "checkpoints/own-job/chk-4.dump"} {
		formattest.CopyTree(t, example, filepath.Join(dir, filepath.FromSlash(p)))
	}
	if err := os.MkdirAll(filepath.Join(dir, "checkpoints", "own-job", "chk-5"), 0o755); err != nil {
		t.Fatal(err)
	}
	setTimes(t, dir)
	return pathMap
}

// setTimes modifies everything below dir at one fixed time, so that what
// ls prints of it does not depend on when the test ran.
func setTimes(t *testing.T, dir string) {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, at, at)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGoldenLs(t *testing.T) {
	dir := t.TempDir()
	pathMap := lsTree(t, dir)
	empty := t.TempDir()
	r := strings.NewReplacer(dir, "ROOT", empty, "EMPTY").Replace
	for _, c := range []struct {
		name string
		args []string
	}{
		{"ls-table", []string{"ls", dir, "--depth", "3", "--path-map", pathMap}},
		{"ls-json", []string{"ls", dir, "--depth", "3", "--path-map", pathMap, "-o", "json"}},
		{"ls-quiet", []string{"ls", dir, "--depth", "3", "--path-map", pathMap, "-q"}},
		{"ls-checkpoint-root", []string{"ls", filepath.Join(dir, "checkpoints"), "--path-map", pathMap}},
		{"ls-job", []string{"ls", filepath.Join(dir, "checkpoints", "own-job")}},
		{"ls-moved-without-path-map", []string{"ls", filepath.Join(dir, "checkpoints")}},
		{"ls-empty", []string{"ls", empty}},
		{"ls-empty-json", []string{"ls", empty, "-o", "json"}},
		{"ls-missing", []string{"ls", filepath.Join(empty, "nope")}},
		{"ls-quiet-json", []string{"ls", empty, "-q", "-o", "json"}},
		{"ls-bad-depth", []string{"ls", empty, "--depth", "-1"}},
		{"ls-no-args", []string{"ls"}},
	} {
		t.Run(c.name, func(t *testing.T) { runGoldenReplacing(t, c.name, r, c.args...) })
	}
	// A shared file removed: both checkpoints that reference it fail.
	shared := filepath.Join(dir, "checkpoints", "eea7c876a5466305dd97ff5e53bca3b5", "shared")
	ents, err := os.ReadDir(shared)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(shared, ents[0].Name())); err != nil {
		t.Fatal(err)
	}
	runGoldenReplacing(t, "ls-incomplete", r, "ls", filepath.Join(dir, "checkpoints"), "--path-map", pathMap)
}

// TestLsPipesIntoVerify: each location ls -q prints is one inspect and
// verify take, as `stateutil ls ROOT -q | xargs -n1 stateutil verify`
// runs them; and the retained incremental checkpoints of the runtime's
// RocksDB job share files, counted once in the job as on disk.
func TestLsPipesIntoVerify(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"memory", "filesystem", "rocksdb"} {
		mustRun(t, "generate", "--format", f, "--keys", "60", "--output", filepath.Join(root, "savepoints", f))
	}
	mustRun(t, "run", "sessions", "--backend", "rocksdb", "--retain", "3", "--checkpoint-dir", filepath.Join(root, "checkpoints"),
		"--job-id", "job-1", "--records", "20000", "--checkpoint-every", "4000", "-p", "2", "-q")
	locations := strings.Fields(mustRun(t, "ls", root, "--depth", "3", "-q"))
	if len(locations) != 6 {
		t.Fatalf("ls -q printed %d locations, want 3 savepoints and 3 retained checkpoints: %q", len(locations), locations)
	}
	for _, loc := range locations {
		mustRun(t, "verify", loc)
		mustRun(t, "inspect", loc)
	}

	var l catalog.Listing
	if err := json.Unmarshal([]byte(mustRun(t, "ls", filepath.Join(root, "checkpoints"), "-o", "json")), &l); err != nil {
		t.Fatal(err)
	}
	files, bytes := 0, int64(0)
	filepath.WalkDir(filepath.Join(root, "checkpoints", "job-1"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			in, _ := d.Info()
			files++
			bytes += in.Size()
		}
		return err
	})
	if len(l.Jobs) != 1 || l.Jobs[0].Files != files || l.Jobs[0].Bytes != bytes || l.Jobs[0].Checkpoints != 3 || l.Jobs[0].Complete != 3 {
		t.Fatalf("jobs %+v; on disk %d files of %d bytes in 3 checkpoints", l.Jobs, files, bytes)
	}
	var sum int64
	for _, s := range l.Snapshots {
		sum += s.Bytes
		if s.SharedFiles == 0 || len(s.SharesWith) == 0 {
			t.Errorf("%s shares no files: %+v", s.Name, s)
		}
	}
	if j := l.Jobs[0]; j.SharedFiles == 0 || sum <= j.Bytes {
		t.Errorf("the checkpoints' sizes sum to %d, their job's files to %d, %d shared: shared files are not counted once in the job", sum, j.Bytes, j.SharedFiles)
	}
}
