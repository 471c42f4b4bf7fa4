package cmd

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

// TestSurgeryRestoresInFlink is real Flink as the witness of the state
// edits: each savepoint stateutil edits is restored by Flink into the job,
// on the heap and in RocksDB, and the state the restored job then dumps
// must be the original job's dump with exactly the edit made.
func TestSurgeryRestoresInFlink(t *testing.T) {
	eachFlinkVersion(t, surgeryMatrix)
}

// keyedLines is lines without those of the keyed operator that drop says.
func keyedLines(lines []flinkharness.Line, drop func(flinkharness.Line) bool) []flinkharness.Line {
	return dropLines(lines, func(l flinkharness.Line) bool { return l.Operator == "keyed" && drop(l) })
}

// stateRenamed is lines with state from of operator named to.
func stateRenamed(t *testing.T, lines []flinkharness.Line, operator, from, to string) []flinkharness.Line {
	return withField(t, lines, operatorState(operator, from), "state", to)
}

// operatorState matches the lines of state of operator.
func operatorState(operator, state string) func(flinkharness.Line) bool {
	return func(l flinkharness.Line) bool { return l.Operator == operator && l.State == state }
}

// withLine is lines and one more, raw.
func withLine(t *testing.T, lines []flinkharness.Line, raw string) []flinkharness.Line {
	var l flinkharness.Line
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		t.Fatal(err)
	}
	l.Raw = raw
	return append(slices.Clone(lines), l)
}

// keyState matches the line of key in state of the keyed operator.
func keyState(key, state string) func(flinkharness.Line) bool {
	return func(l flinkharness.Line) bool {
		return l.Operator == "keyed" && l.State == state && string(l.Key) == `"`+key+`"`
	}
}

