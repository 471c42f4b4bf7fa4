package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/runtime"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// objectStore is an object store the trials run on: its test server's
// fresh directories, the other schemes that name the same objects, the
// variable of its claims' TTL, and the flags that point it at an endpoint
// elsewhere.
type objectStore struct {
	name     string
	dir      func(testing.TB) string
	aliases  func(loc string) []string
	ttlVar   string
	endpoint func(addr string) []string
}

var objectStores = []objectStore{
	{"S3", formattest.S3Dir, func(loc string) []string {
		return []string{"s3a" + strings.TrimPrefix(loc, "s3"), "s3p" + strings.TrimPrefix(loc, "s3")}
	}, "STATEUTIL_S3_CLAIM_TTL", func(addr string) []string { return []string{"--s3-endpoint", "http://" + addr} }},
	{"GCS", formattest.GCSDir, func(string) []string { return nil },
		"STATEUTIL_GCS_CLAIM_TTL", func(addr string) []string { return []string{"--gcs-endpoint", "http://" + addr + "/storage/v1/"} }},
	{"Azure", formattest.AzureDir, func(loc string) []string {
		rest := strings.TrimPrefix(loc, "abfss://")
		return []string{"abfs://" + rest, "wasbs://" + strings.Replace(rest, ".dfs.", ".blob.", 1)}
	}, "STATEUTIL_AZURE_CLAIM_TTL", func(addr string) []string {
		return []string{"--azure-endpoint", "http://" + addr + "/devstoreaccount1"}
	}},
}

// onObjectStores runs fn as a subtest on each object store, with a fresh
// directory there, the stores side by side: each is a server of its own,
// so one store's requests are served while another's client computes.
func onObjectStores(t *testing.T, fn func(t *testing.T, o objectStore, remote string)) {
	for _, o := range objectStores {
		// The directory is made here, in the test that is not parallel:
		// making it keeps the machine's own setup of the store out of the
		// test, through t.Setenv, which a parallel test cannot call.
		remote := ""
		if os.Getenv("STATEUTIL_TEST_"+strings.ToUpper(o.name)) != "" {
			remote = o.dir(t)
		}
		t.Run(o.name, func(t *testing.T) {
			if remote == "" {
				o.dir(t) // skips, or fails where the store is required
			}
			t.Parallel()
			fn(t, o, remote)
		})
	}
}

// Snapshots move between local disk and each object store in every writable format,
// through convert and rescale, and come back entry for entry.
func TestObjectStoreConvertAndRescaleWithLocalDisk(t *testing.T) {
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		dir := t.TempDir()
		src := filepath.Join(dir, "src.dump")
		mustRun(t, "generate", "--output", src, "--keys", "2000", "--parallelism", "2")
		for _, f := range writableFormats() {
			up := remote + "/" + f
			mustRun(t, "convert", src, "--to", f, "--output", up, "--verify", "--quiet")
			if code, out, errOut := run(t, "verify", up); code != ExitOK {
				t.Fatalf("verify %s: %s%s", up, out, errOut)
			}
			rescaled := remote + "/" + f + "-p3"
			mustRun(t, "rescale", up, "--parallelism", "3", "--output", rescaled, "--quiet")
			down := filepath.Join(dir, f+"-back")
			mustRun(t, "convert", rescaled, "--to", f, "--output", down, "--quiet")
			sameState(t, src, down)
			if code, out, errOut := run(t, "diff", up, src); code != ExitOK {
				t.Fatalf("diff %s %s: exit %d: %s%s", up, src, code, out, errOut)
			}
		}
		// Flink's schemes name the same objects.
		for i, alias := range o.aliases(remote) {
			mustRun(t, "inspect", alias+"/"+writableFormats()[i%len(writableFormats())])
		}
		if left := remoteLeftovers(t, remote); len(left) > 0 {
			t.Errorf("left %v", left)
		}
	})
}

