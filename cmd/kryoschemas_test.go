package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

// witnessEntry is a checked-in witness snapshot of testdata/flink-witness:
// its snapshot directory, and the schemas its job's user would give
// (--kryo-classes, --proto-descriptors).
func witnessEntry(t *testing.T, version, entry string) (snap string, schemas []string) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "flink-witness", version, entry)
	return filepath.Join(dir, "snapshot", entryManifest(t, dir).SnapshotSubpath), []string{"--kryo-classes", filepath.Join(dir, "kryo-classes.txt"), "--proto-descriptors", filepath.Join(dir, "descriptors.pb")}
}

// The golden output of get on the Kryo values of the zoo witness job,
// with the job's schemas and without, and of the flags' bad files.
func TestGoldenKryoSchemas(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.kryo-classes")
	if err := os.WriteFile(bad, []byte("class com.acme.A {\n  int x\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pb")
	if err := os.WriteFile(junk, []byte("\xff\xff\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap5, schemas5 := witnessEntry(t, "2.3.0", "zoo-rocksdb-native")
	snap1, schemas1 := witnessEntry(t, "1.20.5", "zoo-hashmap-canonical")
	get := func(snap, state string, flags ...string) []string {
		return append([]string{"get", snap, "--operator", "zoo", "--state", state, "--key", "z-1", "-o", "json"}, flags...)
	}
	cases := map[string][]string{
		"kryo-schemas-gadget-2":          get(snap1, "kryo", schemas1...),
		"kryo-schemas-gadget-5":          get(snap5, "kryo", schemas5...),
		"kryo-schemas-nested-2":          get(snap1, "nested", schemas1...),
		"kryo-schemas-nested-5":          get(snap5, "nested", schemas5...),
		"kryo-schemas-proto-5":           get(snap5, "proto", schemas5...),
		"kryo-schemas-custom-2":          get(snap1, "custom", schemas1...),
		"kryo-schemas-custom-5":          get(snap5, "custom", schemas5...),
		"kryo-schemas-custom-withheld-5": get(snap5, "custom"),
		"kryo-schemas-optional-5":        get(snap5, "optional"),
		"kryo-schemas-gadget-withheld-5": get(snap5, "kryo"),
		"kryo-schemas-bad-layout":        get(snap5, "kryo", "--kryo-classes", bad),
		"kryo-schemas-missing-layout":    get(snap5, "kryo", "--kryo-classes", filepath.Join(dir, "none")),
		"kryo-schemas-directory":         get(snap5, "kryo", "--kryo-classes", dir),
		"kryo-schemas-junk-descriptors":  get(snap5, "proto", "--proto-descriptors", junk),
		"kryo-schemas-verify-withheld-5": {"verify", snap5},
		"kryo-schemas-verify-given-5":    append([]string{"verify", snap5}, schemas5...),
		"kryo-schemas-verify-strict-5":   append([]string{"verify", snap5, "--strict"}, schemas5...),
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			runGoldenReplacing(t, name, strings.NewReplacer(dir, "TMP").Replace, args...)
		})
	}
}

// put writes a value of a class under Kryo's FieldSerializer, one with a
// serializer of the job's own, a Protobuf message and an Optional from
// their JSON, by the schemas, in Flink 1.x's
// Kryo 2 and 2.x's Kryo 5: get reads back what was put, verify finds no
// damage; without the layout the value cannot be written.
func TestPutKryoValuesBySchemas(t *testing.T) {
	values := map[string]string{
		"kryo":     `{"attrs":{"@class":"java.util.LinkedHashMap","@value":{"a":{"@class":"java.lang.Integer","@value":1},"b":{"@class":"java.lang.Integer","@value":-2}}},"name":"put","values":[1,2,3]}`,
		"proto":    `{"counts":{"x":7},"id":5,"probe":{"name":"p","samples":[1,2]},"raw":"0x00","sensor":"s","tags":["a","b"],"unit":"KELVIN","value":1.5}`,
		"optional": `{"@class":"java.lang.Integer","@value":42}`,
		"custom":   `{"id":-3,"text":"a token written by put, longer than thirty-two characters"}`,
		"nested":   `{"counts":[1],"groups":{"g":[{"@class":"stateutil.flink.jobs.ZooJob$Inner","@value":{"label":"x","weight":3}}]},"id":"o","inner":{"label":"in","weight":1},"items":[],"level":"LOW"}`,
	}
	for _, v := range []string{"1.20.5", "2.3.0"} {
		snap, schemas := witnessEntry(t, v, "zoo-hashmap-canonical")
		for state, value := range values {
			out := filepath.Join(t.TempDir(), "put")
			args := append([]string{"put", snap, "--operator", "zoo", "--state", state, "--key", "z-1", "--value", value, "--output", out}, schemas...)
			if code, _, errOut := run(t, args...); code != 0 {
				t.Errorf("%s %s: put exits %d: %s", v, state, code, errOut)
				continue
			}
			got := mustRun(t, append([]string{"get", out, "--operator", "zoo", "--state", state, "--key", "z-1", "-o", "json"}, schemas...)...)
			var rec struct{ Value json.RawMessage }
			if err := json.Unmarshal([]byte(got), &rec); err != nil {
				t.Fatal(err)
			}
			if !sameJSONText(t, string(rec.Value), value) {
				t.Errorf("%s %s: get reads back %s, want %s", v, state, rec.Value, value)
			}
			mustRun(t, append([]string{"verify", out}, schemas...)...)
		}
		code, _, errOut := run(t, "put", snap, "--operator", "zoo", "--state", "kryo", "--key", "z-1", "--value", values["kryo"], "--output", filepath.Join(t.TempDir(), "put"))
		if code != 1 || !strings.Contains(errOut, "stateutil.flink.jobs.ZooJob$Gadget") {
			t.Errorf("%s: put of a Gadget without its layout: exit %d, %s; want 1, naming the class", v, code, errOut)
		}
	}
	snap, schemas := witnessEntry(t, "2.3.0", "zoo-hashmap-canonical")
	plan := filepath.Join(t.TempDir(), "plan")
	code, _, errOut := run(t, append([]string{"put", snap, "--operator", "zoo", "--state", "kryo", "--key", "z-1", "--value", values["kryo"], "--output", filepath.Join(t.TempDir(), "put"), "--plan-only", plan}, schemas...)...)
	if code != 1 || !strings.Contains(errOut, "go with no --plan-only") {
		t.Errorf("a sharded put with schemas: exit %d, %s; want 1, refused", code, errOut)
	}
}

func sameJSONText(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// upgrade carries the values of a class with a Kryo serializer of the
// job's own from Flink 1.20.5's Kryo 2 to Kryo 5 when --kryo-classes
// declares what the serializer writes (and blocks them without): the zoo
// job's 1.20.5 savepoint, its other blocked states dropped, upgrades to
// Tokens whose bytes are those real Flink 2.3.0 wrote for the same keys
// (the 2.3.0 job's own dump); read back, they verify with nothing left
// not decoded.
func TestUpgradeCarriesDeclaredSerializerWrites(t *testing.T) {
	snap, schemas := witnessEntry(t, "1.20.5", "zoo-hashmap-canonical")
	classes := schemas[:2]
	type report struct {
		Findings []struct{ Operator, State, Verdict, Reason string }
	}
	check := func(src string, flags ...string) report {
		t.Helper()
		_, out, errOut := run(t, append([]string{"upgrade", "--check", src, "--flink-version", "2.3", "-o", "json"}, flags...)...)
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("upgrade --check: %v (%s)", err, errOut)
		}
		return r
	}
	verdict := func(r report, state string) string {
		for _, f := range r.Findings {
			if f.State == state {
				return f.Verdict + ": " + f.Reason
			}
		}
		return "none"
	}
	if v := verdict(check(snap), "custom"); !strings.HasPrefix(v, "blocked: ") || !strings.Contains(v, "@WrittenBy") {
		t.Errorf("without the declaration, custom: %s; want blocked, pointing at @WrittenBy", v)
	}
	r := check(snap, classes...)
	if v := verdict(r, "custom"); v != "rewritten by upgrade: " {
		t.Fatalf("with the declaration, custom: %s; want rewritten", v)
	}
	src := snap
	for _, f := range r.Findings {
		if f.Verdict != "blocked" {
			continue
		}
		out := filepath.Join(t.TempDir(), "dropped")
		mustRun(t, "state", "drop", src, "--operator", f.Operator, "--state", f.State, "--output", out)
		src = out
	}
	upgraded := filepath.Join(t.TempDir(), "upgraded")
	mustRun(t, append([]string{"upgrade", src, "--flink-version", "2.3", "--output", upgraded}, classes...)...)

	want := map[string]string{}
	job, err := flinkharness.ReadDump(filepath.Join("..", "testdata", "flink-witness", "2.3.0", "zoo-hashmap-canonical", "dump.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range job {
		if l.State == "custom" {
			want[string(l.Key)] = string(l.Value)
		}
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(mustRun(t, "dump", upgraded, "--operator", "zoo", "--state", "custom")), "\n") {
		var rec struct {
			Key   json.RawMessage
			Value json.RawMessage
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		got[string(rec.Key)] = string(rec.Value)
	}
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("the upgraded savepoint holds %d Tokens, the 2.3.0 job %d", len(got), len(want))
	}
	for key, w := range want {
		if !sameJSONText(t, got[key], w) {
			t.Errorf("key %s: the upgrade wrote %s, Flink 2.3.0 %s", key, got[key], w)
		}
	}
	mustRun(t, append([]string{"verify", upgraded, "--strict"}, classes...)...)
}

// heapKryoEvent is the declaration of the heapkryo job's Event
// (testenv/flink/src/main/java/stateutil/flink/jobs/HeapKryoJob.java),
// which Kryo writes with its FieldSerializer, as its user gives it.
const heapKryoEvent = `final class stateutil.flink.jobs.HeapKryoJob$Event {
    private final long seq;
    private final String what;
}
`

// The commands that write a copy take --kryo-classes where they must walk
// values to copy them: in the heapkryo job's heap native savepoint (Flink
// 1.20.5's Kryo 2 and 2.3.0's Kryo 5) nothing delimits the Events of a
// list, and every copy refuses it (exit 4, naming the state) without
// their declaration. With it, each writes what it was asked to: its
// entries, read back with the declaration, are the savepoint's (less what
// the edit removes). The files go with no --plan-only.
func TestCopiesTakeKryoClasses(t *testing.T) {
	dir := t.TempDir()
	classes := filepath.Join(dir, "heapkryo.kryo-classes")
	if err := os.WriteFile(classes, []byte(heapKryoEvent), 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pb")
	if err := os.WriteFile(junk, []byte("\xff\xff\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.20.5", "2.3.0"} {
		edir, m := corpusManifest(t, "flink", v, "heapkryo-hashmap-native")
		src := filepath.Join(edir, "snapshot", m.SnapshotSubpath)
		all := dumped(t, []string{"subtask"}, src, "--kryo-classes", classes)
		var events, withoutUser9 []string
		for _, l := range all {
			if strings.Contains(l, `"state":"events"`) {
				events = append(events, l)
				if !strings.Contains(l, `"key":"user-9"`) {
					withoutUser9 = append(withoutUser9, l)
				}
			}
		}
		if len(events) == 0 || len(withoutUser9) == len(events) {
			t.Fatalf("%s: %d entries of state events, %d but user-9's", v, len(events), len(withoutUser9))
		}
		copies := map[string]struct {
			args  []string
			state []string // the dump of the copy, --state events where given
			want  []string
		}{
			"convert":         {[]string{"convert", src, "--to", "flink"}, nil, all},
			"rescale":         {[]string{"rescale", src, "--parallelism", "3", "-q"}, nil, all},
			"state drop":      {[]string{"state", "drop", src, "--operator", "keyed", "--state", "count"}, []string{"--state", "events"}, events},
			"keys delete":     {[]string{"keys", "delete", src, "--operator", "keyed", "--key", "user-9"}, []string{"--state", "events"}, withoutUser9},
			"operator remove": {[]string{"operator", "remove", src, "--operator", "source"}, nil, all},
		}
		for name, c := range copies {
			t.Run(v+" "+name, func(t *testing.T) {
				// Each writes a copy of its own.
				t.Parallel()
				out := filepath.Join(t.TempDir(), "copy")
				args := append(c.args, "--output", out)
				if code, _, errOut := run(t, args...); code != ExitUnsupported || !strings.Contains(errOut, `keyed state "events" cannot be read`) {
					t.Errorf("without the declaration: exit %d, %s; want %d, the state events unreadable", code, errOut, ExitUnsupported)
				}
				mustRun(t, append(args, "--kryo-classes", classes)...)
				if got := dumped(t, []string{"subtask"}, append([]string{out, "--kryo-classes", classes}, c.state...)...); !slices.Equal(got, c.want) {
					t.Errorf("the copy holds %d entries, want %d; they differ:\n%s", len(got), len(c.want), firstDifference(got, c.want))
				}
			})
		}
	}
	src, _ := witnessEntry(t, "2.3.0", "zoo-hashmap-canonical")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"convert", src, "--to", "flink", "--output", filepath.Join(dir, "junk"), "--proto-descriptors", junk}, "not a FileDescriptorSet"},
		{[]string{"rescale", src, "--parallelism", "3", "--output", filepath.Join(dir, "planned"), "--plan-only", filepath.Join(dir, "plan"), "--kryo-classes", classes},
			"--kryo-classes and --proto-descriptors go with no --plan-only"},
	} {
		if code, _, errOut := run(t, c.args...); code != ExitUsage || !strings.Contains(errOut, c.says) {
			t.Errorf("%s: exit %d, %s; want %d, saying %q", c.args[0], code, errOut, ExitUsage, c.says)
		}
	}
}
