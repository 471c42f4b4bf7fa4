package cmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
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

// The golden output of --key-serializers-from on the SQL witness job's
// changelog checkpoint: with its savepoint, dump decodes the keys;
// without, they are not decoded, and verify and inspect say which
// operators' and how to read them; a savepoint of another job is refused.
func TestGoldenKeySerializersFrom(t *testing.T) {
	snap, pm, sp := changelogWitness(t, "sqlops")
	cepDir, cep := corpusManifest(t, "flink-witness", "2.3.0", "cep-hashmap-canonical")
	other := filepath.Join(cepDir, "snapshot", cep.SnapshotSubpath)
	cases := map[string][]string{
		"flink-key-serializers-dump":             {"dump", snap, "--path-map", pm, "--operator", "17_group-aggregate", "--key-serializers-from", sp},
		"flink-key-serializers-dump-withheld":    {"dump", snap, "--path-map", pm, "--operator", "17_group-aggregate"},
		"flink-key-serializers-verify":           {"verify", snap, "--path-map", pm, "--key-serializers-from", sp},
		"flink-key-serializers-verify-withheld":  {"verify", snap, "--path-map", pm},
		"flink-key-serializers-inspect-withheld": {"inspect", snap, "--path-map", pm},
		"flink-key-serializers-other-job":        {"dump", snap, "--path-map", pm, "--key-serializers-from", other},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// --key-serializers-from is refused, exit 1, naming the operator and the
// files, wherever the snapshot it names cannot give an operator's key
// serializer or gives one its keys do not fit: made from the witness
// job's own savepoint, one without an operator, and one whose two
// group aggregations' IDs are swapped (so that each holds the other's key
// serializer, of another field type); the checkpoint itself, which records
// none; what is no Flink snapshot; and sharded edits, whose shards would
// read without it.
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
			for _, args := range [][]string{
				{"dump", snap, "--path-map", pm, "--key-serializers-from", c.from},
				{"verify", snap, "--path-map", pm, "--key-serializers-from", c.from},
			} {
				code, out, errOut := run(t, args...)
				if code != ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr", args[0], code, out, errOut, ExitUsage)
				}
				for _, s := range c.says {
					if !strings.Contains(errOut, s) {
						t.Errorf("%s: %s does not say %q", args[0], errOut, s)
					}
				}
			}
		})
	}
	code, _, errOut := run(t, "put", snap, "--path-map", pm, "--key-serializers-from", sp, "--operator", "17_group-aggregate", "--state", "accState",
		"--key", `["k0"]`, "--value", "null", "--output", filepath.Join(dir, "put"), "--plan-only", filepath.Join(dir, "plan"))
	if code != ExitUsage || !strings.Contains(errOut, "--key-serializers-from go with no --plan-only") {
		t.Errorf("a sharded put with --key-serializers-from: exit %d, %s; want %d, refused", code, errOut, ExitUsage)
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
