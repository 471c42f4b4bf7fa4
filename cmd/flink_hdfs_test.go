package cmd

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// copyFromStorage copies the tree at uri into the local directory dst.
func copyFromStorage(t *testing.T, uri, dst string) {
	t.Helper()
	ctx := context.Background()
	st, root, err := formattest.Registry().Storage.Resolve(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(p string)
	walk = func(p string) {
		infos, err := st.List(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			rel := strings.TrimPrefix(info.Path, root)
			local := filepath.Join(dst, filepath.FromSlash(rel))
			if info.IsDir {
				if err := os.MkdirAll(local, 0o755); err != nil {
					t.Fatal(err)
				}
				walk(info.Path)
				continue
			}
			f, err := st.Open(ctx, info.Path)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(local, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	walk(root)
}

// sameBeyondLocation compares two outputs of one command line by line;
// lines may differ only by naming their own snapshot's location.
func sameBeyondLocation(t *testing.T, what, got, want, gotLoc, wantLoc string) {
	t.Helper()
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(gl) != len(wl) {
		t.Errorf("%s: %d lines from HDFS, %d from the local copy:\n%s", what, len(gl), len(wl), got)
		return
	}
	for i := range gl {
		if strings.ReplaceAll(gl[i], gotLoc, "LOC") != strings.ReplaceAll(wl[i], wantLoc, "LOC") {
			t.Errorf("%s: line %d differs:\n  hdfs:  %s\n  local: %s", what, i+1, gl[i], wl[i])
		}
	}
}

// TestFlinkOnHDFS: real Flink checkpoints and savepoints written to the
// test MiniDFSCluster through Flink's Hadoop file system read from their
// hdfs:// URIs (recorded absolute hdfs:// state paths, native RocksDB
// files downloaded through storage) exactly as from a local copy, in
// inspect, verify, dump and convert; and through hdfs:/// with the
// cluster as fs.defaultFS.
func TestFlinkOnHDFS(t *testing.T) {
	flinkharness.Require(t)
	base := formattest.HDFSDir(t)
	u, _ := splitHDFS(base)
	const version = "2.3.0"
	for _, c := range []struct {
		name string
		o    flinkharness.SnapshotOptions
	}{
		{"rocksdb-incremental-checkpoint", flinkharness.SnapshotOptions{Backend: "rocksdb", Kind: "checkpoint", Incremental: true}},
		{"hashmap-canonical-savepoint", flinkharness.SnapshotOptions{Backend: "hashmap", Kind: "canonical"}},
		{"rocksdb-native-savepoint", flinkharness.SnapshotOptions{Backend: "rocksdb", Kind: "native", Compression: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Job, o.Records, o.Dir = "basic", 3000, base+"/"+c.name
			o.Dump = filepath.Join(t.TempDir(), "dump.jsonl")
			remote, _, err := flinkharness.Snapshot(context.Background(), version, o)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(remote, "hdfs://") {
				t.Fatalf("Flink wrote to %q, not to HDFS", remote)
			}
			copyDir := filepath.Join(t.TempDir(), "copy")
			copyFromStorage(t, o.Dir, copyDir)
			local := filepath.Join(copyDir, filepath.FromSlash(strings.TrimPrefix(remote, o.Dir+"/")))
			pathMap := []string{"--path-map", o.Dir + "=" + copyDir}

			for _, view := range [][]string{{}, {"--subtasks"}, {"--operator-state", "--values"}, {"-o", "json"}} {
				got := mustRun(t, append([]string{"inspect", remote}, view...)...)
				want := mustRun(t, append(append([]string{"inspect", local}, pathMap...), view...)...)
				sameBeyondLocation(t, "inspect "+strings.Join(view, " "), got, want, remote, local)
			}
			mustRun(t, "verify", remote)
			gotDump := mustRun(t, "dump", remote, "--now", "0")
			if want := mustRun(t, append([]string{"dump", local, "--now", "0"}, pathMap...)...); gotDump != want {
				t.Errorf("dump from HDFS differs from the local copy's")
			}
			if strings.Count(gotDump, "\n") < 3000 {
				t.Errorf("dump has %d records", strings.Count(gotDump, "\n"))
			}

			out := t.TempDir()
			mustRun(t, "convert", remote, "--to", "filesystem", "--output", filepath.Join(out, "from-hdfs"))
			mustRun(t, append([]string{"convert", local, "--to", "filesystem", "--output", filepath.Join(out, "from-local")}, pathMap...)...)
			if a, b := mustRun(t, "dump", filepath.Join(out, "from-hdfs"), "--now", "0"), mustRun(t, "dump", filepath.Join(out, "from-local"), "--now", "0"); a != b || a != gotDump {
				t.Errorf("converted from HDFS and from the local copy differ (or differ from the Flink snapshot)")
			}

			// hdfs:/// resolves against fs.defaultFS.
			conf := t.TempDir()
			site := `<configuration><property><name>fs.defaultFS</name><value>hdfs://` + u + `</value></property></configuration>`
			if err := os.WriteFile(filepath.Join(conf, "core-site.xml"), []byte(site), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("HADOOP_CONF_DIR", conf)
			viaDefault := "hdfs:///" + strings.TrimPrefix(remote, "hdfs://"+u+"/")
			got := mustRun(t, "inspect", viaDefault)
			want := mustRun(t, "inspect", remote)
			sameBeyondLocation(t, "inspect hdfs:///", got, want, viaDefault, remote)
		})
	}
}

// splitHDFS splits hdfs://host:port/path into host:port and /path.
func splitHDFS(uri string) (string, string) {
	rest := strings.TrimPrefix(uri, "hdfs://")
	host, p, _ := strings.Cut(rest, "/")
	return host, path.Clean("/" + p)
}
