package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// changelogWitness is the checked-in changelog checkpoint of a SQL witness
// job (Flink 2.3.0), not yet materialized, so recording no key serializer:
// its snapshot and the --path-map it needs; and the job's canonical
// savepoint, which records them.
func changelogWitness(t *testing.T, job string) (snap, pathMap, savepoint string) {
	t.Helper()
	dir, m := corpusManifest(t, "flink-witness", "2.3.0", job+"-hashmap-checkpoint-changelog")
	sdir, sm := corpusManifest(t, "flink-witness", "2.3.0", job+"-hashmap-canonical")
	return filepath.Join(dir, "snapshot", m.SnapshotSubpath), m.OriginalDir + "=" + filepath.Join(dir, "snapshot"), filepath.Join(sdir, "snapshot", sm.SnapshotSubpath)
}

// otherJobsSavepoint is the checked-in savepoint of the CEP witness job
// (Flink 2.3.0), whose operators are none of the SQL jobs'.
func otherJobsSavepoint(t *testing.T) string {
	t.Helper()
	dir, m := corpusManifest(t, "flink-witness", "2.3.0", "cep-hashmap-canonical")
	return filepath.Join(dir, "snapshot", m.SnapshotSubpath)
}

// The golden output of --key-serializers-from on the SQL witness jobs'
// changelog checkpoints: with their savepoint, dump decodes the keys, and
// rescale and convert write savepoints; without, the keys are not
// decoded, verify and inspect say which operators' and how to read them,
// and convert refuses to write (exit 4) what no key serializer names; a
// savepoint of another job is refused (exit 1), for a read and a copy.
func TestGoldenKeySerializersFrom(t *testing.T) {
	snap, pm, sp := changelogWitness(t, "sqlops")
	batch, batchPM, batchSP := changelogWitness(t, "sqlbatch")
	other := otherJobsSavepoint(t)
	dir := t.TempDir()
	cases := map[string][]string{
		"flink-key-serializers-dump":             {"dump", snap, "--path-map", pm, "--operator", "17_group-aggregate", "--key-serializers-from", sp},
		"flink-key-serializers-dump-withheld":    {"dump", snap, "--path-map", pm, "--operator", "17_group-aggregate"},
		"flink-key-serializers-verify":           {"verify", snap, "--path-map", pm, "--key-serializers-from", sp},
		"flink-key-serializers-verify-withheld":  {"verify", snap, "--path-map", pm},
		"flink-key-serializers-inspect-withheld": {"inspect", snap, "--path-map", pm},
		"flink-key-serializers-other-job":        {"dump", snap, "--path-map", pm, "--key-serializers-from", other},
		"flink-key-serializers-rescale": {"rescale", batch, "--path-map", batchPM, "--parallelism", "3", "--key-serializers-from", batchSP,
			"--output", filepath.Join(dir, "rescaled")},
		"flink-key-serializers-convert": {"convert", snap, "--path-map", pm, "--to", "flink", "--key-serializers-from", sp,
			"--output", filepath.Join(dir, "converted"), "--verify"},
		"flink-key-serializers-convert-withheld": {"convert", snap, "--path-map", pm, "--to", "flink", "--output", filepath.Join(dir, "withheld")},
		"flink-key-serializers-rescale-other-job": {"rescale", batch, "--path-map", batchPM, "--parallelism", "3", "--key-serializers-from", other,
			"--output", filepath.Join(dir, "other")},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGoldenReplacing(t, name, strings.NewReplacer(dir, "TMP").Replace, args...) })
	}
}