// And between HDFS and each object store, both ways, with a rescale on the way.
func TestObjectStoreConvertAndRescaleWithHDFS(t *testing.T) {
	// Made here, as the stores' directories are (onObjectStores).
	hdfsDirs := map[string]string{}
	for _, o := range objectStores {
		hdfsDirs[o.name] = formattest.HDFSDir(t)
	}
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		hdfs := hdfsDirs[o.name]
		src := filepath.Join(t.TempDir(), "src.dump")
		mustRun(t, "generate", "--output", src, "--keys", "1500")
		for _, f := range writableFormats() {
			onHDFS := hdfs + "/" + f
			mustRun(t, "convert", src, "--to", f, "--output", onHDFS, "--quiet")
			remote1 := remote + "/" + f + "-from-hdfs"
			mustRun(t, "rescale", onHDFS, "--parallelism", "3", "--output", remote1, "--quiet")
			back := hdfs + "/" + f + "-from-remote"
			mustRun(t, "convert", remote1, "--to", f, "--output", back, "--verify", "--quiet")
			sameState(t, src, back)
		}
	})
}

// Real Flink savepoints copied to an object store inspect as they do on
// local disk and convert from there, to the store and to local disk.
func TestObjectStoreFlinkSavepoint(t *testing.T) {
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		fixtures := filepath.Join("..", "..", "shared", "fixtures", "flink")
		if _, err := os.Stat(fixtures); err != nil {
			t.Skipf("no Flink fixtures at %s: %v", fixtures, err)
		}
		for i, name := range []string{
			"new-stateful-udf-migration-itcase-flink1.17-rocksdb-savepoint",
			"new-stateful-udf-migration-itcase-flink1.17-rocksdb-savepoint-native",
			"new-stateful-udf-migration-itcase-flink1.17-hashmap-savepoint",
		} {
			local := filepath.Join(fixtures, name)
			remote1 := remote + "/" + name
			copyTo(t, local, remote1)
			for _, view := range [][]string{{}, {"--key-groups"}, {"--operator-state"}} {
				want := mustRun(t, append([]string{"inspect", local}, view...)...)
				got := mustRun(t, append([]string{"inspect", remote1}, view...)...)
				if strings.ReplaceAll(got, remote1, "LOC") != strings.ReplaceAll(want, local, "LOC") {
					t.Errorf("inspect %v of %s differs on %s:\n%s\nlocally:\n%s", view, name, o.name, got, want)
				}
			}
			// One format each, store to store, and filesystem to local disk.
			f := writableFormats()[i%len(writableFormats())]
			out := remote + "/" + name + "-" + f
			mustRun(t, "convert", remote1, "--to", f, "--output", out, "--verify", "--quiet")
			sameState(t, local, out)
			down := filepath.Join(t.TempDir(), "down")
			mustRun(t, "convert", remote1, "--to", "filesystem", "--output", down, "--quiet")
			sameState(t, local, down)
		}
	})
}

// --path-map maps the absolute paths a Flink checkpoint records to an
// object store: the checkpoint's _metadata read from local disk, its state
// files from a copy there, verify and dump as with a local copy.
func TestObjectStorePathMap(t *testing.T) {
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		written := flinkWrittenDir(t, "1.20.5", "basic-rocksdb-checkpoint-incremental")
		moved := filepath.Join("..", "testdata", "flink", "1.20.5", "basic-rocksdb-checkpoint-incremental", "snapshot")
		copyTo(t, moved, remote+"/moved")
		chk := flinkSnapshot(t, "1.20.5", "basic-rocksdb-checkpoint-incremental")
		dump := []string{"dump", chk, "--now", "2026-01-01T00:00:00Z", "--path-map"}
		want := mustRun(t, append(dump, written+"="+moved)...)
		if n := strings.Count(want, "\n"); n < 100 {
			t.Fatalf("the local copy dumps %d lines, too few to compare", n)
		}
		for _, old := range []string{written, "file:" + written} {
			mapped := old + "=" + remote + "/moved"
			if got := mustRun(t, append(dump, mapped)...); got != want {
				t.Errorf("--path-map %s: dump differs from the local copy's:\n%s\nlocally:\n%s", mapped, got, want)
			}
			if code, out, errOut := run(t, "verify", chk, "--path-map", mapped); code != ExitOK {
				t.Errorf("verify --path-map %s: exit %d: %s%s", mapped, code, out, errOut)
			}
		}
		// Unmapped, the recorded paths do not exist: not found, never empty.
		if code, _, errOut := run(t, "dump", chk); code == ExitOK {
			t.Errorf("dump without --path-map: exit 0: %s", errOut)
		}
	})
}

