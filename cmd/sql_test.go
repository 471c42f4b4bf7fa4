package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// decodeJSON reads JSON with numbers as json.Number.
func decodeJSON(t *testing.T, text string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%v in %.300s", err, text)
	}
}

// sqlRows runs stateutil sql -o json and returns its rows.
func sqlRows(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	args = append(append([]string{"sql"}, args...), "-o", "json")
	code, out, errOut := run(t, args...)
	if code != ExitOK {
		t.Fatalf("stateutil %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	var rows []map[string]any
	decodeJSON(t, out, &rows)
	return rows
}

// sqlSession runs queries in one stateutil sql session over snap (its
// statements from standard input) and returns each one's rows.
func sqlSession(t *testing.T, snap, queries []string) [][]map[string]any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := NewRootCommand(&stdout, &stderr)
	root.SetIn(strings.NewReader(strings.Join(queries, ";\n") + ";\n"))
	root.SetArgs(append(append([]string{"sql"}, snap...), "-o", "json"))
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("stateutil sql %s: %v: %s", strings.Join(snap, " "), err, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	dec.UseNumber()
	results := make([][]map[string]any, len(queries))
	for i, q := range queries {
		if err := dec.Decode(&results[i]); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if dec.More() {
		t.Fatalf("stateutil sql printed more results than the %d statements", len(queries))
	}
	return results
}

// canonical is the JSON text of v, object keys sorted, numbers exact.
func canonical(v any) string {
	v = exactNumbers(v)
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// exactNumbers replaces numbers by their exact value's text, so that
// -160.160 and -160.16 compare equal.
func exactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if r, ok := new(big.Rat).SetString(x.String()); ok {
			return r.RatString()
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = exactNumbers(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = exactNumbers(e)
		}
		return out
	}
	return v
}

// sqlValue is a row's value of column col, or its undecoded column's, in
// the shape of dump's.
func sqlValue(row map[string]any, col string) any {
	if u := row[col+"_undecoded"]; u != nil {
		return map[string]any{"@class": u.(map[string]any)["class"], "@bytes": u.(map[string]any)["bytes"]}
	}
	return row[col]
}

// leaves is v's scalars in canonical's text, sorted: what a typed column
// and dump's JSON of one value share, whatever their shapes (a tuple is
// a list in dump, a struct of f0, f1, ... in SQL; a changelog row's kind
// is a field, "INSERT" where dump shows none).
func leaves(v any) string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if e != nil {
					walk(e)
				}
			}
		case map[string]any:
			if len(x) == 2 && x["@class"] != nil && x["@bytes"] != nil {
				out = append(out, canonical(x))
				return
			}
			for k, e := range x {
				// A struct's fields are all there, null or not; the
				// object dump writes of an Either or a union has one.
				// Nulls are left out of lists alike.
				if e == nil || k == "row_kind" && e == "INSERT" {
					continue
				}
				walk(e)
			}
		case string:
			// A decimal is a number in dump's JSON, its exact text in SQL.
			if r, ok := new(big.Rat).SetString(x); ok && x != "" {
				out = append(out, canonical(r.RatString()))
				return
			}
			out = append(out, canonical(x))
		default:
			out = append(out, canonical(x))
		}
	}
	walk(v)
	sort.Strings(out)
	return strings.Join(out, ",")
}

// keyLeaves is leaves of a map key as dump writes it, its JSON text
// unless it is a string.
func keyLeaves(k string) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(k))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return leaves(k)
	}
	return leaves(v)
}