// --key-serializers-from is refused, exit 1, naming the operator and the
// files, wherever the snapshot it names cannot give an operator's key
// serializer or gives one its keys do not fit: made from the witness
// job's own savepoint, one without an operator, and one whose two
// group aggregations' IDs are swapped (so that each holds the other's key
// serializer, of another field type); the checkpoint itself, which records
// none; what is no Flink snapshot. The reads refuse it, and so do the
// copies, before they write anything.
func TestKeySerializersFromRefused(t *testing.T) {
	snap, pm, sp := changelogWitness(t, "sqlops")
	dir := t.TempDir()
	removed := filepath.Join(dir, "removed")
	mustRun(t, "operator", "remove", sp, "--operator", "26_upsert-materialize", "--output", removed)
	// 17_group-aggregate keys by a VARCHAR, 20_group-aggregate by an INT.
	const id17, id20, spare = "0dd8c8254f68d9a62f1363ec4cea9218", "91133bb04ad20439a6f1a70d119a37a1", "00000000000000000000000000000001"
	swapped := filepath.Join(dir, "swapped")
	mustRun(t, "operator", "set-uid-hash", sp, "--operator", id20, "--to", spare, "--output", filepath.Join(dir, "s1"))
	mustRun(t, "operator", "set-uid-hash", filepath.Join(dir, "s1"), "--operator", id17, "--to", id20, "--output", filepath.Join(dir, "s2"))
	mustRun(t, "operator", "set-uid-hash", filepath.Join(dir, "s2"), "--operator", spare, "--to", id17, "--output", swapped)
	checkpoint := filepath.Join(snap, "_metadata")
	cases := map[string]struct {
		from string
		says []string
	}{
		"operator missing": {removed, []string{checkpoint, filepath.Join(removed, "_metadata"), `(uid "26_upsert-materialize"`, "has no operator of that ID"}},
		"keys do not fit": {swapped, []string{checkpoint, filepath.Join(swapped, "_metadata"), "flink:rowdata of (VarCharType), does not fit its keys", `(uid "20_group-aggregate"`,
			"/dstl/", "key group", "the key is not of its type"}},
		"records none":   {snap, []string{checkpoint, "records none for it either"}},
		"not a snapshot": {filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(snap))), "dump.jsonl"), []string{"dump.jsonl", "not a Flink checkpoint or savepoint"}},
		"nothing there":  {filepath.Join(dir, "none"), []string{filepath.Join(dir, "none"), "no such file or directory"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "copy")
			for _, args := range [][]string{
				{"dump", snap, "--path-map", pm, "--key-serializers-from", c.from},
				{"verify", snap, "--path-map", pm, "--key-serializers-from", c.from},
				{"rescale", snap, "--path-map", pm, "--key-serializers-from", c.from, "--parallelism", "3", "--output", out},
				{"convert", snap, "--path-map", pm, "--key-serializers-from", c.from, "--to", "flink", "--output", out},
				{"rescale", snap, "--path-map", pm, "--key-serializers-from", c.from, "--parallelism", "3", "--output", out, "--plan-only", out + ".plan"},
			} {
				code, stdout, errOut := run(t, args...)
				if code != ExitUsage || stdout != "" || strings.Count(errOut, "\n") != 1 {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr", args[0], code, stdout, errOut, ExitUsage)
				}
				for _, s := range c.says {
					if !strings.Contains(errOut, s) {
						t.Errorf("%s: %s does not say %q", args[0], errOut, s)
					}
				}
				for _, p := range []string{out, out + ".plan"} {
					if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%s refused, and %s is there (%v)", args[0], p, err)
					}
				}
			}
		})
	}
}