// A Flink checkpoint on an object store records its state files by
// Flink's own URIs of the store (s3://, s3a://, gs://bucket/...,
// abfss://container@account.dfs.core.windows.net/...,
// wasbs://container@account.blob.core.windows.net/...), which resolve
// without --path-map: a real checkpoint's recorded paths, rewritten to each
// form of its copy on the store, dump and verify as the local copy does.
func TestObjectStoreFlinkRecordedURIs(t *testing.T) {
	written := flinkWrittenDir(t, "1.20.5", "basic-rocksdb-checkpoint-incremental")
	local := filepath.Join("..", "testdata", "flink", "1.20.5", "basic-rocksdb-checkpoint-incremental", "snapshot")
	chk := flinkSnapshot(t, "1.20.5", "basic-rocksdb-checkpoint-incremental")
	data, err := os.ReadFile(filepath.Join(chk, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	dump := []string{"dump", "--now", "2026-01-01T00:00:00Z"}
	want := mustRun(t, append(dump, chk, "--path-map", written+"="+local)...)
	if n := strings.Count(want, "\n"); n < 100 {
		t.Fatalf("the local copy dumps %d lines, too few to compare", n)
	}
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		copyTo(t, local, remote+"/snapshot")
		st, p, err := testReg.Storage.Resolve(context.Background(), remote)
		if err != nil {
			t.Fatal(err)
		}
		for i, form := range append([]string{remote}, o.aliases(remote)...) {
			m, err := metadata.ParseMetadata(data, chk)
			if err != nil {
				t.Fatal(err)
			}
			n := rewriteStatePaths(reflect.ValueOf(m), written, form+"/snapshot")
			if n < 2 {
				t.Fatalf("%d state paths under %s rewritten, want the checkpoint's", n, written)
			}
			t.Logf("%d state files recorded as %s/snapshot/...", n, form)
			// The CheckpointProperties Flink wrote follow the operators,
			// where the encoding of the checkpoint as read ends in null.
			m2, _ := metadata.ParseMetadata(data, chk)
			before, err := metadata.EncodeMetadata(m2, nil)
			ops, ok := bytes.CutSuffix(before, javaNullObject)
			if err != nil || !ok || !bytes.HasPrefix(data, ops) {
				t.Fatalf("the checkpoint does not encode back to its own bytes (%v)", err)
			}
			enc, err := metadata.EncodeMetadata(m, data[len(ops):])
			if err != nil {
				t.Fatal(err)
			}
			at := fmt.Sprintf("%s/chk-%d", remote, i)
			if err := st.MkdirAll(context.Background(), path.Join(p, fmt.Sprintf("chk-%d", i))); err != nil {
				t.Fatal(err)
			}
			if err := storage.WriteFile(context.Background(), st, path.Join(p, fmt.Sprintf("chk-%d", i), "_metadata"), enc); err != nil {
				t.Fatal(err)
			}
			if got := mustRun(t, append(dump, at)...); got != want {
				t.Errorf("dump of the checkpoint recording %s/...: differs from the local copy's:\n%s\nlocally:\n%s", form, got, want)
			}
			if code, out, errOut := run(t, "verify", at); code != ExitOK {
				t.Errorf("verify of the checkpoint recording %s/...: exit %d: %s%s", form, code, out, errOut)
			}
		}
	})
}

// javaNullObject is how Java serialization writes null: what
// metadata.EncodeMetadata puts where a checkpoint's properties go when it is
// given none.
var javaNullObject = []byte{0xac, 0xed, 0x00, 0x05, 0x70}

