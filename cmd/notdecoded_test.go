package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ordersSavepoints are canonical savepoints of testenv/flink's orders job,
// written and restored by Flink: a POJO with a List<String> field, which
// Flink 1.x writes with Kryo and 2.x with a NullableSerializer around a
// ListSerializer (both decoded), next to a String state.
var ordersSavepoints = map[string]string{
	"1.20": filepath.Join("..", "testdata", "flink", "1.20.5", "orders-hashmap-canonical", "snapshot", "savepoint-a60fb6-188a40aec901"),
	"2.3":  filepath.Join("..", "testdata", "flink", "2.3.0", "orders-hashmap-canonical", "snapshot", "savepoint-d9d705-9895586480d4"),
}

// A healthy savepoint whose values stateutil does not decode verifies (exit
// 0) with the values counted, fails with --strict (exit 6), and shows the
// values tagged with their class in get and every dump format.
func TestGoldenNotDecoded(t *testing.T) {
	v1, v2 := ordersSavepoints["1.20"], ordersSavepoints["2.3"]
	// The types job's "kryo" state holds a user class under Kryo's
	// FieldSerializer, which writes no field names.
	types1 := filepath.Join("..", "testdata", "flink", "1.20.5", "types-hashmap-canonical", "snapshot", "savepoint-5b5afd-4dc9a1a465e4")
	cases := map[string][]string{
		"flink-pojo-list-verify-1.20":       {"verify", "--strict", v1},
		"flink-pojo-list-verify-2.3-json":   {"verify", v2, "-o", "json"},
		"flink-pojo-list-dump-1.20":         {"dump", v1, "--state", "order", "--limit", "3", "-q"},
		"flink-pojo-list-dump-2.3-table":    {"dump", v2, "--state", "order", "--limit", "3", "-q", "-o", "table"},
		"flink-pojo-list-get-1.20":          {"get", v1, "--operator", "keyed", "--state", "order", "--key", "order-0"},
		"flink-pojo-list-get-2.3-json":      {"get", v2, "--operator", "keyed", "--state", "order", "--key", "order-0", "-o", "json"},
		"flink-not-decoded-verify":          {"verify", types1},
		"flink-not-decoded-verify-json":     {"verify", types1, "-o", "json"},
		"flink-not-decoded-verify-strict":   {"verify", "--strict", types1},
		"flink-not-decoded-dump-kryo-1.20":  {"dump", types1, "--state", "kryo", "--limit", "2", "-q"},
		"flink-not-decoded-dump-kryo-csv":   {"dump", types1, "--state", "kryo", "--limit", "2", "-q", "-o", "csv"},
		"flink-not-decoded-dump-kryo-table": {"dump", types1, "--state", "kryo", "--limit", "2", "-q", "-o", "table"},
		"flink-not-decoded-get-kryo-json":   {"get", types1, "--operator", "keyed", "--state", "kryo", "--key", "obj-0", "-o", "json"},
		"flink-inspect-values-bytes":        {"inspect", v2, "--operator-state", "--values"},
		"help-verify":                       {"verify", "--help"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// Damage is still damage next to values that are not decoded: a String
// value whose length says one character more than it holds fails verify
// (exit 2), and the values that were not decoded are still only counted.
func TestVerifyFlinkDamageNextToNotDecoded(t *testing.T) {
	src := filepath.Join("..", "testdata", "flink", "1.20.5", "types-hashmap-canonical", "snapshot", "savepoint-5b5afd-4dc9a1a465e4")
	dir := filepath.Join(t.TempDir(), "savepoint")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// StringSerializer writes the length + 1 as a variable-length int.
	value := []byte("str-\"162\"\n")
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, value)
		if i < 1 || b[i-1] != byte(len(value)+1) || bytes.Count(b, value) != 1 {
			continue
		}
		b[i-1]++
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		damaged++
	}
	if damaged != 1 {
		t.Fatalf("the savepoint holds %q, after its length, in %d files; want 1", value, damaged)
	}
	for _, strict := range []bool{false, true} {
		args := []string{"verify", dir}
		if strict {
			args = append(args, "--strict")
		}
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), args, &stdout, &stderr)
		if code != ExitCorrupt {
			t.Fatalf("%v: exit %d, want %d (damage)\n%s%s", args, code, ExitCorrupt, stdout.String(), stderr.String())
		}
		out := stdout.String()
		if !strings.Contains(out, "1 problems:") || !strings.Contains(out, `state "string" key obj-18: value does not decode as flink:java.lang.String`) {
			t.Errorf("%v: the damaged value is not the one finding:\n%s", args, out)
		}
		if !strings.Contains(out, "Not decoded: 48 values") {
			t.Errorf("%v: the values that were not decoded are not counted apart:\n%s", args, out)
		}
	}
}