func surgeryMatrix(t *testing.T, v string) {
	fc, out := newFlinkCase(t, v)
	basic := fc.entry("basic-hashmap-canonical")
	basicDump := dumpOf(t, basic.File("dump.jsonl"))
	native := fc.entry("basic-rocksdb-native")
	nativeDump := dumpOf(t, native.File("dump.jsonl"))
	deleted := map[string]bool{`"user-0"`: true, `"user-7"`: true}
	withoutKeys := func(lines []flinkharness.Line) []flinkharness.Line {
		return keyedLines(lines, func(l flinkharness.Line) bool { return deleted[string(l.Key)] })
	}
	// A list and a map replaced whole, a reducing state's value set, a
	// key's count deleted.
	basicRecords := out("basic-load.jsonl")
	if err := os.WriteFile(basicRecords, []byte(`{"operator":"keyed","state":"events","key":"user-3","value":["x"]}
{"operator":"keyed","state":"by-bucket","key":"user-3","value":{"b7":5}}
{"operator":"keyed","state":"sum","key":"user-4","value":77}
{"operator":"keyed","state":"count","key":"user-6","delete":true}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded := withField(t, basicDump, keyState("user-3", "events"), "value", []string{"x"})
	loaded = withField(t, loaded, keyState("user-3", "by-bucket"), "value", map[string]int{"b7": 5})
	loaded = withField(t, loaded, keyState("user-4", "sum"), "value", 77)
	loaded = keyedLines(loaded, keyState("user-6", "count"))
	cases := []struct {
		name       string
		src        string
		args       []string
		orig, want []flinkharness.Line
		o          flinkharness.RestoreOptions
	}{
		// Gone from every state, the key's event-time timers (dumped as
		// they fire) and processing-time timers included.
		{"keys-delete", basic.SnapshotDir(), []string{"keys", "delete", "--operator", "keyed", "--key", "user-0", "--key", `"user-7"`},
			basicDump, withoutKeys(basicDump), flinkharness.RestoreOptions{Parallelism: 2}},
		// From native RocksDB state, rescaled in the same run.
		{"keys-delete-native-rescaled", native.SnapshotDir(), []string{"keys", "delete", "--operator", "keyed", "--key", "user-0", "--key", "user-7",
			"--format", "flink", "--max-parallelism", "256", "--parallelism", "3"},
			nativeDump, withoutKeys(nativeDump), flinkharness.RestoreOptions{Parallelism: 3}},
		// The job's descriptor of the dropped state restores empty.
		{"state-drop", basic.SnapshotDir(), []string{"state", "drop", "--operator", "keyed", "--state", "events"},
			basicDump, keyedLines(basicDump, func(l flinkharness.Line) bool { return l.State == "events" }), flinkharness.RestoreOptions{Parallelism: 2}},
		// Flink decodes the value put, the map entry put beside the
		// others, and the list of a key the job never had.
		{"put-value", basic.SnapshotDir(), []string{"put", "--operator", "keyed", "--state", "count", "--key", "user-3", "--value", "1234"},
			basicDump, withField(t, basicDump, keyState("user-3", "count"), "value", 1234), flinkharness.RestoreOptions{Parallelism: 2}},
		{"put-map-entry", basic.SnapshotDir(), []string{"put", "--operator", "keyed", "--state", "by-bucket", "--key", "user-3", "--map-key", "b1", "--value", "-5"},
			basicDump, withField(t, basicDump, keyState("user-3", "by-bucket"), "value", map[string]any{"b0": 372, "b1": -5, "b2": 249}), flinkharness.RestoreOptions{Parallelism: 2}},
		{"put-list-new-key", basic.SnapshotDir(), []string{"put", "--operator", "keyed", "--state", "events", "--key", "user-new", "--value", `["x","y"]`},
			basicDump, withLine(t, basicDump, `{"key":"user-new","kind":"list","operator":"keyed","state":"events","value":["x","y"]}`), flinkharness.RestoreOptions{Parallelism: 2}},
		// An operator state dropped: the restored union state is empty.
		{"state-drop-operator", basic.SnapshotDir(), []string{"state", "drop", "--operator", "offsets", "--state", "subtask-summary"},
			basicDump, dropLines(basicDump, operatorState("offsets", "subtask-summary")), flinkharness.RestoreOptions{Parallelism: 2}},
		// Whole values, as load sets them, rescaled in the same run.
		{"load-list-map", basic.SnapshotDir(), []string{"load", "--from", basicRecords, "--parallelism", "3"},
			basicDump, loaded, flinkharness.RestoreOptions{Parallelism: 3}},
		// A job whose descriptor is now named count-v2 restores count's content into it.
		{"state-rename", basic.SnapshotDir(), []string{"state", "rename", "--operator", "keyed", "--state", "count", "--to", "count-v2"},
			basicDump, stateRenamed(t, basicDump, "keyed", "count", "count-v2"), flinkharness.RestoreOptions{Parallelism: 2, RenameState: "count=count-v2"}},
		// The job that still declares count starts it empty: Flink matched
		// the state by its new name.
		{"state-rename-old-descriptor", basic.SnapshotDir(), []string{"state", "rename", "--operator", "keyed", "--state", "count", "--to", "count-v2"},
			basicDump, dropLines(basicDump, operatorState("keyed", "count")), flinkharness.RestoreOptions{Parallelism: 2}},
		// The same for operator state: a split list state, redistributed
		// over 3 subtasks, a union list state and a broadcast state.
		{"state-rename-split", basic.SnapshotDir(), []string{"state", "rename", "--operator", "offsets", "--state", "partition-offsets", "--to", "partition-offsets-v2"},
			basicDump, stateRenamed(t, basicDump, "offsets", "partition-offsets", "partition-offsets-v2"),
			flinkharness.RestoreOptions{Parallelism: 3, RenameState: "partition-offsets=partition-offsets-v2"}},
		{"state-rename-union", basic.SnapshotDir(), []string{"state", "rename", "--operator", "offsets", "--state", "subtask-summary", "--to", "subtask-summary-v2"},
			basicDump, stateRenamed(t, basicDump, "offsets", "subtask-summary", "subtask-summary-v2"),
			flinkharness.RestoreOptions{Parallelism: 2, RenameState: "subtask-summary=subtask-summary-v2"}},
		{"state-rename-broadcast", basic.SnapshotDir(), []string{"state", "rename", "--operator", "broadcast", "--state", "rules", "--to", "rules-v2"},
			basicDump, stateRenamed(t, basicDump, "broadcast", "rules", "rules-v2"), flinkharness.RestoreOptions{Parallelism: 2, RenameState: "rules=rules-v2"}},
		// As for keyed state, a job still declaring the old name restores it
		// empty, and Flink restores the job all the same.
		{"state-rename-broadcast-old-descriptor", basic.SnapshotDir(), []string{"state", "rename", "--operator", "broadcast", "--state", "rules", "--to", "rules-v2"},
			basicDump, dropLines(basicDump, operatorState("broadcast", "rules")), flinkharness.RestoreOptions{Parallelism: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fc := *fc
			fc.t = t
			if flinkharness.EqualDumps(c.orig, c.want) == "" {
				t.Fatal("the edit changes nothing of the job's dump")
			}
			dst := out(c.name)
			// SRC follows the command's words, before its flags.
			words := slices.IndexFunc(c.args, func(a string) bool { return strings.HasPrefix(a, "--") })
			args := append(slices.Clone(c.args[:words]), c.src)
			fc.stateutil(append(append(args, c.args[words:]...), "--output", dst)...)
			for _, backend := range []string{"hashmap", "rocksdb"} {
				o := c.o
				o.Backend = backend
				fc.restore(c.name+"-"+backend, "basic", dst, c.want, o)
			}
		})
	}
	t.Run("load-types", func(t *testing.T) {
		// A value of every type the types job keeps, changed in stateutil's
		// own dump of the savepoint, one key deleted, the rest loaded back
		// as dumped: Flink restores exactly those changes.
		t.Parallel()
		fc := *fc
		fc.t = t
		types := fc.entry("types-hashmap-canonical")
		from, want := loadEdit(t, fc.stateutil("dump", types.SnapshotDir(), "--operator", "keyed"), dumpOf(t, types.File("dump.jsonl")),
			dumpEdit{key: "obj-0", values: typesEdits, deleteKey: "obj-1", deleteState: "string", skip: map[string]bool{"kryo": true}})
		records := out("types-load.jsonl")
		if err := os.WriteFile(records, from, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := out("types-loaded")
		fc.stateutil("load", types.SnapshotDir(), "--from", records, "--output", dst)
		for _, backend := range []string{"hashmap", "rocksdb"} {
			fc.restore("load-types-"+backend, "types", dst, want, flinkharness.RestoreOptions{Parallelism: 2, Backend: backend})
		}
	})
}

// typesEdits are new values for key obj-0 of the types job, one per state,
// each unlike the job's own.
var typesEdits = map[string]string{
	"avro":    `{"id":7,"name":"edited","note":"a note","score":1.5,"tags":["x"]}`,
	"boolean": `true`,
	"byte":    `-7`,
	"bytes":   `"0x0102"`,
	"char":    `"Z"`,
	"double":  `-0.5`,
	"either":  `{"right":-9}`,
	"enum":    `"GREEN"`,
	"float":   `1.5`,
	"int":     `-42`,
	"ints":    `[1,2]`,
	"list":    `[5]`,
	"map":     `{"z":1}`,
	"pojo":    `{"active":false,"age":40,"id":7,"name":"edited","score":1.0}`,
	"row":     `[1,"edited",2.5]`,
	"short":   `-3`,
	"string":  `"edited ✓"`,
	"strings": `["a"]`,
	"tuple3":  `["e",1,2.5]`,
}

// dumpEdit is an edit of stateutil's dump of a job's keyed operator: every
// state of key set to its value in values, deleteKey's deleteState
// deleted, the states in skip left out (loaded back as the source holds
// them).
type dumpEdit struct {
	key                    string
	values                 map[string]string
	deleteKey, deleteState string
	skip                   map[string]bool
}

// loadEdit makes stateutil's dump records to load with edit e applied;
// want is the job's own dump with the same edit.
func loadEdit(t *testing.T, dump string, jobDump []flinkharness.Line, e dumpEdit) (records []byte, want []flinkharness.Line) {
	t.Helper()
	want = jobDump
	for _, line := range strings.Split(strings.TrimSpace(dump), "\n") {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		var state, key string
		if json.Unmarshal(rec["state"], &state) != nil || json.Unmarshal(rec["key"], &key) != nil {
			t.Fatalf("dump line %s", line)
		}
		switch {
		case e.skip[state]:
			continue
		case key == e.key:
			v, ok := e.values[state]
			if !ok {
				t.Fatalf("no edit for state %q", state)
			}
			if string(rec["value"]) == v {
				t.Fatalf("the edit of %q changes nothing", state)
			}
			rec["value"] = json.RawMessage(v)
			var value any
			if err := json.Unmarshal([]byte(v), &value); err != nil {
				t.Fatal(err)
			}
			want = withField(t, want, keyState(e.key, state), "value", value)
		case key == e.deleteKey && state == e.deleteState:
			// A deletion names its key and no value (load refuses both).
			delete(rec, "value")
			rec["delete"] = json.RawMessage("true")
			want = keyedLines(want, keyState(e.deleteKey, e.deleteState))
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		records = append(append(records, b...), '\n')
	}
	return records, want
}