// rewriteStatePaths points the absolute file handles below v that start
// with old (as a path or a file: URI) to new, and counts them.
func rewriteStatePaths(v reflect.Value, old, new string) int {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return rewriteStatePaths(v.Elem(), old, new)
	case reflect.Struct:
		n := 0
		if h, ok := addrOf(v).(*metadata.StreamHandle); ok && (h.Type == metadata.HandleFile || h.Type == metadata.HandleSegmentFile) {
			for _, prefix := range []string{"file:" + old, old} {
				if rest, ok := strings.CutPrefix(h.Path, prefix); ok {
					h.Path = new + rest
					n++
					break
				}
			}
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += rewriteStatePaths(v.Field(i), old, new)
			}
		}
		return n
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0
		}
		n := 0
		for i := range v.Len() {
			n += rewriteStatePaths(v.Index(i), old, new)
		}
		return n
	case reflect.Map:
		n := 0
		for it := v.MapRange(); it.Next(); {
			n += rewriteStatePaths(it.Value(), old, new)
		}
		return n
	}
	return 0
}

func addrOf(v reflect.Value) any {
	if !v.CanAddr() {
		return nil
	}
	return v.Addr().Interface()
}

// The flink writer writes to each object store as to local disk: a real Flink savepoint
// rescaled to a new max parallelism, and a native one made canonical, each
// written there, verify there and dump equal to the same run written
// locally.
func TestObjectStoreFlinkWriter(t *testing.T) {
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		for _, tc := range []struct {
			entry string
			args  []string
		}{
			{"basic-hashmap-canonical", []string{"rescale", "--max-parallelism", "256", "--operator", "keyed=3"}},
			{"basic-rocksdb-native", []string{"convert", "--to", "flink"}},
		} {
			src := flinkSnapshot(t, "1.20.5", tc.entry)
			write := func(out string) {
				mustRun(t, append(append([]string{tc.args[0], src}, tc.args[1:]...), "--output", out, "--quiet")...)
			}
			local := filepath.Join(t.TempDir(), "out")
			remote1 := remote + "/" + tc.entry
			write(local)
			write(remote1)
			if code, out, errOut := run(t, "verify", remote1); code != ExitOK {
				t.Fatalf("verify %s: exit %d: %s%s", remote1, code, out, errOut)
			}
			dump := []string{"dump", "--now", "2026-01-01T00:00:00Z"}
			got, want := mustRun(t, append(dump, remote1)...), mustRun(t, append(dump, local)...)
			if n := strings.Count(want, "\n"); n < 100 {
				t.Fatalf("%s %s: the local result dumps %d lines, too few to compare", tc.args[0], tc.entry, n)
			}
			if got != want {
				t.Errorf("%s %s: dump on %s differs from the local result:\n%s\nlocally:\n%s", tc.args[0], tc.entry, o.name, got, want)
			}
		}
		if left := remoteLeftovers(t, remote); len(left) > 0 {
			t.Errorf("left %v", left)
		}
	})
}

// copyTo copies the files of a local directory tree to dst.
func copyTo(t *testing.T, dir, dst string) {
	t.Helper()
	st, p, err := testReg.Storage.Resolve(context.Background(), dst)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(file string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, file)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		to := path.Join(p, filepath.ToSlash(rel))
		if err := st.MkdirAll(context.Background(), path.Dir(to)); err != nil {
			return err
		}
		return storage.WriteFile(context.Background(), st, to, b)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// remoteLeftovers lists the names with storage.TempPrefix below loc.
func remoteLeftovers(t *testing.T, loc string) []string {
	t.Helper()
	st, p, err := testReg.Storage.Resolve(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := st.List(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name, storage.TempPrefix) {
				out = append(out, st.URI(e.Path))
			} else if e.IsDir {
				walk(e.Path)
			}
		}
	}
	walk(p)
	return out
}