// put takes the key by the key serializers of the job's savepoint, and the
// savepoint it writes records them: get reads the key back without the
// flag, and verify finds nothing wrong. Without them, the key cannot be
// written.
func TestPutWithKeySerializersFrom(t *testing.T) {
	snap, pm, sp := changelogWitness(t, "sqlops")
	out := filepath.Join(t.TempDir(), "put")
	put := []string{"put", snap, "--path-map", pm, "--operator", "17_group-aggregate", "--state", "accState", "--key", `["k1"]`,
		"--value", `[{"lastOrder":-9223372036854775808,"lastValue":1},1]`, "--output", out}
	if code, _, errOut := run(t, put...); code != ExitUsage || !strings.Contains(errOut, `["k1"] is not a flink:rowdata`) {
		t.Errorf("put without the key serializers: exit %d, %s; want %d, the key refused", code, errOut, ExitUsage)
	}
	mustRun(t, append(put, "--key-serializers-from", sp)...)
	got := mustRun(t, "get", out, "--operator", "17_group-aggregate", "--state", "accState", "--key", `["k1"]`, "-o", "json")
	var rec struct{ Key, Value json.RawMessage }
	if err := json.Unmarshal([]byte(got), &rec); err != nil {
		t.Fatal(err)
	}
	if !sameJSONText(t, string(rec.Key), `["k1"]`) || !sameJSONText(t, string(rec.Value), `[{"lastOrder":-9223372036854775808,"lastValue":1},1]`) {
		t.Errorf("get of what put wrote: %s", got)
	}
	if v := mustRun(t, "verify", out); !strings.Contains(v, "OK: no problems found") || strings.Contains(v, "Not decoded") {
		t.Errorf("verify of what put wrote:\n%s", v)
	}
}

// dumped is what `stateutil dump args...` prints, a line a keyed entry,
// without the fields named in without (where a copy puts an entry: its
// subtask, its key group), sorted: the same for two snapshots that hold
// the same entries.
func dumped(t *testing.T, without []string, args ...string) []string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(mustRun(t, append([]string{"dump"}, args...)...)), "\n") {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("dump %v: %v: %s", args, err, l)
		}
		for _, f := range without {
			if _, ok := rec[f]; !ok {
				t.Fatalf("dump %v: no %q in %s", args, f, l)
			}
			delete(rec, f)
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	slices.Sort(lines)
	return lines
}

// keyTypes are the key types of every keyed state of the snapshot at
// location, by operator ID and state.
func keyTypes(t *testing.T, location string) map[string]snapshot.Type {
	t.Helper()
	r, err := testReg.Open(context.Background(), location, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]snapshot.Type{}
	for _, op := range r.Snapshot().Operators {
		for _, ks := range op.KeyedStates {
			out[op.ID+" "+ks.Name] = ks.KeyType
		}
	}
	return out
}

// What rescale and convert write of a changelog checkpoint with
// --key-serializers-from holds the checkpoint's entries, keys and all, as
// dump reads them with the flag (their key groups too, but where the
// max parallelism changes), and records the key serializers taken, byte
// for byte the savepoint's: read without the flag, its keys decode and
// verify finds nothing wrong and nothing not decoded. For both SQL witness
// jobs, at several parallelisms, and with every key hashed again.
func TestCopiesWithKeySerializersFromKeepTheKeys(t *testing.T) {
	for _, job := range []string{"sqlops", "sqlbatch"} {
		snap, pm, sp := changelogWitness(t, job)
		from := []string{"--path-map", pm, "--key-serializers-from", sp}
		want := keyTypes(t, sp)
		dir := t.TempDir()
		copies := map[string]struct {
			args    []string
			without []string
		}{
			"convert":            {[]string{"convert", "--to", "flink"}, []string{"subtask"}},
			"rescale 1":          {[]string{"rescale", "--parallelism", "1"}, []string{"subtask"}},
			"rescale 3":          {[]string{"rescale", "--parallelism", "3"}, []string{"subtask"}},
			"rescale 5 rehashed": {[]string{"rescale", "--parallelism", "5", "--max-parallelism", "256"}, []string{"subtask", "key_group"}},
		}
		// The checkpoint's dump, once for each set of fields left out.
		srcDumps := map[string][]string{}
		for _, c := range copies {
			if key := strings.Join(c.without, " "); srcDumps[key] == nil {
				srcDumps[key] = dumped(t, c.without, append([]string{snap}, from...)...)
			}
		}
		for name, c := range copies {
			t.Run(job+" "+name, func(t *testing.T) {
				// Each writes a copy of its own.
				t.Parallel()
				out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
				args := append([]string{c.args[0], snap}, c.args[1:]...)
				mustRun(t, append(append(args, from...), "--output", out, "-q")...)
				if got, src := dumped(t, c.without, out), srcDumps[strings.Join(c.without, " ")]; !slices.Equal(got, src) {
					t.Errorf("the copy holds %d entries, the checkpoint %d; they differ:\n%s", len(got), len(src), firstDifference(got, src))
				}
				keyed := 0
				for k, kt := range keyTypes(t, out) {
					w, ok := want[k]
					if !ok {
						t.Errorf("%s: a keyed state the savepoint does not have", k)
						continue
					}
					keyed++
					if kt.Name != w.Name || string(kt.SerializerSnapshot) != string(w.SerializerSnapshot) {
						t.Errorf("%s: key type %s, the savepoint's %s", k, kt, w)
					}
				}
				if keyed == 0 {
					t.Error("no keyed state compared")
				}
				if v := mustRun(t, "verify", out); !strings.Contains(v, "OK: no problems found") || strings.Contains(v, "Not decoded") || strings.Contains(v, "records no key serializer") {
					t.Errorf("verify of the copy:\n%s", v)
				}
			})
		}
	}
}