// flinkCorpus is every real Flink snapshot under testdata/flink, as the
// arguments that read it: its path, and where it records absolute paths
// (a checkpoint), the --path-map to where it lies now.
func flinkCorpus(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	versions, err := os.ReadDir(filepath.Join("..", "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		entries, err := os.ReadDir(filepath.Join("..", "testdata", "flink", v.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out[v.Name()+"/"+e.Name()] = flinkArgs(t, v.Name(), e.Name())
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d snapshots under testdata/flink", len(out))
	}
	// The witness jobs' snapshots (CEP, the SQL operators, the zoo of
	// values) where dump reads them whole: those it refuses are the gaps
	// internal/flinkwitness lists.
	witness := filepath.Join("..", "testdata", "flink-witness")
	versions, err = os.ReadDir(witness)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		entries, err := os.ReadDir(filepath.Join(witness, v.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			args := corpusArgs(t, "flink-witness", v.Name(), e.Name())
			if code, _, _ := run(t, append([]string{"dump", "--limit", "0"}, args...)...); code == ExitOK {
				out["witness/"+v.Name()+"/"+e.Name()] = args
			}
		}
	}
	return out
}

// flinkArgs are the arguments that read a snapshot of the corpus where
// it lies: its path, and a --path-map from where it was written.
func flinkArgs(t *testing.T, version, entry string) []string {
	t.Helper()
	return corpusArgs(t, "flink", version, entry)
}

// corpusArgs are flinkArgs of an entry of another corpus.
func corpusArgs(t *testing.T, corpus, version, entry string) []string {
	t.Helper()
	dir, m := corpusManifest(t, corpus, version, entry)
	abs, err := filepath.Abs(filepath.Join(dir, "snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	return []string{filepath.Join(dir, "snapshot", m.SnapshotSubpath), "--path-map", m.OriginalDir + "=" + abs, "--skip-unreadable"}
}

// Every keyed state of every real Flink snapshot in the corpus (and of
// stateutil's example) reads in SQL as dump reads it: as many rows as dump
// has records (a list's elements and a map's entries each a row), and each
// row's key, namespace and value (or map key and value) equal to dump's,
// values that were not decoded as their class and bytes.
func TestSQLEqualsDump(t *testing.T) {
	snaps := flinkCorpus(t)
	snaps["example"] = []string{example}
	// A scan hands records over in batches of at most 1 MiB: these states
	// fill several in each piece it reads.
	generated := filepath.Join(t.TempDir(), "generated")
	mustRun(t, "generate", "--format", "filesystem", "--keys", "3000", "--value-bytes", "2000", "--parallelism", "1", "--output", generated)
	snaps["generated"] = []string{generated}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range snaps {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			// Each reads its own snapshot and writes nothing: side by
			// side they use every core.
			t.Parallel()
			if n := checkSQLEqualsDump(t, snaps[name]); n == 0 {
				t.Errorf("%s has no keyed state", name)
			}
		})
	}
}

// checkSQLEqualsDump compares every keyed state of snap and returns how
// many it compared.
func checkSQLEqualsDump(t *testing.T, snap []string) int {
	// want[operator/state] is dump's rows, as canonical key|namespace|value
	// strings, sorted.
	want := map[string][]string{}
	code, dump, errOut := run(t, append([]string{"dump", "--now", "0"}, snap...)...)
	if code != ExitOK {
		t.Fatalf("dump: exit %d: %s", code, errOut)
	}
	for line := range strings.Lines(dump) {
		var rec map[string]any
		decodeJSON(t, line, &rec)
		id := rec["operator"].(string) + "/" + rec["state"].(string)
		prefix := leaves(rec["key"]) + "|" + leaves(rec["namespace"]) + "|"
		switch v := rec["value"]; rec["kind"] {
		case "list":
			for _, x := range v.([]any) {
				want[id] = append(want[id], prefix+leaves(x))
			}
		case "map":
			for k, x := range v.(map[string]any) {
				want[id] = append(want[id], prefix+keyLeaves(k)+"="+leaves(x))
			}
		default:
			want[id] = append(want[id], prefix+leaves(v))
		}
	}
	states := sqlRows(t, append(snap, "-e", "SELECT operator, state, kind, table_name FROM states WHERE kind <> 'operator'")...)
	var queries []string
	for _, st := range states {
		table, _ := st["table_name"].(string)
		if table == "" {
			t.Fatalf("state %s/%s has no table", st["operator"], st["state"])
		}
		queries = append(queries, "SELECT * FROM "+table)
	}
	// One session runs every table's query: the snapshot is opened once.
	results := sqlSession(t, snap, queries)
	for i, st := range states {
		id := st["operator"].(string) + "/" + st["state"].(string)
		var got []string
		for _, row := range results[i] {
			prefix := leaves(sqlValue(row, "key")) + "|" + leaves(sqlValue(row, "namespace")) + "|"
			if st["kind"] == "map" {
				got = append(got, prefix+leaves(sqlValue(row, "map_key"))+"="+leaves(sqlValue(row, "map_value")))
				continue
			}
			got = append(got, prefix+leaves(sqlValue(row, "value")))
		}
		sort.Strings(got)
		sort.Strings(want[id])
		if len(got) != len(want[id]) {
			t.Errorf("%s: count(*) %d, dump has %d", id, len(got), len(want[id]))
			continue
		}
		for i := range got {
			if got[i] != want[id][i] {
				t.Errorf("%s: row %s\nwant (dump)  %s", id, got[i], want[id][i])
				break
			}
		}
		delete(want, id)
	}
	for id, rows := range want {
		t.Errorf("%s: dump has %d records and SQL no table", id, len(rows))
	}
	return len(states)
}

// A join of two snapshots in SQL finds exactly the keys diff --entries
// reports changed, added or removed, state by state: of a value state,
// a map state (its entries compared as a whole) and states of JSON values.
func TestSQLJoinFindsDiffEntries(t *testing.T) {
	a, b := example, "../testdata/memory/maxp4096.dump"
	code, out, errOut := run(t, "diff", a, b, "--entries", "-o", "json", "--max-keys", "100000")
	if code != ExitUsage {
		t.Fatalf("diff: exit %d: %s", code, errOut)
	}
	var d struct {
		Operators []struct {
			UID  string `json:"uid"`
			Keys []struct {
				State, Change string
				Key           any
			} `json:"keys"`
		} `json:"operators"`
	}
	decodeJSON(t, out, &d)
	want := map[string][]string{}
	for _, op := range d.Operators {
		for _, k := range op.Keys {
			id := op.UID + "/" + k.State
			want[id] = append(want[id], fmt.Sprint(k.Key)+" "+k.Change)
		}
	}
	// What a state's key holds, as one comparable value per key.
	values := map[string]string{
		"word-counter/count":        `SELECT key, value::VARCHAR AS v FROM %s."word-counter"."count"`,
		"word-counter/total-length": `SELECT key, value::VARCHAR AS v FROM %s."word-counter"."total-length"`,
		"word-counter/mean-length":  `SELECT key, value::VARCHAR AS v FROM %s."word-counter"."mean-length"`,
		"word-counter/by-source":    `SELECT key, string_agg(map_key || '=' || map_value, ',' ORDER BY map_key) AS v FROM %s."word-counter"."by-source" GROUP BY key`,
		"rules/user-total":          `SELECT key, value::VARCHAR AS v FROM %s."rules"."user-total"`,
	}
	for id, q := range values {
		join := fmt.Sprintf(`SELECT coalesce(a.key, b.key) AS key,
			CASE WHEN a.key IS NULL THEN 'added' WHEN b.key IS NULL THEN 'removed' ELSE 'changed' END AS change
			FROM (`+q+`) a FULL JOIN (`+q+`) b ON a.key = b.key
			WHERE a.v IS DISTINCT FROM b.v`, "s0", "s1")
		var got []string
		for _, row := range sqlRows(t, a, b, "-e", join) {
			got = append(got, fmt.Sprint(row["key"])+" "+row["change"].(string))
		}
		sort.Strings(got)
		sort.Strings(want[id])
		if len(want[id]) < 10 {
			t.Fatalf("%s: diff reports only %d keys", id, len(want[id]))
		}
		if !slices.Equal(got, want[id]) {
			t.Errorf("%s: SQL join finds %d keys, diff --entries %d:\n%v\nwant\n%v", id, len(got), len(want[id]), got, want[id])
		}
	}
}

// The catalog tables say what inspect -o json says: operators its
// operators and their figures, states their states, key_groups inspect
// --key-groups' rows; and the states' entries add up to their operators'.
func TestSQLCatalogEqualsInspect(t *testing.T) {
	snaps := map[string]string{"example": example}
	for _, e := range []string{"types-hashmap-canonical", "basic-rocksdb-native", "windows-rocksdb-native", "avro-hashmap-canonical", "sql-hashmap-canonical"} {
		snaps[e] = flinkSnapshot(t, "2.3.0", e)
	}
	for name, snap := range snaps {
		t.Run(name, func(t *testing.T) {
			var sum struct {
				CheckpointID json.Number `json:"checkpoint_id"`
				Operators    []struct {
					ID, UID, Name    string
					Parallelism      json.Number
					MaxParallelism   json.Number `json:"max_parallelism"`
					KeyedEntries     json.Number `json:"keyed_entries"`
					KeyedBytes       json.Number `json:"keyed_bytes"`
					OperatorElements json.Number `json:"operator_elements"`
					OperatorBytes    json.Number `json:"operator_bytes"`
				}
			}
			decodeJSON(t, mustRun(t, "inspect", snap, "-o", "json"), &sum)
			var want, got []string
			for _, op := range sum.Operators {
				want = append(want, strings.Join([]string{sum.CheckpointID.String(), op.ID, op.UID, op.Name, op.Parallelism.String(), op.MaxParallelism.String(),
					op.KeyedEntries.String(), op.KeyedBytes.String(), op.OperatorElements.String(), op.OperatorBytes.String()}, " "))
			}
			for _, r := range sqlRows(t, snap, "-e", "SELECT * FROM operators") {
				text := func(k string) string {
					if r[k] == nil {
						return ""
					}
					return fmt.Sprint(r[k])
				}
				got = append(got, strings.Join([]string{text("checkpoint_id"), text("operator_uid_hash"), text("operator_uid"), text("operator_name"),
					text("operator_parallelism"), text("operator_max_parallelism"), text("keyed_entries"), text("keyed_bytes"),
					text("operator_elements"), text("operator_bytes")}, " "))
			}
			if !slices.Equal(got, want) {
				t.Errorf("operators:\n%s\nwant (inspect)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			checkStatesEqualInspect(t, snap)
			checkKeyGroupsEqualInspect(t, snap)
		})
	}
}

func checkStatesEqualInspect(t *testing.T, snap string) {
	var sum struct {
		Operators []struct {
			ID           string
			KeyedEntries json.Number `json:"keyed_entries"`
			KeyedStates  []struct {
				Name, Kind    string
				KeyType       map[string]string `json:"key_type"`
				NamespaceType map[string]string `json:"namespace_type"`
				ValueType     map[string]string `json:"value_type"`
				TTL           *struct {
					TTLMillis json.Number `json:"ttl_ms"`
					Unknown   bool
				}
			} `json:"keyed_states"`
			OperatorStates []struct {
				Name, Mode  string
				ElementType map[string]string `json:"element_type"`
			} `json:"operator_states"`
		}
	}
	decodeJSON(t, mustRun(t, "inspect", snap, "-o", "json"), &sum)
	typeText := func(m map[string]string) string {
		if m["class"] != "" {
			return m["name"] + "(" + m["class"] + ")"
		}
		return m["name"]
	}
	var want []string
	entries := map[string]string{}
	for _, op := range sum.Operators {
		for _, k := range op.KeyedStates {
			ttl := ""
			switch {
			case k.TTL != nil && k.TTL.Unknown:
				ttl = "unknown"
			case k.TTL != nil:
				ttl = k.TTL.TTLMillis.String()
			}
			want = append(want, strings.Join([]string{k.Name, k.Kind, typeText(k.KeyType), typeText(k.NamespaceType), typeText(k.ValueType), ttl}, " "))
		}
		for _, o := range op.OperatorStates {
			want = append(want, strings.Join([]string{o.Name, "operator", o.Mode, typeText(o.ElementType)}, " "))
		}
		if len(op.KeyedStates) > 0 {
			entries[op.ID] = op.KeyedEntries.String()
		}
	}
	var got []string
	for _, r := range sqlRows(t, snap, "-e", "SELECT s.*, o.operator_uid_hash FROM states s JOIN operators o USING (operator)") {
		s := func(k string) string {
			if r[k] == nil {
				return ""
			}
			return fmt.Sprint(r[k])
		}
		if r["kind"] == "operator" {
			got = append(got, strings.Join([]string{s("state"), "operator", s("mode"), s("value_type")}, " "))
			continue
		}
		ttl := s("ttl_ms")
		if ttl == "" && s("ttl") != "" {
			ttl = "unknown"
		}
		got = append(got, strings.Join([]string{s("state"), s("kind"), s("key_type"), s("namespace_type"), s("value_type"), ttl}, " "))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("states:\n%s\nwant (inspect)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range sqlRows(t, snap, "-e", "SELECT o.operator_uid_hash AS id, sum(entries) AS n FROM states s JOIN operators o USING (operator) WHERE kind <> 'operator' GROUP BY ALL") {
		if id := r["id"].(string); fmt.Sprint(r["n"]) != entries[id] {
			t.Errorf("operator %s: states hold %v entries, inspect says %s", id, r["n"], entries[id])
		}
	}
}

func checkKeyGroupsEqualInspect(t *testing.T, snap string) {
	var kg struct {
		Operators []struct {
			ID        string
			KeyGroups []struct {
				KeyGroup json.Number `json:"key_group"`
				Subtask  json.Number
				Entries  json.Number
				Bytes    json.Number
			} `json:"key_groups"`
		}
	}
	decodeJSON(t, mustRun(t, "inspect", snap, "--key-groups", "-o", "json"), &kg)
	var want, got []string
	for _, op := range kg.Operators {
		for _, g := range op.KeyGroups {
			want = append(want, strings.Join([]string{op.ID, g.KeyGroup.String(), g.Subtask.String(), g.Entries.String(), g.Bytes.String()}, " "))
		}
	}
	for _, r := range sqlRows(t, snap, "-e", "SELECT o.operator_uid_hash AS id, k.* FROM key_groups k JOIN operators o USING (operator)") {
		got = append(got, fmt.Sprintf("%v %v %v %v %v", r["id"], r["key_group"], r["subtask"], r["entries"], r["bytes"]))
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("key_groups: %d rows, inspect --key-groups %d:\n%s\nwant\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Without -e, statements come from standard input, each ended by a
// semicolon, their results printed one after another; a statement that
// fails is reported and the next one run, and the exit code is the last
// failure's.
func TestSQLStatementsFromStdin(t *testing.T) {
	var stdout, stderr bytes.Buffer
	root := NewRootCommand(&stdout, &stderr)
	root.SetIn(strings.NewReader("SELECT count(*) AS n\n  FROM \"word-counter\".\"count\";\nSELECT * FROM nope;\n\nSELECT 2 AS two;\n"))
	root.SetArgs([]string{"sql", example, "-o", "csv"})
	err := root.ExecuteContext(context.Background())
	if got := stdout.String(); got != "n\n40\ntwo\n2\n" {
		t.Errorf("stdout %q", got)
	}
	if !strings.Contains(stderr.String(), `nope does not exist`) || !strings.Contains(stderr.String(), "line 1, column 15") {
		t.Errorf("stderr %q", stderr.String())
	}
	var coded *codedError
	if !errors.As(err, &coded) || coded.code != ExitUsage {
		t.Errorf("error %v, want exit code %d", err, ExitUsage)
	}
}

// Flink's values are typed columns by their serializers: POJOs, Rows,
// tuples, Avro records and RowData rows are structs (a RowData's and a
// Row's that keeps its kind with its row_kind first), lists lists, maps maps; a Kryo value is JSON beside an
// undecoded column. (TestSQLEqualsDump checks each row's values.)
func TestSQLFlinkTypedColumns(t *testing.T) {
	checked := map[string]bool{}
	for _, entry := range []string{"types-hashmap-canonical", "sql-hashmap-canonical", "kryojdk-hashmap-canonical"} {
		snap := flinkArgs(t, "2.3.0", entry)
		for _, st := range sqlRows(t, append(snap, "-e", `SELECT regexp_extract(value_type, 'flink:([a-z0-9]+)', 1) AS type, table_name FROM states WHERE kind IN ('value', 'list')`)...) {
			typ, table := st["type"].(string), st["table_name"].(string)
			want, ok := map[string]string{"pojo": "STRUCT(", "row": "STRUCT(f0 ", "rowkind": "STRUCT(row_kind VARCHAR, f0 ", "tuple": "STRUCT(f0 ", "rowdata": "STRUCT(row_kind VARCHAR, f0 ", "avro": "STRUCT(",
				"list": "[]", "map": "MAP(", "kryo5": "JSON", "int": "INTEGER"}[typ]
			if !ok {
				continue
			}
			cols := map[string]string{}
			for _, c := range sqlRows(t, append(snap, "-e", "DESCRIBE "+table)...) {
				cols[c["column_name"].(string)] = c["column_type"].(string)
			}
			got := cols["value"]
			if !strings.HasPrefix(got, want) && !(want == "[]" && strings.HasSuffix(got, want)) {
				t.Errorf("%s %s (%s): value is %s, want %s...", entry, table, typ, got, want)
			}
			if _, has := cols["value_undecoded"]; has != (typ == "pojo" || typ == "kryo5" || typ == "rowdata") {
				t.Errorf("%s %s (%s): value_undecoded column: %v", entry, table, typ, has)
			}
			checked[typ] = true
		}
	}
	for _, typ := range []string{"pojo", "rowkind", "tuple", "rowdata", "avro", "list", "map", "kryo5", "int"} {
		if !checked[typ] {
			t.Errorf("no state of type %s in the corpus entries", typ)
		}
	}
}