// A convert to an object store killed mid-write leaves no DST a reader accepts; once
// the killed writer's claim is stale the same convert succeeds and leaves
// nothing of the killed one.
func TestObjectStoreKilledConvertLeavesNothing(t *testing.T) {
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		dir := t.TempDir()
		src := filepath.Join(dir, "src.dump")
		mustRun(t, "generate", "--output", src, "--keys", "3000")
		for _, f := range writableFormats() {
			dst := remote + "/" + f
			args := []string{"convert", src, "--to", f, "--output", dst}
			ready := filepath.Join(dir, "ready-"+f)
			c := exec.Command(os.Args[0], "-test.run=^$")
			c.Env = append(os.Environ(), crashEnv+"="+strings.Join(args, "\x1f"), crashEnv+"_READY="+ready,
				"TMPDIR="+t.TempDir(), o.ttlVar+"=1s")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(time.Minute)
			for !exists(ready) {
				if time.Now().After(deadline) {
					c.Process.Kill()
					t.Fatalf("%v: child never got to write", args)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := c.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var exit *exec.ExitError
			if err := c.Wait(); !errors.As(err, &exit) {
				t.Fatalf("%v: child was not killed: %v", args, err)
			}
			st, p, _ := testReg.Storage.Resolve(context.Background(), dst)
			if _, err := st.Stat(context.Background(), path.Join(p, "_metadata")); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("%s: _metadata after the writer was killed: %v", dst, err)
			}
			if code, out, _ := run(t, "verify", dst); code == ExitOK {
				t.Fatalf("%v: verify accepts what a killed write left:\n%s", args, out)
			}
			if r, err := testReg.Open(context.Background(), dst, snapshot.OpenOptions{}); err == nil {
				r.Close()
				t.Fatalf("%s opens after the writer was killed", dst)
			}
			// The killed writer's claim holds DST until it is stale.
			for {
				code, _, errOut := run(t, append(args, "--quiet")...)
				if code == ExitOK {
					break
				}
				if !strings.Contains(errOut, "in use") || time.Now().After(deadline) {
					t.Fatalf("%v run again: exit %d: %s", args, code, errOut)
				}
				time.Sleep(250 * time.Millisecond)
			}
			sameState(t, src, dst)
		}
		if left := remoteLeftovers(t, remote); len(left) > 0 {
			t.Errorf("left %v", left)
		}
	})
}

// Two converts race for one DST on an object store: while the first writes, the second
// is refused as in use; after it, a third is refused because DST exists.
// Exactly one snapshot is committed there: the first's.
func TestObjectStoreRacingConverts(t *testing.T) {
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		dir := t.TempDir()
		src := filepath.Join(dir, "src.dump")
		mustRun(t, "generate", "--output", src, "--keys", "2000")
		for i, to := range []string{"memory", "filesystem", "rocksdb"} {
			dst := fmt.Sprintf("%s/dst-%d", remote, i)
			raceConverts(t, src, dst, to, filepath.Join(dir, fmt.Sprintf("pause-%d", i)))
		}
		if left := remoteLeftovers(t, remote); len(left) > 0 {
			t.Errorf("left %v", left)
		}
	})
}

// --force over a snapshot of another format stages the new one beside DST
// and moves it in; on an object store the move is a server-side copy. DST then holds the
// new snapshot alone.
func TestObjectStoreForceReplacesAcrossFormats(t *testing.T) {
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		src := filepath.Join(t.TempDir(), "src.dump")
		mustRun(t, "generate", "--output", src, "--keys", "800")
		for _, pair := range [][2]string{{"filesystem", "rocksdb"}, {"rocksdb", "filesystem"}, {"memory", "filesystem"}} {
			dst := remote + "/" + pair[0] + "-then-" + pair[1]
			mustRun(t, "convert", src, "--to", pair[0], "--output", dst, "--quiet")
			if code, _, errOut := run(t, "convert", src, "--to", pair[1], "--output", dst, "--quiet"); code != ExitUsage || !strings.Contains(errOut, "--force") {
				t.Fatalf("convert over an existing snapshot without --force: exit %d: %s", code, errOut)
			}
			mustRun(t, "convert", src, "--to", pair[1], "--output", dst, "--force", "--quiet")
			r, err := testReg.Open(context.Background(), dst, snapshot.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Snapshot().Format; got != pair[1] {
				t.Errorf("%s over %s reads as %s", pair[1], pair[0], got)
			}
			r.Close()
			sameState(t, src, dst)
		}
		if left := remoteLeftovers(t, remote); len(left) > 0 {
			t.Errorf("left %v", left)
		}
	})
}

