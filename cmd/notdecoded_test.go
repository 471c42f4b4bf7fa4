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
// Flink 1.x writes with Kryo (decoded) and 2.x with a NullableSerializer
// (not decoded yet), next to a String state.
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
		"flink-kryo-decoded-verify-1.20":    {"verify", "--strict", v1},
		"flink-not-decoded-verify-2.3-json": {"verify", v2, "-o", "json"},
		"flink-not-decoded-verify-strict":   {"verify", "--strict", types1},
		"flink-kryo-decoded-dump-1.20":      {"dump", v1, "--state", "order", "--limit", "3", "-q"},
		"flink-not-decoded-dump-kryo-1.20":  {"dump", types1, "--state", "kryo", "--limit", "2", "-q"},
		"flink-not-decoded-dump-2.3-csv":    {"dump", v2, "--state", "order", "--limit", "3", "-q", "-o", "csv"},
		"flink-not-decoded-dump-2.3-table":  {"dump", v2, "--state", "order", "--limit", "3", "-q", "-o", "table"},
		"flink-not-decoded-get-2.3-json":    {"get", v2, "--operator", "keyed", "--state", "order", "--key", "order-0", "-o", "json"},
		"flink-kryo-decoded-get-1.20":       {"get", v1, "--operator", "keyed", "--state", "order", "--key", "order-0"},
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
	dir := filepath.Join(t.TempDir(), "savepoint")
	if err := os.CopyFS(dir, os.DirFS(ordersSavepoints["2.3"])); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, "_metadata")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	// StringSerializer writes the length + 1 as a variable-length int.
	i := bytes.Index(b, []byte("note-162"))
	if i < 1 || b[i-1] != 9 || bytes.Count(b, []byte("note-162")) != 1 {
		t.Fatalf("the savepoint does not hold \"note-162\" once, after its length")
	}
	b[i-1] = 10
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
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
		if !strings.Contains(out, "1 problems:") || !strings.Contains(out, `state "note" key order-18: value does not decode as flink:java.lang.String`) {
			t.Errorf("%v: the damaged value is not the one finding:\n%s", args, out)
		}
		if !strings.Contains(out, "Not decoded: 48 values") {
			t.Errorf("%v: the values that were not decoded are not counted apart:\n%s", args, out)
		}
	}
}
