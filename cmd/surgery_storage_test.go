package cmd

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// surgeryEdit is one surgery command without its source and --output:
// args[:split] come before the source, args[split:] after it.
type surgeryEdit struct {
	args  []string
	split int
}

func (e surgeryEdit) on(src, dst string) []string {
	out := append([]string{}, e.args[:e.split]...)
	out = append(out, src)
	out = append(out, e.args[e.split:]...)
	return append(out, "--output", dst)
}

var exampleEdits = map[string]surgeryEdit{
	"keys-delete":  {[]string{"keys", "delete", "--operator", "word-counter", "--key", "word-10", "--key", "word-18"}, 2},
	"put":          {[]string{"put", "--operator", "word-counter", "--state", "recent", "--key", "word-10", "--value", "[5]", "--now", "2026-01-02T04:00:00Z"}, 1},
	"load":         {[]string{"load", "--from", exampleEditsFile, "--now", "2026-01-02T04:00:00Z"}, 1},
	"state-drop":   {[]string{"state", "drop", "--operator", "word-counter", "--state", "recent"}, 2},
	"state-rename": {[]string{"state", "rename", "--operator", "kafka-source", "--state", "partition-offsets", "--to", "offsets"}, 2},
}

// remoteTreeHash hashes every file's path and bytes below loc, on any
// storage.
func remoteTreeHash(t *testing.T, loc string) string {
	t.Helper()
	ctx := context.Background()
	st, root, err := testReg.Storage.Resolve(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := st.List(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir {
				walk(e.Path)
			} else {
				files = append(files, e.Path)
			}
		}
	}
	walk(root)
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := storage.ReadAll(ctx, st, f, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", strings.TrimPrefix(f, root), len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Every surgery command reads its source from, and commits its output to,
// HDFS and the object stores as it does on local disk: the remote output holds the same
// state as the same edit made locally, the remote source is unchanged byte
// for byte, and no temporary name is left behind.
func TestSurgeryOnHDFSAndObjectStores(t *testing.T) {
	remotes := map[string]func(testing.TB) string{"hdfs": formattest.HDFSDir, "s3": formattest.S3Dir, "gcs": formattest.GCSDir, "azure": formattest.AzureDir}
	// What each edit makes on local disk, once for every storage.
	local := t.TempDir()
	for editName, e := range exampleEdits {
		mustRun(t, append(e.on(example, filepath.Join(local, editName)), "--quiet")...)
	}
	flinkEdit := surgeryEdit{[]string{"keys", "delete", "--operator", "keyed", "--key", "user-0", "--key", "user-7"}, 2}
	mustRun(t, append(flinkEdit.on(flinkBasic, filepath.Join(local, "flink")), "--quiet")...)
	for name, dir := range remotes {
		// As in onObjectStores: the directory is made before the
		// subtest, which runs beside the others.
		remote := ""
		if os.Getenv("STATEUTIL_TEST_"+strings.ToUpper(name)) != "" {
			remote = dir(t)
		}
		t.Run(name, func(t *testing.T) {
			if remote == "" {
				dir(t) // skips, or fails where the storage is required
			}
			t.Parallel()
			srcs := map[string]string{}
			for _, f := range []string{"filesystem", "rocksdb"} {
				srcs[f] = remote + "/src-" + f
				mustRun(t, "convert", example, "--to", f, "--output", srcs[f], "--quiet")
			}
			flinkSrc := remote + "/flink-src"
			copyTo(t, flinkBasic, flinkSrc)
			before := map[string]string{}
			for f, s := range srcs {
				before[f] = remoteTreeHash(t, s)
			}
			before["flink"] = remoteTreeHash(t, flinkSrc)

			for editName, e := range exampleEdits {
				want := filepath.Join(local, editName)
				for f, src := range srcs {
					dst := fmt.Sprintf("%s/%s-%s", remote, editName, f)
					mustRun(t, append(e.on(src, dst), "--verify", "--quiet")...)
					sameState(t, want, dst)
				}
			}
			want := filepath.Join(local, "flink")
			dst := remote + "/flink-edited"
			mustRun(t, append(flinkEdit.on(flinkSrc, dst), "--verify", "--quiet")...)
			sameState(t, want, dst)
			if code, out, errOut := run(t, "diff", "--entries", "--values", want, dst); code != ExitOK {
				t.Fatalf("diff of the local and the %s edit: exit %d: %s%s", name, code, out, errOut)
			}

			for f, s := range srcs {
				if remoteTreeHash(t, s) != before[f] {
					t.Errorf("the edits changed their source %s", s)
				}
			}
			if remoteTreeHash(t, flinkSrc) != before["flink"] {
				t.Errorf("the edit changed its source %s", flinkSrc)
			}
			if left := remoteLeftovers(t, remote); len(left) > 0 {
				t.Errorf("left %v", left)
			}
		})
	}
}

// Ctrl-C at a random progress report of a surgery command either lets it
// complete, with exactly the edit, or stops it with exit 130 and no DST;
// nothing is left in TMPDIR or beside DST, and the source is untouched.
func TestInterruptedSurgeryLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	srcs := map[string]string{}
	for _, f := range []string{"filesystem", "rocksdb"} {
		srcs[f] = filepath.Join(dir, "src-"+f)
		mustRun(t, "convert", example, "--to", f, "--output", srcs[f], "--quiet")
	}
	sums := map[string]string{}
	for f, s := range srcs {
		sums[f] = hashTree(t, s)
	}
	names := make([]string, 0, len(exampleEdits))
	for n := range exampleEdits {
		names = append(names, n)
	}
	sort.Strings(names)
	rng := rand.New(rand.NewPCG(3, 5))
	counts := map[string]int{}
	for i := range 24 {
		editName := names[i%len(names)]
		format := []string{"filesystem", "rocksdb"}[(i/len(names))%2]
		e := exampleEdits[editName]
		want := filepath.Join(dir, "want-"+editName+"-"+format)
		if _, err := os.Stat(want); err != nil {
			mustRun(t, append(e.on(srcs[format], want), "--quiet")...)
		}
		reports := progressReports(t, e.on(srcs[format], filepath.Join(dir, fmt.Sprintf("count-%d", i)))...)
		trialDir := filepath.Join(dir, fmt.Sprintf("t%d", i))
		tmp := filepath.Join(trialDir, "tmp")
		os.MkdirAll(tmp, 0o755)
		dst := filepath.Join(trialDir, "dst")
		args := e.on(srcs[format], dst)
		at := 1 + rng.IntN(max(1, reports))
		code, errOut := child(t, tmp, at, append(args, "--quiet")...)
		switch code {
		case ExitInterrupted:
			counts["interrupted"]++
			if exists(dst) {
				t.Errorf("%v interrupted at report %d of %d left %s", args, at, reports, dst)
			}
		case ExitOK:
			counts["completed"]++
			sameState(t, want, dst)
		default:
			t.Fatalf("%v interrupted at report %d: exit %d: %s", args, at, code, errOut)
		}
		if left := emptyDir(t, tmp); len(left) > 0 {
			t.Errorf("%v interrupted at report %d left in TMPDIR: %v", args, at, left)
		}
		if left := leftovers(t, trialDir); len(left) > 0 {
			t.Errorf("%v interrupted at report %d left %v", args, at, left)
		}
	}
	for f, s := range srcs {
		if hashTree(t, s) != sums[f] {
			t.Errorf("source %s changed", s)
		}
	}
	t.Logf("outcomes: %v", counts)
	if counts["interrupted"] < 12 {
		t.Errorf("fewer than 12 of 24 trials were interrupted: %v", counts)
	}
}