// A run checkpointing to an object store is killed (SIGKILL) at its first progress
// report after a checkpoint is complete there. Every checkpoint the job
// directory shows as complete verifies, and the run restored from the job
// directory ends with the state of a run never killed.
func TestObjectStoreRunKilledRestores(t *testing.T) {
	recordsOf := map[string]string{"rocksdb": "300000", "filesystem": "3000000", "memory": "3000000"}
	// What a run never killed ends with depends on the records alone: one
	// run per count serves every backend and store.
	unkilled := map[string]runtime.Result{}
	for _, records := range recordsOf {
		if _, ok := unkilled[records]; !ok {
			unkilled[records] = runResult(t, "run", "wordcount", "--records", records, "--partitions", "3", "-p", "2")
		}
	}
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		for _, backend := range []string{"rocksdb", "filesystem", "memory"} {
			chk := remote + "/" + backend
			jobDir := chk + "/job"
			records := recordsOf[backend]
			every := map[string]string{"rocksdb": "40000", "filesystem": "400000", "memory": "400000"}[backend]
			args := []string{"run", "wordcount", "--backend", backend, "--records", records, "--partitions", "3", "-p", "2",
				"--checkpoint-every", every, "--checkpoint-dir", chk, "--job-id", "job", "--retain", "3", "--quiet"}
			code, errOut := childWithEnv(t, []string{killAfterCheckpointEnv + "=" + jobDir}, t.TempDir(), 0, args...)
			if code != -1 {
				t.Fatalf("%v: exit %d, want killed after its first checkpoint: %s", args, code, errOut)
			}
			st, p, err := testReg.Storage.Resolve(context.Background(), jobDir)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := st.List(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			var complete, partial []string
			for _, e := range entries {
				loc := jobDir + "/" + e.Name
				if !strings.HasPrefix(e.Name, "chk-") {
					continue
				}
				if e.IsDir && !existsAt(t, loc+"/_metadata") {
					partial = append(partial, e.Name)
					continue
				}
				complete = append(complete, e.Name)
				if code, out, errOut := run(t, "verify", loc); code != ExitOK {
					t.Errorf("%s, complete on %s after the kill, does not verify: %s%s", loc, o.name, out, errOut)
				}
			}
			if len(complete) == 0 {
				t.Fatalf("%s: no complete checkpoint after the kill: %v", jobDir, entries)
			}
			t.Logf("%s: killed with checkpoints %v complete, %v without _metadata", backend, complete, partial)
			want := unkilled[records]
			got := runResult(t, append(args[:len(args)-1], "--restore", jobDir, "-p", "3")...)
			if !strings.HasPrefix(got.RestoredFrom, jobDir+"/chk-") {
				t.Errorf("%s: restored from %q, want a checkpoint in %s", backend, got.RestoredFrom, jobDir)
			}
			if got.StateDigest != want.StateDigest || got.StateEntries != want.StateEntries {
				t.Errorf("%s: restored run ends with %d entries, digest %s; a run never killed with %d, %s",
					backend, got.StateEntries, got.StateDigest, want.StateEntries, want.StateDigest)
			}
			if got.Records <= 0 || strconv.FormatInt(got.Records, 10) == records {
				t.Errorf("%s: restored run read %d records of %s, want the rest after its checkpoint", backend, got.Records, records)
			}
		}
	})
}

// On an object store as on disk: a location with nothing there exits 3 naming it, and
// an endpoint that is down is "storage unavailable", naming the location
// (exit 2, as every failed read).
func TestObjectStoreExitCodes(t *testing.T) {
	onObjectStores(t, func(t *testing.T, o objectStore, remote string) {
		missing := remote + "/no-such-snapshot"
		if code, _, errOut := run(t, "inspect", missing); code != ExitNotFound || !strings.Contains(errOut, missing) {
			t.Errorf("inspect %s: exit %d: %s; want %d naming it", missing, code, errOut, ExitNotFound)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := ln.Addr().String()
		ln.Close()
		code, _, errOut := run(t, append(o.endpoint(down), "inspect", missing)...)
		if code != ExitCorrupt || !strings.Contains(errOut, "storage unavailable") || !strings.Contains(errOut, missing) {
			t.Errorf("inspect %s with the endpoint %s down: exit %d: %s; want %d, storage unavailable naming it", missing, down, code, errOut, ExitCorrupt)
		}
	})
}