// firstDifference is the first line only one of a and b (sorted) has.
func firstDifference(a, b []string) string {
	for _, l := range a {
		if !slices.Contains(b, l) {
			return "only in the copy: " + l
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			return "only in the checkpoint: " + l
		}
	}
	return "(the same lines, other counts)"
}

// A copy planned for shards records --key-serializers-from in its plan:
// the shards and the commit read the checkpoint's keys by it, and write
// what one process writes; the plan says so. A sharded put takes its key
// by it too.
func TestShardedCopiesWithKeySerializersFrom(t *testing.T) {
	snap, pm, sp := changelogWitness(t, "sqlops")
	dir := t.TempDir()
	single, sharded, plan := filepath.Join(dir, "single"), filepath.Join(dir, "sharded"), filepath.Join(dir, "plan.json")
	args := []string{"rescale", snap, "--path-map", pm, "--key-serializers-from", sp, "--parallelism", "3", "-q"}
	mustRun(t, append(args, "--output", single)...)
	if out := mustRun(t, append(args, "--output", sharded, "--plan-only", plan, "--shards", "2")...); !strings.Contains(out, "read the source's keys by the key serializers of "+sp) {
		t.Errorf("the plan's summary does not name the key serializers' snapshot:\n%s", out)
	}
	mustRunQuiet(t, "shard", plan, "--shard", "1/2")
	mustRunQuiet(t, "shard", plan, "--shard", "2/2")
	mustRunQuiet(t, "commit", plan)
	if code, out, _ := run(t, "diff", "--entries", "--values", single, sharded); code != ExitOK {
		t.Fatalf("the shards wrote other state than one process:\n%s", out)
	}

	put, putPlan := filepath.Join(dir, "put"), filepath.Join(dir, "put-plan.json")
	mustRun(t, "put", snap, "--path-map", pm, "--key-serializers-from", sp, "--operator", "17_group-aggregate", "--state", "accState",
		"--key", `["k1"]`, "--value", `[{"lastOrder":-9223372036854775808,"lastValue":1},1]`, "--output", put, "--plan-only", putPlan)
	mustRunQuiet(t, "shard", putPlan, "--shard", "1/1")
	mustRunQuiet(t, "commit", putPlan)
	got := mustRun(t, "get", put, "--operator", "17_group-aggregate", "--state", "accState", "--key", `["k1"]`, "-o", "json")
	var rec struct{ Value json.RawMessage }
	if err := json.Unmarshal([]byte(got), &rec); err != nil {
		t.Fatal(err)
	}
	if !sameJSONText(t, string(rec.Value), `[{"lastOrder":-9223372036854775808,"lastValue":1},1]`) {
		t.Errorf("get of what the sharded put wrote: %s", got)
	}
}

