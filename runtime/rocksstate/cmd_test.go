package rocksstate_test

import (
	"bytes"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/cmd"
	"github.com/stateutil/stateutil/runtime/rocksstate"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/storage"
)

// A corrupt, truncated or missing shared SST of an incremental checkpoint
// through `stateutil inspect`, `inspect --key-groups` and `verify`: one
// clear line naming the file, and the documented exit code (2 corrupt;
// missing: 3 "not found" where the command stops at the error, 2 from
// verify, whose findings all exit 2).
func TestDamagedSSTThroughCommands(t *testing.T) {
	t.Run("local", func(t *testing.T) { damagedSST(t, filepath.Join(t.TempDir(), "root")) })
	t.Run("hdfs", func(t *testing.T) { damagedSST(t, formattest.HDFSDir(t)) })
}

func damagedSST(t *testing.T, root string) {
	op := crashOperator()
	b, err := rocksstate.NewIncremental(rocksstate.IncrementalOptions{LocalDir: t.TempDir(), Storage: testReg.Storage})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := putGeneration(b, op, 1); err != nil {
		t.Fatal(err)
	}
	res, err := b.Checkpoint(ctx, root, crashJob, 1)
	if err != nil {
		t.Fatal(err)
	}
	loc := res.Location
	st, p, err := testReg.Storage.Resolve(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := rocksstate.LoadRegistry(ctx, st, path.Join(p, crashJob))
	if err != nil {
		t.Fatal(err)
	}
	ssts := reg.Files()
	if len(ssts) == 0 {
		t.Fatal("no shared SST")
	}
	sst := ssts[0]
	name := path.Base(sst)
	orig, err := storage.ReadAll(ctx, st, sst, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	put := func(data []byte) {
		t.Helper()
		if err := storage.WriteFile(ctx, st, sst, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"inspect", loc}, {"inspect", "--key-groups", loc}, {"verify", loc}} {
		var out, errOut bytes.Buffer
		if code := cmd.Run(ctx, args, &out, &errOut); code != cmd.ExitOK {
			t.Fatalf("undamaged: stateutil %v: exit %d: %s", args, code, errOut.String())
		}
	}

	flipped := slices.Clone(orig)
	flipped[len(flipped)/2] ^= 0xff
	for _, damage := range []struct {
		name string
		do   func()
		// want is the exit code of inspect, inspect --key-groups and verify.
		want [3]int
	}{
		{"flipped byte", func() { put(flipped) }, [3]int{cmd.ExitCorrupt, cmd.ExitCorrupt, cmd.ExitCorrupt}},
		{"truncated", func() { put(orig[:len(orig)-10]) }, [3]int{cmd.ExitCorrupt, cmd.ExitCorrupt, cmd.ExitCorrupt}},
		{"missing", func() {
			if err := st.Remove(ctx, sst); err != nil {
				t.Fatal(err)
			}
		}, [3]int{cmd.ExitNotFound, cmd.ExitNotFound, cmd.ExitCorrupt}},
	} {
		damage.do()
		for i, args := range [][]string{{"inspect", loc}, {"inspect", "--key-groups", loc}, {"verify", loc}} {
			var out, errOut bytes.Buffer
			code := cmd.Run(ctx, args, &out, &errOut)
			msg := out.String() + errOut.String()
			t.Logf("%s: stateutil %s: exit %d: %s", damage.name, strings.Join(args[:len(args)-1], " "), code, lastLine(msg))
			if code != damage.want[i] {
				t.Errorf("%s: stateutil %v: exit %d, want %d", damage.name, args, code, damage.want[i])
			}
			if !strings.Contains(msg, name) {
				t.Errorf("%s: stateutil %v does not name %s: %s", damage.name, args, name, msg)
			}
			if errOut.Len() > 0 && strings.Count(strings.TrimSpace(errOut.String()), "\n") > 0 {
				t.Errorf("%s: stateutil %v: more than one line on stderr: %q", damage.name, args, errOut.String())
			}
		}
		put(orig)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