// upgrade takes --key-serializers-from as the other copies do: a snapshot
// it names that is not there is refused (exit 1), with --check too; one of
// the same job changes nothing where the source records its key
// serializers (the SQL witness job's Flink 1.20.5 savepoint).
func TestUpgradeTakesKeySerializersFrom(t *testing.T) {
	dir, m := corpusManifest(t, "flink-witness", "1.20.5", "sqlops-hashmap-canonical")
	src := filepath.Join(dir, "snapshot", m.SnapshotSubpath)
	ndir, nm := corpusManifest(t, "flink-witness", "1.20.5", "sqlops-rocksdb-native")
	native := filepath.Join(ndir, "snapshot", nm.SnapshotSubpath)
	none := filepath.Join(t.TempDir(), "none")
	for _, args := range [][]string{
		{"upgrade", "--check", src, "--flink-version", "2.3", "--key-serializers-from", none},
		{"upgrade", src, "--flink-version", "2.3", "--key-serializers-from", none, "--output", filepath.Join(t.TempDir(), "upgraded")},
	} {
		if code, _, errOut := run(t, args...); code != ExitUsage || !strings.Contains(errOut, `--key-serializers-from "`+none+`": no such file or directory`) {
			t.Errorf("%v: exit %d, %s; want %d, the snapshot named not found", args, code, errOut, ExitUsage)
		}
	}
	check := func(flags ...string) string {
		_, out, errOut := run(t, append([]string{"upgrade", "--check", src, "--flink-version", "2.3", "-o", "json"}, flags...)...)
		if out == "" {
			t.Fatalf("upgrade --check %v: %s", flags, errOut)
		}
		return out
	}
	if without, with := check(), check("--key-serializers-from", native); with != without {
		t.Errorf("upgrade --check with the key serializers of the job's native savepoint:\n%s\nwithout:\n%s", with, without)
	}
}

// The state edits take --key-serializers-from too: keys delete encodes
// the key by the key serializer taken (without it, the key cannot be
// written, exit 1), and the copies of both edits hold the checkpoint's
// other entries, read back without the flag.
func TestEditsWithKeySerializersFrom(t *testing.T) {
	snap, pm, sp := changelogWitness(t, "sqlops")
	from := []string{"--path-map", pm, "--key-serializers-from", sp}
	src := dumped(t, []string{"subtask"}, append([]string{snap}, from...)...)
	keep := func(drop func(l string) bool) []string {
		var out []string
		for _, l := range src {
			if !drop(l) {
				out = append(out, l)
			}
		}
		if len(out) == len(src) {
			t.Fatal("the edit would remove nothing")
		}
		return out
	}
	of17 := func(l string) bool { return strings.Contains(l, `"operator":"17_group-aggregate"`) }
	dir := t.TempDir()
	for name, c := range map[string]struct {
		args []string
		want []string
	}{
		"keys delete": {[]string{"keys", "delete", snap, "--operator", "17_group-aggregate", "--key", `["k1"]`},
			keep(func(l string) bool { return of17(l) && strings.Contains(l, `"key":["k1"]`) })},
		"state drop": {[]string{"state", "drop", snap, "--operator", "17_group-aggregate", "--state", "accState"},
			keep(func(l string) bool { return of17(l) && strings.Contains(l, `"state":"accState"`) })},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			mustRun(t, append(append(c.args, from...), "--output", out)...)
			if got := dumped(t, []string{"subtask"}, out); !slices.Equal(got, c.want) {
				t.Errorf("the copy holds %d entries, want %d; they differ:\n%s", len(got), len(c.want), firstDifference(got, c.want))
			}
		})
	}
	code, _, errOut := run(t, "keys", "delete", snap, "--path-map", pm, "--operator", "17_group-aggregate", "--key", `["k1"]`, "--output", filepath.Join(dir, "withheld"))
	if code != ExitUsage || !strings.Contains(errOut, `["k1"] is not a flink:rowdata`) {
		t.Errorf("keys delete without the key serializers: exit %d, %s; want %d, the key refused", code, errOut, ExitUsage)
	}
}
